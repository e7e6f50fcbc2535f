package controlplane

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Where the bootstrap control plane's pods read their files on the node,
// as OpenShift lays them out: cluster-bootstrap copies /opt/openshift/tls/*
// and auth/kubeconfig into SecretsDir before it starts the pods; stages
// 08-10 copy the operands' configs into ConfigsDir.
const (
	SecretsDir = "/etc/kubernetes/bootstrap-secrets"
	ConfigsDir = "/etc/kubernetes/bootstrap-configs"
)

// The files of SecretsDir the pods name, by the installer's names in
// /opt/openshift/tls (and auth/kubeconfig).
const (
	// RootCA is the lab CA: it signed the API's serving certificates.
	RootCA = "root-ca.crt"
	// ClientCABundle verifies client certificates (the admin's, the
	// kubeconfigs in auth/).
	ClientCABundle = "kube-apiserver-complete-client-ca-bundle.crt"
	// EtcdCABundle, EtcdClientCert and EtcdClientKey are stage 07's: the
	// etcd render's CA bundle and client pair.
	EtcdCABundle   = "etcd-ca-bundle.crt"
	EtcdClientCert = "etcd-client.crt"
	EtcdClientKey  = "etcd-client.key"
	// ServiceAccountKey signs service-account tokens; ServiceAccountPub
	// verifies them.
	ServiceAccountKey = "service-account.key"
	ServiceAccountPub = "service-account.pub"
	// LBServerCert is the serving pair for api and api-int (what the load
	// balancer passes through); LocalhostServerCert for localhost and
	// 127.0.0.1; ServiceNetworkServerCert for kubernetes.default.svc and the
	// service IP.
	LBServerCert             = "kube-apiserver-lb-server.crt"
	LBServerKey              = "kube-apiserver-lb-server.key"
	LocalhostServerCert      = "kube-apiserver-localhost-server.crt"
	LocalhostServerKey       = "kube-apiserver-localhost-server.key"
	ServiceNetworkServerCert = "kube-apiserver-service-network-server.crt"
	ServiceNetworkServerKey  = "kube-apiserver-service-network-server.key"
	// Kubeconfig is auth/kubeconfig (the admin's, system:masters), as
	// cluster-bootstrap copies it.
	Kubeconfig = "kubeconfig"
	// KubeletSignerCert and KubeletSignerKey are the controller manager's
	// cluster signer (OpenShift's kubelet-signer): it signs the kubelets'
	// approved CSRs, and ClientCABundle carries its certificate so the API
	// trusts what it signs.
	KubeletSignerCert = "kubelet-signer.crt"
	KubeletSignerKey  = "kubelet-signer.key"
)

// Defaults of a lab's control plane: OpenShift's service network and
// cluster network, and the ports the real pods serve on.
const (
	APIPort                = 6443
	ControllerManagerPort  = 10257
	SchedulerPort          = 10259
	EtcdServers            = "https://localhost:2379"
	DefaultServiceCIDR     = "172.30.0.0/16"
	DefaultClusterCIDR     = "10.128.0.0/14"
	ServiceAccountIssuer   = "https://kubernetes.default.svc"
	controlPlaneLabel      = "openshift.io/control-plane"
	bootstrapSecretsVolume = "secrets"
	bootstrapConfigsVolume = "config"
)

// The controller manager's leader election, on the bootstrap and the
// masters: the kube-controller-manager operator's (KCMO)
// bindata/assets/config/defaultconfig.yaml, release-4.16 (b3faac1f4891)
// to release-4.19 (7c4e44698b60), sets the renew deadline and retry period and a Lease lock, and no lease
// duration, so Kubernetes' 15 s.
const (
	ControllerManagerRenewDeadline = "12s"
	ControllerManagerRetryPeriod   = "3s"
)

// Kubernetes' own leader election defaults (component-base's
// RecommendedDefaultLeaderElectionConfiguration): what the bootstrap
// scheduler runs with, its pod passing no --config (KSO
// bindata/bootkube/bootstrap-manifests/kube-scheduler-pod.yaml,
// release-4.16 39dd141c918d to release-4.19 bf8cd78f223b), its lock in
// kube-system; the lease
// duration is the controller manager's too.
const (
	KubernetesLeaseDuration = "15s"
	KubernetesRenewDeadline = "10s"
	KubernetesRetryPeriod   = "2s"
)

// The masters' scheduler's leader election: the kube-scheduler operator's
// (KSO) bindata/assets/config/defaultconfig.yaml KubeSchedulerConfiguration,
// release-4.16 (39dd141c918d) to release-4.19 (bf8cd78f223b), its lock in the operand's namespace
// (library-go's defaults for OpenShift's own components).
const (
	SchedulerLeaseDuration = "137s"
	SchedulerRenewDeadline = "107s"
	SchedulerRetryPeriod   = "26s"
)

// Input is what the pods depend on. The zero value of each field but
// AdvertiseAddress takes the default; tests move the directories and
// ports to run the real binaries as a user on loopback.
type Input struct {
	// AdvertiseAddress is the node's IP, the API's address for the cluster;
	// empty gives --advertise-address=$(HOST_IP), as OpenShift's pod: the
	// kubelet fills HOST_IP from the downward API (status.hostIP). Left to
	// itself kube-apiserver takes the address of the default route, which a
	// node on an isolated network has not: it exits.
	AdvertiseAddress string
	// BindAddress is what the API listens on (0.0.0.0).
	BindAddress string
	// SecretsDir replaces SecretsDir in every path.
	SecretsDir string
	// EtcdServers is https://localhost:2379.
	EtcdServers string
	// ServiceCIDR and ClusterCIDR are the cluster's Network
	// (ParseNetwork); unset, OpenShift's defaults.
	ServiceCIDR, ClusterCIDR string
	// APIPort, ControllerManagerPort and SchedulerPort are the secure ports.
	APIPort, ControllerManagerPort, SchedulerPort int
	// OpenShift is the release's version (the render's --payload-version):
	// what the kube-apiserver operator's config says differs by release,
	// and the release's Kubernetes knows its own feature gates. Empty
	// takes the newest release's values and passes no feature gates.
	OpenShift string
	// FeatureGates are the rendered FeatureGate's gates for the release
	// (ParseFeatureGate).
	FeatureGates FeatureGates
}

func (in Input) withDefaults() Input {
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&in.BindAddress, "0.0.0.0")
	def(&in.SecretsDir, SecretsDir)
	def(&in.EtcdServers, EtcdServers)
	def(&in.ServiceCIDR, DefaultServiceCIDR)
	def(&in.ClusterCIDR, DefaultClusterCIDR)
	for _, p := range []struct {
		port *int
		d    int
	}{{&in.APIPort, APIPort}, {&in.ControllerManagerPort, ControllerManagerPort}, {&in.SchedulerPort, SchedulerPort}} {
		if *p.port == 0 {
			*p.port = p.d
		}
	}
	return in
}

func (in Input) secret(name string) string { return in.SecretsDir + "/" + name }

// KubeAPIServerArgs are the bootstrap kube-apiserver's flags: what
// OpenShift's pod reads from its --openshift-config file (kubeapiserver.go),
// given to the upstream binary directly, with the files of SecretsDir.
func KubeAPIServerArgs(in Input) []string {
	in = in.withDefaults()
	s := in.secret
	advertise := in.AdvertiseAddress
	if advertise == "" {
		advertise = "$(" + HostIPEnv + ")"
	}
	serviceNetwork := pair{s(ServiceNetworkServerCert), s(ServiceNetworkServerKey)}
	localhost := pair{s(LocalhostServerCert), s(LocalhostServerKey)}
	lb := pair{s(LBServerCert), s(LBServerKey)}
	return kubeAPIServerArgs(apiServerSettings{advertise: advertise, bind: in.BindAddress, port: in.APIPort,
		etcdServers: in.EtcdServers, serviceCIDR: in.ServiceCIDR, openshift: in.OpenShift, featureGates: in.FeatureGates},
		apiServerFiles{
			etcdCA: s(EtcdCABundle), etcdClient: pair{s(EtcdClientCert), s(EtcdClientKey)},
			serviceNetwork: serviceNetwork,
			namedServing:   []string{serviceNetwork.sni(serviceNetworkNames...), localhost.sni(localhostNames...), lb.sni()},
			clientCA:       s(ClientCABundle),
			saVerify:       []string{s(ServiceAccountPub)}, saSign: s(ServiceAccountKey),
			kubeletCA: s(KubeletSignerCert), kubeletPair: pair{s(KubeletClientCert), s(KubeletClientKey)},
		})
}

// KubeControllerManagerArgs are the bootstrap kube-controller-manager's
// flags (OpenShift's pod reads most of them from --openshift-config): the
// operator's leader election, the feature gates Kubernetes knows.
func KubeControllerManagerArgs(in Input) []string {
	in = in.withDefaults()
	s := in.secret
	args := append(componentArgs(s, in.ControllerManagerPort), controllerManagerLeaderElection()...)
	if gates := KubernetesFeatureGates(in.FeatureGates, in.OpenShift); len(gates) > 0 {
		args = append(args, "--feature-gates="+strings.Join(gates, ","))
	}
	return append(args,
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+s(ServiceAccountKey),
		"--root-ca-file="+s(RootCA),
		"--cluster-signing-cert-file="+s(KubeletSignerCert),
		"--cluster-signing-key-file="+s(KubeletSignerKey),
		"--cluster-cidr="+in.ClusterCIDR,
		"--service-cluster-ip-range="+in.ServiceCIDR,
		"--v=2",
	)
}

// KubeSchedulerArgs are the bootstrap kube-scheduler's flags: as
// OpenShift's pod, leader election on with Kubernetes' defaults.
func KubeSchedulerArgs(in Input) []string {
	in = in.withDefaults()
	s := in.secret
	return append(componentArgs(s, in.SchedulerPort), "--leader-elect=true", "--v=2")
}

// controllerManagerLeaderElection are the controller manager's leader
// election flags, the bootstrap's and the masters'.
func controllerManagerLeaderElection() []string {
	return []string{
		"--leader-elect=true",
		"--leader-elect-resource-lock=leases",
		"--leader-elect-renew-deadline=" + ControllerManagerRenewDeadline,
		"--leader-elect-retry-period=" + ControllerManagerRetryPeriod,
	}
}

// HostIPEnv is the kube-apiserver container's variable for the node's
// IP, from the downward API (status.hostIP), as in OpenShift's pod.
const HostIPEnv = "HOST_IP"

// Pod is one bootstrap control-plane pod and the file it is written to
// in bootstrap-manifests/.
type Pod struct {
	File string
	Pod  corev1.Pod
}

// Component names one of the three pods.
type Component string

// The bootstrap control plane's components, by their programs' names.
const (
	KubeAPIServer         Component = "kube-apiserver"
	KubeControllerManager Component = "kube-controller-manager"
	KubeScheduler         Component = "kube-scheduler"
)

// Components lists them in the order stages 08-10 render them.
func Components() []Component {
	return []Component{KubeAPIServer, KubeControllerManager, KubeScheduler}
}

// Want is what a component's pod must be: where OpenShift puts it, and
// the flags whose values the lab's PKI and layout decide.
type Want struct {
	File, Namespace, Name, Container string
	Args                             []string
}

// Wanted says what each component's pod is, for in.
func Wanted(c Component, in Input) Want {
	switch c {
	case KubeAPIServer:
		return Want{File: "kube-apiserver-pod.yaml", Namespace: "openshift-kube-apiserver", Name: "bootstrap-kube-apiserver",
			Container: string(c), Args: KubeAPIServerArgs(in)}
	case KubeControllerManager:
		return Want{File: "kube-controller-manager-pod.yaml", Namespace: "kube-system", Name: "bootstrap-kube-controller-manager",
			Container: string(c), Args: KubeControllerManagerArgs(in)}
	default:
		return Want{File: "kube-scheduler-pod.yaml", Namespace: "kube-system", Name: "bootstrap-kube-scheduler",
			Container: string(c), Args: KubeSchedulerArgs(in)}
	}
}

// BootstrapPod is component c's static pod: host network, the bootstrap
// secrets and configs mounted where the operands read them, command the
// program's own name so the kubelet stand-in runs the binary the node has
// on PATH (the Kubernetes volume's link to hyperkube). image names what the
// real pod would pull.
func BootstrapPod(c Component, in Input, image string) Pod {
	in = in.withDefaults()
	w := Wanted(c, in)
	ctr := corev1.Container{
		Name: w.Container, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{string(c)}, Args: w.Args,
		VolumeMounts: []corev1.VolumeMount{
			{Name: bootstrapSecretsVolume, MountPath: in.SecretsDir},
			{Name: bootstrapConfigsVolume, MountPath: ConfigsDir},
		},
	}
	var grace *int64
	if c == KubeAPIServer {
		ctr.Env = []corev1.EnvVar{{Name: HostIPEnv, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.hostIP"}}}}
		grace = ptr(int64(TerminationGracePeriod))
	}
	return Pod{File: w.File, Pod: corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: map[string]string{controlPlaneLabel: "true"}},
		Spec: corev1.PodSpec{
			HostNetwork: true, PriorityClassName: "system-node-critical", Containers: []corev1.Container{ctr},
			TerminationGracePeriodSeconds: grace,
			Volumes: []corev1.Volume{
				{Name: bootstrapSecretsVolume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: in.SecretsDir}}},
				{Name: bootstrapConfigsVolume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: ConfigsDir}}},
			},
		},
	}}
}

func ptr[T any](v T) *T { return &v }

// CommandLine is the program and arguments a container runs.
func CommandLine(ctr corev1.Container) []string {
	return append(append([]string(nil), ctr.Command...), ctr.Args...)
}

// flagValues maps each --flag=value of args to its values, in order.
func flagValues(args []string) map[string][]string {
	out := map[string][]string{}
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		out[k] = append(out[k], v)
	}
	return out
}

// componentArgs are the flags the controller manager and the scheduler
// share: their kubeconfig, for the API and for its delegated
// authentication and authorization, and the secure port (on all
// addresses, as OpenShift's).
func componentArgs(s func(string) string, port int) []string {
	return []string{
		"--kubeconfig=" + s(Kubeconfig),
		"--authentication-kubeconfig=" + s(Kubeconfig),
		"--authorization-kubeconfig=" + s(Kubeconfig),
		"--secure-port=" + strconv.Itoa(port),
	}
}
