package controlplane

import "strings"

// Where a rehearsal's control plane is not OpenShift's: each of
// OpenShift's settings the lab runs otherwise, with what it runs and
// why. The stage pages show these tables (docs/stages_test.go keeps them
// equal), and the unit tests hold the rendered flags to the operators'
// own configs: a setting of theirs the pods do not carry with their value
// must be one of these.

// Pods says which of a component's pods a Difference is about.
type Pods string

// The pods: the bootstrap's (stages 08-10, run in stage 13), the masters'
// (their installers' revision 1), or both.
const (
	OnBootstrap Pods = "bootstrap"
	OnMasters   Pods = "masters"
	OnBoth      Pods = "bootstrap and masters"
)

// Difference is one of OpenShift's settings the lab runs otherwise.
type Difference struct {
	Pods Pods
	// Setting is the flag ("--audit-policy-file") or the config field
	// OpenShift sets it with.
	Setting string
	// OpenShift is its value there, the Lab what the lab's pod runs.
	OpenShift, Lab string
	Why            string
}

// Flag is the flag name Difference d is about, without the dashes; ""
// when d is about something else than a flag.
func (d Difference) Flag() string {
	if !strings.HasPrefix(d.Setting, "--") {
		return ""
	}
	return strings.TrimPrefix(d.Setting, "--")
}

// OpenShiftOnly are the kube-apiserver's authorizers and admission
// plugins that only OpenShift's kube-apiserver has, with what each does
// on a real cluster: KASO defaultconfig.yaml's authorization-mode (from
// release-4.19 node.AddAuthorizationModes) and enable-admission-plugins.
// The lab passes none of them: the release's upstream binary refuses an
// authorizer or plugin it does not know.
func OpenShiftOnly() [][2]string {
	return [][2]string{
		{"authorizer Scope", "limits what a request with a scoped OAuth token (user:info, user:check-access, role:...) may do, before RBAC is asked"},
		{"authorizer SystemMasters", "allows everything to the group system:masters; upstream's kube-apiserver grants that group everything before any authorizer, so the lab's admin is the same superuser"},
		{"authorizer MinimumKubeletVersion", "(4.19 on, when the gate is on) refuses a node whose kubelet is older than the APIServer config's minimum, before Node"},
		{"authorization.openshift.io/RestrictSubjectBindings", "refuses a RoleBinding whose subjects a RoleBindingRestriction of the namespace does not allow"},
		{"authorization.openshift.io/ValidateRoleBindingRestriction", "validates RoleBindingRestriction objects"},
		{"config.openshift.io/DenyDeleteClusterConfiguration", "refuses deleting the cluster-scoped config.openshift.io singletons (the cluster's APIServer, Network, ... named cluster)"},
		{"config.openshift.io/ValidateAPIServer, ValidateAuthentication, ValidateConsole, ValidateFeatureGate, ValidateImage, ValidateOAuth, ValidateProject, ValidateScheduler", "validate the config.openshift.io objects beyond their schema (ValidateFeatureGate refuses turning a feature set off again)"},
		{"image.openshift.io/ImagePolicy", "resolves image references of pods to digests and applies the cluster's image policy"},
		{"network.openshift.io/ExternalIPRanger", "refuses a Service's externalIPs outside the Network config's allowed ranges"},
		{"network.openshift.io/RestrictedEndpointsAdmission", "refuses Endpoints into the service and pod networks (restrictedCIDRs) from users who may not"},
		{"quota.openshift.io/ClusterResourceQuota, ValidateClusterResourceQuota", "enforce quotas that span several namespaces"},
		{"route.openshift.io/IngressAdmission", "checks who may set a Route's or Ingress's host"},
		{"scheduling.openshift.io/OriginPodNodeEnvironment", "puts a project's node selector (openshift.io/node-selector) on its pods"},
		{"security.openshift.io/SecurityContextConstraint, DefaultSecurityContextConstraints, SCCExecRestrictions, ValidateSecurityContextConstraints", "admit each pod under a SecurityContextConstraints its user or service account may use (and annotate it with the SCC), refuse exec into pods the user could not create, and keep the default SCCs"},
		{"storage.openshift.io/CSIInlineVolumeSecurity", "refuses CSI inline volumes of drivers whose security profile the namespace's pod security level does not allow"},
		{"--openshift-config", "the KubeAPIServerConfig file OpenShift's kube-apiserver reads its settings from; the upstream binary has no such flag, so the lab passes the settings as flags"},
	}
}

// Differences are component c's settings the lab runs otherwise than
// OpenShift, for the releases bootlab knows.
func Differences(c Component) []Difference {
	switch c {
	case KubeAPIServer:
		return apiServerDifferences()
	case KubeControllerManager:
		return controllerManagerDifferences()
	}
	return schedulerDifferences()
}

func apiServerDifferences() []Difference {
	noFile := "the lab's PKI (lab/probe) issues no "
	return []Difference{
		{OnBootstrap, "the secrets' mount", "/etc/kubernetes/secrets", SecretsDir,
			"the kubelet stand-in runs the program on the node, not in a container: the pod mounts the directory at its own path"},
		{OnBoth, "--authorization-mode", "Scope,SystemMasters,RBAC,Node", "RBAC,Node",
			"Scope and SystemMasters (and MinimumKubeletVersion) are OpenShift's own authorizers; see the list below"},
		{OnBoth, "--enable-admission-plugins", "the upstream plugins and its openshift.io ones", "the upstream plugins only",
			"the openshift.io plugins are OpenShift's own; see the list below"},
		{OnBoth, "admission.pluginConfig", "PodSecurity (enforce restricted when OpenShiftPodSecurityAdmission is on), ExternalIPRanger, RestrictedEndpointsAdmission",
			"no --admission-control-config-file: upstream's PodSecurity defaults (privileged)",
			"the settings need a file the rehearsal's renders do not write yet; the other two plugins are OpenShift's"},
		{OnBoth, "--audit-policy-file", "the Default audit profile's policy (bootstrap: embedded in the config)", "not passed: no audit log",
			"the policy needs a file the rehearsal's renders do not write yet; without one upstream's kube-apiserver records nothing"},
		{OnBoth, "--audit-log-path", "/var/log/kube-apiserver/audit.log (json, 10 backups of 200 MB)", "not passed", "no policy: see --audit-policy-file"},
		{OnBoth, "--audit-log-format", "json", "not passed", "no policy: see --audit-policy-file"},
		{OnBoth, "--audit-log-maxbackup", "10", "not passed", "no policy: see --audit-policy-file"},
		{OnBoth, "--audit-log-maxsize", "200", "not passed", "no policy: see --audit-policy-file"},
		{OnBoth, "--feature-gates", "every gate of the FeatureGate, OpenShift's own among them", "the gates the release's Kubernetes knows and lets be set so (masters: read from the API's FeatureGate, as the operator's feature-gate accessor does)",
			"upstream's kube-apiserver refuses a gate it does not know or one locked to the other value"},
		{OnBootstrap, "--service-account-signing-key-file", "bound-service-account-signing-key.key (the render makes the pair if tls/ has none)", "service-account.key",
			"the rehearsal's render makes no bound pair: the installer's service-account pair signs and verifies the tokens, on the bootstrap and the masters"},
		{OnMasters, "secret bound-service-account-signing-key", "the operator's own key pair", "the installer's service-account.key",
			"see --service-account-signing-key-file: tokens the bootstrap signed stay valid on the masters"},
		{OnBoth, "--service-account-key-file", "service-account.pub and bound-service-account-signing-key.pub", "service-account.pub",
			"see --service-account-signing-key-file"},
		{OnBoth, "--proxy-client-cert-file", "apiserver-proxy.crt (the aggregator's client)", "not passed", noFile + "aggregator signer or proxy client pair, and no aggregated API server runs in a rehearsal"},
		{OnBoth, "--proxy-client-key-file", "apiserver-proxy.key", "not passed", "see --proxy-client-cert-file"},
		{OnBoth, "--requestheader-client-ca-file", "aggregator-signer.crt", "not passed", "see --proxy-client-cert-file"},
		{OnBoth, "--requestheader-allowed-names", "kube-apiserver-proxy, system:kube-apiserver-proxy, system:openshift-aggregator", "not passed", "see --proxy-client-cert-file"},
		{OnBoth, "--requestheader-extra-headers-prefix", "X-Remote-Extra-", "not passed", "see --proxy-client-cert-file"},
		{OnBoth, "--requestheader-group-headers", "X-Remote-Group", "not passed", "see --proxy-client-cert-file"},
		{OnBoth, "--requestheader-username-headers", "X-Remote-User", "not passed", "see --proxy-client-cert-file"},
		{OnBoth, "--tls-sni-cert-key", "separate load balancer pairs for api (external) and api-int (internal); on the masters also a localhost-recovery pair",
			"one load balancer pair for api and api-int", noFile + "separate internal load balancer pair or recovery pair"},
		{OnBootstrap, "--kubelet-certificate-authority", "kubelet-client-ca-bundle.crt", KubeletSignerCert,
			"the lab's name for the signer of the kubelets' certificates (the controller manager's csr signer)"},
		{OnBootstrap, "--kubelet-client-certificate", "kube-apiserver-to-kubelet-client.crt", KubeletClientCert, "the lab PKI's name for the same client"},
		{OnBootstrap, "--kubelet-client-key", "kube-apiserver-to-kubelet-client.key", KubeletClientKey, "the lab PKI's name for the same client"},
		{OnBoth, "servingInfo.bindNetwork", "tcp4", "no flag: --bind-address=0.0.0.0 listens on IPv4 alone the same", "upstream's kube-apiserver has no such flag"},
		{OnBoth, "terminationGracePeriodSeconds", "135", "135 in the pod; the kubelet stand-in sends SIGKILL 10 s after SIGTERM",
			"the stand-in stops every pod so (internal/agent/kubelet); with --shutdown-delay-duration=" + ShutdownDelay + " the stopping kube-apiserver serves, /readyz failing, until then"},
		{OnBoth, "containers", "setup (init: the audit directory), kube-apiserver-insecure-readyz; on the masters also the cert syncers, the cert regeneration controller, check-endpoints and watch-termination",
			"kube-apiserver alone", "the others are OpenShift programs a rehearsal has not"},
	}
}

func controllerManagerDifferences() []Difference {
	notPassed := "not passed: upstream's default"
	why := "a setting of OpenShift's config the rehearsal's pod does not carry yet (issue 54 changed the leader election only)"
	return []Difference{
		{OnBootstrap, "the secrets' mount", "/etc/kubernetes/secrets", SecretsDir,
			"the kubelet stand-in runs the program on the node, not in a container: the pod mounts the directory at its own path"},
		{OnBootstrap, "--root-ca-file", "kube-apiserver-complete-server-ca-bundle.crt", RootCA, "the lab CA signed every serving certificate of the API"},
		{OnBoth, "--feature-gates", "every gate of the FeatureGate", "the gates the release's Kubernetes knows (masters: read from the API's FeatureGate)",
			"as the kube-apiserver's"},
		{OnBoth, "--controllers", "*,-ttl,-bootstrapsigner,-tokencleaner (4.19 on also selinux-warning-controller)", notPassed, why},
		{OnBoth, "--cluster-signing-duration", "720h", notPassed + " (a year)", why},
		{OnBoth, "--kube-api-qps", "150", notPassed + " (20)", why},
		{OnBoth, "--kube-api-burst", "300", notPassed + " (30)", why},
		{OnBoth, "--cloud-provider", "external", notPassed, why},
		{OnBoth, "--allocate-node-cidrs", "false", notPassed + " (false)", why},
		{OnBoth, "--enable-dynamic-provisioning", "true", notPassed + " (true)", why},
		{OnBoth, "--flex-volume-plugin-dir", "/etc/kubernetes/kubelet-plugins/volume/exec", notPassed, why},
		{OnBoth, "--pv-recycler-pod-template-filepath-nfs", "bootstrap \"\"; masters the recycler-config configmap's pod", notPassed, why},
		{OnBoth, "--pv-recycler-pod-template-filepath-hostpath", "bootstrap \"\"; masters the recycler-config configmap's pod", notPassed, why},
		{OnBoth, "--cert-dir", "/var/run/kubernetes", "not passed: its serving certificate stays in memory", "the program runs on the node, where the pod's directory is not its own"},
		{OnMasters, "--client-ca-file", "the client-ca configmap's bundle", "not passed: read from the API's kube-system/extension-apiserver-authentication, as upstream does",
			"the same CA either way (the kube-apiserver publishes its --client-ca-file there)"},
		{OnMasters, "--requestheader-client-ca-file", "the aggregator-client-ca configmap's bundle", "not passed", "the lab's PKI issues no aggregator signer (stage 08's page)"},
		{OnBoth, "containers", "cluster-policy-controller (bootstrap: in the pod, not run; masters also the cert syncer and recovery controller)",
			"kube-controller-manager alone", "the others are OpenShift programs a rehearsal has not"},
	}
}

func schedulerDifferences() []Difference {
	return []Difference{
		{OnBootstrap, "the secrets' mount", "/etc/kubernetes/secrets", SecretsDir,
			"the kubelet stand-in runs the program on the node, not in a container: the pod mounts the directory at its own path"},
		{OnBoth, "--cert-dir", "/var/run/kubernetes", "not passed: its serving certificate stays in memory", "the program runs on the node, where the pod's directory is not its own"},
		{OnMasters, "--config", "the KubeSchedulerConfiguration of configmap config (clientConnection, leaderElection, profiling off)",
			"the same settings as flags (--kubeconfig, --leader-elect-*, --profiling=false, --contention-profiling=false)",
			"the kubelet stand-in maps the paths of a pod's flags to the node's, not the paths inside a config file"},
		{OnMasters, "containers", "the cert syncer", "kube-scheduler alone", "an OpenShift program a rehearsal has not"},
	}
}
