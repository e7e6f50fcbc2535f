package controlplane

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The flags OpenShift's pods run with, transcribed from the operators'
// own files (not generated from this package): each table says the file
// and branch it was read from. A bootstrap value that is a file names the
// file in the pod's secrets directory (/etc/kubernetes/secrets there,
// SecretsDir here), a master's the path its pod reads.
type upstreamPod struct {
	component Component
	pods      Pods
	release   string
	source    string
	flags     map[string][]string
}

// kasoBootstrap419 is the bootstrap kube-apiserver of OpenShift 4.19:
// openshift/cluster-kube-apiserver-operator release-4.19 (1b48403438c3)
// bindata/assets/config/defaultconfig.yaml apiServerArguments, with
// bindata/bootkube/config/bootstrap-config-overrides.yaml on top (its
// servingInfo and apiServerArguments), pkg/cmd/render/render.go (audit
// policy embedded, the authorization modes of
// pkg/operator/configobservation/node/observe_authorization_mode.go) and
// bindata/bootkube/bootstrap-manifests/kube-apiserver-pod.yaml
// (--advertise-address, --v). etcd-servers is bootkube's ETCD_ENDPOINTS.
func kasoBootstrap419() upstreamPod {
	return upstreamPod{component: KubeAPIServer, pods: OnBootstrap, release: "4.19",
		source: "cluster-kube-apiserver-operator release-4.19 defaultconfig.yaml + bootstrap-config-overrides.yaml",
		flags: map[string][]string{
			"advertise-address": {"$(HOST_IP)"}, "v": {"2"},
			"bind-address": {"0.0.0.0"}, "secure-port": {"6443"}, // servingInfo.bindAddress 0.0.0.0:6443
			"allow-privileged": {"true"}, "anonymous-auth": {"true"},
			"api-audiences":    {"https://kubernetes.default.svc"},
			"audit-log-format": {"json"}, "audit-log-maxbackup": {"10"}, "audit-log-maxsize": {"200"},
			"audit-log-path":     {"/var/log/kube-apiserver/audit.log"},
			"audit-policy-file":  {"openshift.local.audit/policy.yaml"},
			"authorization-mode": {"Scope,SystemMasters,RBAC,Node"},
			"client-ca-file":     {"kube-apiserver-complete-client-ca-bundle.crt"},
			"enable-admission-plugins": {"CertificateApproval,CertificateSigning,CertificateSubjectRestriction,DefaultIngressClass,DefaultStorageClass," +
				"DefaultTolerationSeconds,LimitRanger,MutatingAdmissionWebhook,NamespaceLifecycle,NodeRestriction,OwnerReferencesPermissionEnforcement," +
				"PersistentVolumeClaimResize,PodNodeSelector,PodTolerationRestriction,Priority,ResourceQuota,RuntimeClass,ServiceAccount," +
				"StorageObjectInUseProtection,TaintNodesByCondition,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy," +
				"authorization.openshift.io/RestrictSubjectBindings,authorization.openshift.io/ValidateRoleBindingRestriction," +
				"config.openshift.io/DenyDeleteClusterConfiguration,config.openshift.io/ValidateAPIServer,config.openshift.io/ValidateAuthentication," +
				"config.openshift.io/ValidateConsole,config.openshift.io/ValidateFeatureGate,config.openshift.io/ValidateImage," +
				"config.openshift.io/ValidateOAuth,config.openshift.io/ValidateProject,config.openshift.io/ValidateScheduler," +
				"image.openshift.io/ImagePolicy,network.openshift.io/ExternalIPRanger,network.openshift.io/RestrictedEndpointsAdmission," +
				"quota.openshift.io/ClusterResourceQuota,quota.openshift.io/ValidateClusterResourceQuota,route.openshift.io/IngressAdmission," +
				"scheduling.openshift.io/OriginPodNodeEnvironment,security.openshift.io/DefaultSecurityContextConstraints," +
				"security.openshift.io/SCCExecRestrictions,security.openshift.io/SecurityContextConstraint," +
				"security.openshift.io/ValidateSecurityContextConstraints,storage.openshift.io/CSIInlineVolumeSecurity"},
			"enable-aggregator-routing": {"true"}, "enable-logs-handler": {"false"}, "endpoint-reconciler-type": {"lease"},
			"etcd-cafile":   {"etcd-ca-bundle.crt"},
			"etcd-certfile": {"etcd-client.crt"}, "etcd-keyfile": {"etcd-client.key"},
			"etcd-healthcheck-timeout": {"9s"}, "etcd-readycheck-timeout": {"9s"},
			"etcd-prefix": {"kubernetes.io"}, "etcd-servers": {"https://localhost:2379"},
			"event-ttl":     {"3h"},
			"feature-gates": {"(every gate of the FeatureGate)"},
			"goaway-chance": {"0.001"}, "http2-max-streams-per-connection": {"2000"},
			"kubelet-certificate-authority":   {"kubelet-client-ca-bundle.crt"},
			"kubelet-client-certificate":      {"kube-apiserver-to-kubelet-client.crt"},
			"kubelet-client-key":              {"kube-apiserver-to-kubelet-client.key"},
			"kubelet-preferred-address-types": {"InternalIP"}, "kubelet-read-only-port": {"0"},
			"kubernetes-service-node-port":   {"0"},
			"max-mutating-requests-inflight": {"1000"}, "max-requests-inflight": {"3000"}, "min-request-timeout": {"3600"},
			"proxy-client-cert-file": {"apiserver-proxy.crt"}, "proxy-client-key-file": {"apiserver-proxy.key"},
			"requestheader-allowed-names":        {"kube-apiserver-proxy,system:kube-apiserver-proxy,system:openshift-aggregator"},
			"requestheader-client-ca-file":       {"aggregator-signer.crt"},
			"requestheader-extra-headers-prefix": {"X-Remote-Extra-"}, "requestheader-group-headers": {"X-Remote-Group"},
			"requestheader-username-headers":   {"X-Remote-User"},
			"service-account-issuer":           {"https://kubernetes.default.svc"},
			"service-account-key-file":         {"service-account.pub", "bound-service-account-signing-key.pub"},
			"service-account-lookup":           {"true"},
			"service-account-signing-key-file": {"bound-service-account-signing-key.key"},
			"service-cluster-ip-range":         {"172.30.0.0/16"}, // servicesSubnet, from the Network
			"service-node-port-range":          {"30000-32767"},
			"shutdown-delay-duration":          {"70s"}, "shutdown-send-retry-after": {"true"},
			"storage-backend": {"etcd3"}, "storage-media-type": {"application/vnd.kubernetes.protobuf"},
			"strict-transport-security-directives": {"max-age=31536000,includeSubDomains,preload"},
			"tls-cert-file":                        {"kube-apiserver-service-network-server.crt"},
			"tls-private-key-file":                 {"kube-apiserver-service-network-server.key"},
			"tls-sni-cert-key": {
				"kube-apiserver-service-network-server.crt,kube-apiserver-service-network-server.key:kubernetes,kubernetes.default,kubernetes.default.svc,kubernetes.default.svc.cluster.local",
				"kube-apiserver-localhost-server.crt,kube-apiserver-localhost-server.key:localhost,127.0.0.1,::1",
				"kube-apiserver-lb-server.crt,kube-apiserver-lb-server.key",
				"kube-apiserver-internal-lb-server.crt,kube-apiserver-internal-lb-server.key",
			},
		}}
}

// kasoBootstrap is kasoBootstrap419 for release, which differs where release-4.16 (d0b79035dcec)
// of the same files does: goaway-chance "0", PersistentVolumeLabel among
// the plugins; release-4.17 (84e19b2149ab) has goaway-chance "0" too.
func kasoBootstrap(release string) upstreamPod {
	p := kasoBootstrap419()
	p.release, p.source = release, strings.Replace(p.source, "release-4.19", "release-"+release, 1)
	switch release {
	case "4.16":
		p.flags["goaway-chance"] = []string{"0"}
		p.flags["enable-admission-plugins"] = []string{strings.Replace(p.flags["enable-admission-plugins"][0],
			"PersistentVolumeClaimResize,", "PersistentVolumeClaimResize,PersistentVolumeLabel,", 1)}
	case "4.17":
		p.flags["goaway-chance"] = []string{"0"}
	}
	return p
}

// kasoMaster419 is a master's kube-apiserver of OpenShift 4.19, revision
// paths as its pod sees them: defaultconfig.yaml (release-4.19) with
// bindata/assets/config/config-overrides.yaml (service-account signing),
// the observed named certificates
// (pkg/operator/configobservation/apiserver/observe_apiserver.go) and the
// pod (bindata/assets/kube-apiserver/pod.yaml: --permit-address-sharing).
// etcd-servers and advertise-address are the observers' per master.
func kasoMaster419() upstreamPod {
	p := kasoBootstrap419()
	p.pods, p.source = OnMasters, "cluster-kube-apiserver-operator release-4.19 defaultconfig.yaml + config-overrides.yaml + observed config"
	r, c := masterResourceMount+"/", masterCertMount+"/"
	for k, v := range map[string][]string{
		"advertise-address": {"192.168.126.11"}, "permit-address-sharing": {"true"},
		"etcd-servers":      {"https://192.168.126.11:2379,https://192.168.126.12:2379,https://192.168.126.13:2379"},
		"audit-policy-file": {r + "configmaps/kube-apiserver-audit-policies/policy.yaml"},
		"client-ca-file":    {c + "configmaps/client-ca/ca-bundle.crt"},
		"etcd-cafile":       {r + "configmaps/etcd-serving-ca/ca-bundle.crt"},
		"etcd-certfile":     {r + "secrets/etcd-client/tls.crt"}, "etcd-keyfile": {r + "secrets/etcd-client/tls.key"},
		"kubelet-certificate-authority":    {r + "configmaps/kubelet-serving-ca/ca-bundle.crt"},
		"kubelet-client-certificate":       {c + "secrets/kubelet-client/tls.crt"},
		"kubelet-client-key":               {c + "secrets/kubelet-client/tls.key"},
		"proxy-client-cert-file":           {c + "secrets/aggregator-client/tls.crt"},
		"proxy-client-key-file":            {c + "secrets/aggregator-client/tls.key"},
		"requestheader-client-ca-file":     {c + "configmaps/aggregator-client-ca/ca-bundle.crt"},
		"service-account-key-file":         {r + "configmaps/sa-token-signing-certs", r + "configmaps/bound-sa-token-signing-certs"},
		"service-account-signing-key-file": {c + "secrets/bound-service-account-signing-key/service-account.key"},
		"tls-cert-file":                    {c + "secrets/service-network-serving-certkey/tls.crt"},
		"tls-private-key-file":             {c + "secrets/service-network-serving-certkey/tls.key"},
		"tls-sni-cert-key": {
			c + "secrets/localhost-serving-cert-certkey/tls.crt," + c + "secrets/localhost-serving-cert-certkey/tls.key",
			c + "secrets/service-network-serving-certkey/tls.crt," + c + "secrets/service-network-serving-certkey/tls.key",
			c + "secrets/external-loadbalancer-serving-certkey/tls.crt," + c + "secrets/external-loadbalancer-serving-certkey/tls.key",
			c + "secrets/internal-loadbalancer-serving-certkey/tls.crt," + c + "secrets/internal-loadbalancer-serving-certkey/tls.key",
			r + "secrets/localhost-recovery-serving-certkey/tls.crt," + r + "secrets/localhost-recovery-serving-certkey/tls.key",
		},
	} {
		p.flags[k] = v
	}
	return p
}

// kcmoBootstrap419 is the bootstrap kube-controller-manager of OpenShift
// 4.19: openshift/cluster-kube-controller-manager-operator release-4.19
// (7c4e44698) bindata/assets/config/defaultconfig.yaml extendedArguments
// with bindata/bootkube/config/bootstrap-config-overrides.yaml on top, and
// bindata/bootkube/bootstrap-manifests/kube-controller-manager-pod.yaml
// (--kubeconfig, --v). The leader election is the same on release-4.16
// (b3faac1f4) to release-4.18 (6347fc817).
func kcmoBootstrap419() upstreamPod {
	return upstreamPod{component: KubeControllerManager, pods: OnBootstrap, release: "4.19",
		source: "cluster-kube-controller-manager-operator release-4.19 defaultconfig.yaml + bootstrap-config-overrides.yaml",
		flags: map[string][]string{
			"kubeconfig": {"kubeconfig"}, "v": {"2"},
			"authentication-kubeconfig": {"kubeconfig"}, "authorization-kubeconfig": {"kubeconfig"},
			"enable-dynamic-provisioning": {"true"}, "allocate-node-cidrs": {"false"},
			"use-service-account-credentials":       {"true"},
			"flex-volume-plugin-dir":                {"/etc/kubernetes/kubelet-plugins/volume/exec"},
			"pv-recycler-pod-template-filepath-nfs": {""}, "pv-recycler-pod-template-filepath-hostpath": {""},
			"leader-elect": {"true"}, "leader-elect-retry-period": {"3s"}, "leader-elect-resource-lock": {"leases"},
			"leader-elect-renew-deadline": {"12s"},
			"controllers":                 {"*,-ttl,-bootstrapsigner,-tokencleaner,selinux-warning-controller"},
			"cloud-provider":              {"external"}, "cluster-signing-duration": {"720h"},
			"secure-port": {"10257"}, "cert-dir": {"/var/run/kubernetes"},
			"root-ca-file":                     {"kube-apiserver-complete-server-ca-bundle.crt"},
			"service-account-private-key-file": {"service-account.key"},
			"cluster-signing-cert-file":        {"kubelet-signer.crt"}, "cluster-signing-key-file": {"kubelet-signer.key"},
			"cluster-cidr": {"10.128.0.0/14"}, "service-cluster-ip-range": {"172.30.0.0/16"},
			"kube-api-qps": {"150"}, "kube-api-burst": {"300"},
			"feature-gates": {"(every gate of the FeatureGate)"},
		}}
}

// kcmoMaster419 is a master's kube-controller-manager of OpenShift 4.19:
// defaultconfig.yaml (release-4.19) and bindata/assets/kube-controller-manager/pod.yaml
// (its kubeconfigs and CA flags); the networks are observed from the
// Network, -v=2 is the operator's Normal log level.
func kcmoMaster419() upstreamPod {
	p := kcmoBootstrap419()
	p.pods, p.source = OnMasters, "cluster-kube-controller-manager-operator release-4.19 defaultconfig.yaml + assets/kube-controller-manager/pod.yaml"
	r, c := masterResourceMount+"/", masterCertMount+"/"
	kc := r + "configmaps/controller-manager-kubeconfig/kubeconfig"
	for k, v := range map[string][]string{
		"kubeconfig": {kc}, "authentication-kubeconfig": {kc}, "authorization-kubeconfig": {kc},
		"client-ca-file":                             {c + "configmaps/client-ca/ca-bundle.crt"},
		"requestheader-client-ca-file":               {c + "configmaps/aggregator-client-ca/ca-bundle.crt"},
		"root-ca-file":                               {r + "configmaps/serviceaccount-ca/ca-bundle.crt"},
		"service-account-private-key-file":           {r + "secrets/service-account-private-key/service-account.key"},
		"cluster-signing-cert-file":                  {c + "secrets/csr-signer/tls.crt"},
		"cluster-signing-key-file":                   {c + "secrets/csr-signer/tls.key"},
		"pv-recycler-pod-template-filepath-nfs":      {r + "configmaps/recycler-config/recycler-pod.yaml"},
		"pv-recycler-pod-template-filepath-hostpath": {r + "configmaps/recycler-config/recycler-pod.yaml"},
	} {
		p.flags[k] = v
	}
	return p
}

// ksoBootstrap419 is the bootstrap kube-scheduler's pod, which passes no
// --config: openshift/cluster-kube-scheduler-operator release-4.19
// (bf8cd78f223b) bindata/bootkube/bootstrap-manifests/kube-scheduler-pod.yaml
// (the same on release-4.16, 39dd141c918d, to release-4.18).
func ksoBootstrap419() upstreamPod {
	return upstreamPod{component: KubeScheduler, pods: OnBootstrap, release: "4.19",
		source: "cluster-kube-scheduler-operator release-4.19 bootkube/bootstrap-manifests/kube-scheduler-pod.yaml",
		flags: map[string][]string{
			"kubeconfig": {"kubeconfig"}, "leader-elect": {"true"}, "cert-dir": {"/var/run/kubernetes"},
			"authentication-kubeconfig": {"kubeconfig"}, "authorization-kubeconfig": {"kubeconfig"}, "v": {"2"},
		}}
}

// ksoMaster419 is a master's scheduler: bindata/assets/kube-scheduler/pod.yaml
// and the KubeSchedulerConfiguration of bindata/assets/config/defaultconfig.yaml
// (release-4.19, the same on release-4.16 to release-4.18), its fields as
// the flags that set them.
func ksoMaster419() upstreamPod {
	kc := masterResourceMount + "/configmaps/scheduler-kubeconfig/kubeconfig"
	return upstreamPod{component: KubeScheduler, pods: OnMasters, release: "4.19",
		source: "cluster-kube-scheduler-operator release-4.19 assets/kube-scheduler/pod.yaml + assets/config/defaultconfig.yaml",
		flags: map[string][]string{
			"config": {masterResourceMount + "/configmaps/config/config.yaml"}, "cert-dir": {"/var/run/kubernetes"},
			"authentication-kubeconfig": {kc}, "authorization-kubeconfig": {kc},
			"kubeconfig":                  {kc}, // clientConnection.kubeconfig
			"leader-elect":                {"true"},
			"leader-elect-lease-duration": {"137s"}, "leader-elect-renew-deadline": {"107s"}, "leader-elect-retry-period": {"26s"},
			"leader-elect-resource-namespace": {"openshift-kube-scheduler"}, "leader-elect-resource-lock": {"leases"},
			"profiling": {"false"}, "contention-profiling": {"false"},
			"v": {"2"}, // pkg/operator/targetconfigcontroller: log level Normal
		}}
}

// labAdditions are flags the lab passes that OpenShift's pod does not,
// each at upstream's default value, so a test can move it.
var labAdditions = map[Component]map[Pods][]string{
	KubeScheduler:         {OnBootstrap: {"secure-port"}, OnMasters: {"secure-port"}},
	KubeControllerManager: {OnMasters: {}},
}

// labFlags renders the lab's pod for u's release and normalizes its
// bootstrap paths to file names in the secrets directory.
func labFlags(u upstreamPod) map[string][]string {
	var args []string
	if u.pods == OnBootstrap {
		args = Wanted(u.component, Input{OpenShift: u.release}).Args
	} else {
		op := map[Component]Operand{KubeAPIServer: KubeAPIServerOperand, KubeControllerManager: KubeControllerManagerOperand, KubeScheduler: KubeSchedulerOperand}[u.component]
		args = op.Args(MasterInput{OpenShift: u.release, AdvertiseAddress: "192.168.126.11",
			EtcdServers: []string{"https://192.168.126.11:2379", "https://192.168.126.12:2379", "https://192.168.126.13:2379"}})
	}
	flags := flagValues(args)
	if u.pods == OnBootstrap {
		for k, vs := range flags {
			for i, v := range vs {
				flags[k][i] = strings.ReplaceAll(v, SecretsDir+"/", "")
			}
		}
	}
	return flags
}

// Every flag of OpenShift's pods is the lab's with OpenShift's value, or a
// Difference the pages show says what the lab runs and why; every flag the
// lab passes is OpenShift's or a named addition at upstream's default.
func TestPodsAgainstTheOperatorsConfigs(t *testing.T) {
	t.Parallel()
	for _, u := range []upstreamPod{kasoBootstrap("4.16"), kasoBootstrap("4.17"), kasoBootstrap419(), kasoMaster419(),
		kcmoBootstrap419(), kcmoMaster419(), ksoBootstrap419(), ksoMaster419()} {
		lab := labFlags(u)
		diffs := map[string]bool{}
		for _, d := range Differences(u.component) {
			if d.Pods == u.pods || d.Pods == OnBoth {
				diffs[d.Flag()] = true
			}
		}
		for flag, want := range u.flags {
			if slices.Equal(lab[flag], want) {
				assert.False(t, diffs[flag], "%s %s %s: --%s is OpenShift's (%q), yet a Difference names it", u.source, u.pods, u.release, flag, want)
				continue
			}
			assert.True(t, diffs[flag], "%s (%s, %s): --%s is %q, OpenShift's %q, and no Difference says why", u.source, u.pods, u.release, flag, lab[flag], want)
		}
		for flag := range lab {
			if _, ok := u.flags[flag]; !ok {
				assert.Contains(t, labAdditions[u.component][u.pods], flag, "%s (%s): the lab passes --%s, which OpenShift's pod does not", u.component, u.pods, flag)
			}
		}
	}
}

// The leader election the issue names: the controller manager 12 s / 3 s
// with Kubernetes' 15 s lease on the bootstrap and the masters, the
// bootstrap scheduler Kubernetes' defaults in kube-system, the masters'
// scheduler 137/107/26 s in openshift-kube-scheduler.
func TestLeaderElection(t *testing.T) {
	t.Parallel()
	in := MasterInput{EtcdServers: []string{"https://192.0.2.1:2379"}}
	for name, args := range map[string][]string{
		"bootstrap kcm": KubeControllerManagerArgs(Input{}), "master kcm": KubeControllerManagerOperand.Args(in),
	} {
		f := flagValues(args)
		assert.Equal(t, []string{"12s"}, f["leader-elect-renew-deadline"], name)
		assert.Equal(t, []string{"3s"}, f["leader-elect-retry-period"], name)
		assert.Equal(t, []string{"leases"}, f["leader-elect-resource-lock"], name)
		assert.NotContains(t, f, "leader-elect-lease-duration", "%s: Kubernetes' 15 s", name)
		assert.NotContains(t, f, "leader-elect-resource-namespace", "%s: kube-system", name)
	}
	boot := flagValues(KubeSchedulerArgs(Input{}))
	assert.Equal(t, []string{"true"}, boot["leader-elect"])
	for k := range boot {
		assert.False(t, strings.HasPrefix(k, "leader-elect-"), "the bootstrap scheduler passes no --%s: Kubernetes' defaults", k)
	}
	master := flagValues(KubeSchedulerOperand.Args(in))
	for k, v := range map[string]string{"leader-elect-lease-duration": "137s", "leader-elect-renew-deadline": "107s",
		"leader-elect-retry-period": "26s", "leader-elect-resource-namespace": "openshift-kube-scheduler"} {
		assert.Equal(t, []string{v}, master[k], k)
	}
}

// A Difference names a setting once per pod, and its flag is one the
// operators' tables know, so the pages never list a setting nobody sets.
func TestDifferencesNameOperatorSettings(t *testing.T) {
	t.Parallel()
	known := map[Component]map[string]bool{}
	for _, u := range []upstreamPod{kasoBootstrap419(), kasoMaster419(), kcmoBootstrap419(), kcmoMaster419(), ksoBootstrap419(), ksoMaster419()} {
		if known[u.component] == nil {
			known[u.component] = map[string]bool{}
		}
		for f := range u.flags {
			known[u.component][f] = true
		}
	}
	for _, c := range Components() {
		seen := map[string]bool{}
		for _, d := range Differences(c) {
			key := string(d.Pods) + " " + d.Setting
			assert.False(t, seen[key], "%s: %s twice", c, key)
			seen[key] = true
			require.NotEmpty(t, d.Why, "%s %s", c, d.Setting)
			if f := d.Flag(); f != "" {
				assert.True(t, known[c][f], "%s: Difference %s is no flag of OpenShift's pods", c, d.Setting)
			}
		}
	}
	assert.Equal(t, "bound-service-account-signing-key.key", path.Base(kasoBootstrap419().flags["service-account-signing-key-file"][0]))
}
