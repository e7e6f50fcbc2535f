package controlplane

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A master's kube-apiserver as the kube-apiserver operator gives it: its
// installer pod copies the revision's secrets and configmaps from
// openshift-kube-apiserver into
// /etc/kubernetes/static-pod-resources/kube-apiserver-pod-<revision> (the
// pod's resource-dir, mounted at /etc/kubernetes/static-pod-resources) and
// the certificates the cert syncer keeps into kube-apiserver-certs
// (cert-dir, mounted at /etc/kubernetes/static-pod-certs), then writes
// the pod into /etc/kubernetes/manifests.

const (
	// StaticPodResourcesDir is where the installers write on the host.
	StaticPodResourcesDir = "/etc/kubernetes/static-pod-resources"
	// MasterNamespace holds the master kube-apiserver's pod and the
	// objects its installer copies.
	MasterNamespace = "openshift-kube-apiserver"
	// masterResourceMount and masterCertMount are the pod's mount paths.
	masterResourceMount = "/etc/kubernetes/static-pod-resources"
	masterCertMount     = "/etc/kubernetes/static-pod-certs"
)

// ResourceDir says which of the pod's two directories a file is in.
type ResourceDir int

const (
	// RevisionDir is kube-apiserver-pod-<revision>: the revision's copies.
	RevisionDir ResourceDir = iota
	// CertDir is kube-apiserver-certs: the serving certificates and the
	// client CA, which the operator rotates without a new revision.
	CertDir
)

// Resource is one file the master kube-apiserver reads: the key of a
// secret or configmap in MasterNamespace, by the operator's names.
type Resource struct {
	Dir ResourceDir
	// Kind is "secrets" or "configmaps", as the installer names the
	// directories.
	Kind, Name, Key string
	// Bootstrap is the file of the bootstrap's SecretsDir with the same
	// content: the same keys and certificates, so what the bootstrap API
	// signed (service-account tokens) stays valid on the masters.
	Bootstrap string
	// NodeFile is true for etcd's CA bundle and client pair: a rehearsal
	// master has them from its Ignition config (stage 07's etcd render
	// does not put them in the API), so the lab's manifests carry only
	// the others.
	NodeFile bool
}

// Secret is true for a secret's key: written 0600.
func (r Resource) Secret() bool { return r.Kind == "secrets" }

// Rel is the file's path inside its directory.
func (r Resource) Rel() string { return path.Join(r.Kind, r.Name, r.Key) }

// MasterResources are the files the master kube-apiserver names, in the
// order its installer copies them.
func MasterResources() []Resource {
	sec := func(d ResourceDir, name, key, boot string) Resource {
		return Resource{Dir: d, Kind: "secrets", Name: name, Key: key, Bootstrap: boot}
	}
	cm := func(d ResourceDir, name, key, boot string) Resource {
		return Resource{Dir: d, Kind: "configmaps", Name: name, Key: key, Bootstrap: boot}
	}
	etcd := func(r Resource) Resource { r.NodeFile = true; return r }
	return []Resource{
		etcd(cm(RevisionDir, "etcd-serving-ca", "ca-bundle.crt", EtcdCABundle)),
		etcd(sec(RevisionDir, "etcd-client", "tls.crt", EtcdClientCert)),
		etcd(sec(RevisionDir, "etcd-client", "tls.key", EtcdClientKey)),
		cm(RevisionDir, "sa-token-signing-certs", "service-account-001.pub", ServiceAccountPub),
		cm(RevisionDir, "kubelet-serving-ca", "ca-bundle.crt", KubeletSignerCert),
		sec(CertDir, "kubelet-client", "tls.crt", KubeletClientCert),
		sec(CertDir, "kubelet-client", "tls.key", KubeletClientKey),
		cm(CertDir, "client-ca", "ca-bundle.crt", ClientCABundle),
		sec(CertDir, "bound-service-account-signing-key", "service-account.key", ServiceAccountKey),
		sec(CertDir, "internal-loadbalancer-serving-certkey", "tls.crt", LBServerCert),
		sec(CertDir, "internal-loadbalancer-serving-certkey", "tls.key", LBServerKey),
		sec(CertDir, "localhost-serving-cert-certkey", "tls.crt", LocalhostServerCert),
		sec(CertDir, "localhost-serving-cert-certkey", "tls.key", LocalhostServerKey),
		sec(CertDir, "service-network-serving-certkey", "tls.crt", ServiceNetworkServerCert),
		sec(CertDir, "service-network-serving-certkey", "tls.key", ServiceNetworkServerKey),
	}
}

// The kube-apiserver's client pair for the kubelets (logs, exec), which
// the installer gives the masters as secret kubelet-client.
const (
	KubeletClientCert = "kube-apiserver-kubelet-client.crt"
	KubeletClientKey  = "kube-apiserver-kubelet-client.key"
)

// MasterInput is what a master's kube-apiserver depends on. The zero value
// of each field but EtcdServers takes the default.
type MasterInput struct {
	// AdvertiseAddress is the master's IP (the real pod's $HOST_IP).
	AdvertiseAddress string
	// EtcdServers are the etcd members' client URLs, as the operator's
	// endpoint observer gives them: every voting member's (the bootstrap's
	// too until it is removed, after stage 15) and https://localhost:2379.
	EtcdServers []string
	// Revision is the operator's revision (1).
	Revision int
	// ResourcesDir replaces StaticPodResourcesDir on the host.
	ResourcesDir string
	// BindAddress, APIPort, ServiceCIDR, ClusterCIDR, OpenShift and
	// FeatureGates as Input's.
	BindAddress              string
	APIPort                  int
	ServiceCIDR, ClusterCIDR string
	OpenShift                string
	FeatureGates             FeatureGates
}

func (in MasterInput) withDefaults() MasterInput {
	if in.Revision == 0 {
		in.Revision = 1
	}
	if in.ResourcesDir == "" {
		in.ResourcesDir = StaticPodResourcesDir
	}
	if in.BindAddress == "" {
		in.BindAddress = "0.0.0.0"
	}
	if in.APIPort == 0 {
		in.APIPort = APIPort
	}
	if in.ServiceCIDR == "" {
		in.ServiceCIDR = DefaultServiceCIDR
	}
	if in.ClusterCIDR == "" {
		in.ClusterCIDR = DefaultClusterCIDR
	}
	return in
}

// HostDir is where the installer writes dir's files on the host.
func (in MasterInput) HostDir(d ResourceDir) string {
	in = in.withDefaults()
	if d == CertDir {
		return path.Join(in.ResourcesDir, "kube-apiserver-certs")
	}
	return path.Join(in.ResourcesDir, "kube-apiserver-pod-"+strconv.Itoa(in.Revision))
}

// containerPath is where the pod reads r.
func containerPath(r Resource) string {
	if r.Dir == CertDir {
		return path.Join(masterCertMount, r.Rel())
	}
	return path.Join(masterResourceMount, r.Rel())
}

// masterFile is the container path of resource name/key.
func masterFile(name, key string) string {
	for _, r := range MasterResources() {
		if r.Name == name && r.Key == key {
			return containerPath(r)
		}
	}
	panic(fmt.Sprintf("controlplane: no master resource %s/%s", name, key))
}

// MasterKubeAPIServerArgs are a master kube-apiserver's flags, with the
// paths the pod sees: what the operator's config.yaml gives OpenShift's
// binary through --openshift-config (kubeapiserver.go), given to the
// upstream binary directly. Its serving certificates are served for the
// names they carry, as the operator's observed config has them, and, as
// OpenShift's pod, it binds with SO_REUSEADDR so a new revision can start
// while the old one drains.
func MasterKubeAPIServerArgs(in MasterInput) []string {
	in = in.withDefaults()
	f := func(name, key string) string { return masterFile(name, key) }
	p := func(name string) pair { return pair{f(name, "tls.crt"), f(name, "tls.key")} }
	serviceNetwork, localhost, lb := p("service-network-serving-certkey"), p("localhost-serving-cert-certkey"), p("internal-loadbalancer-serving-certkey")
	return kubeAPIServerArgs(apiServerSettings{advertise: in.AdvertiseAddress, bind: in.BindAddress, port: in.APIPort,
		etcdServers: strings.Join(in.EtcdServers, ","), serviceCIDR: in.ServiceCIDR, openshift: in.OpenShift,
		featureGates: in.FeatureGates, extra: []string{"--permit-address-sharing=true"}},
		apiServerFiles{
			etcdCA: f("etcd-serving-ca", "ca-bundle.crt"), etcdClient: p("etcd-client"),
			serviceNetwork: serviceNetwork,
			namedServing:   []string{localhost.sni(), serviceNetwork.sni(), lb.sni()},
			clientCA:       f("client-ca", "ca-bundle.crt"),
			saVerify:       []string{f("sa-token-signing-certs", "service-account-001.pub")},
			saSign:         f("bound-service-account-signing-key", "service-account.key"),
			kubeletCA:      f("kubelet-serving-ca", "ca-bundle.crt"), kubeletPair: p("kubelet-client"),
		})
}

// MasterKubeAPIServerPod is a master's kube-apiserver static pod, as the
// operator's installer writes it into /etc/kubernetes/manifests:
// openshift-kube-apiserver/kube-apiserver (its mirror pod is
// kube-apiserver-<node>), the revision's resource-dir and the cert-dir as
// hostPath volumes, command the program's own name so the kubelet
// stand-in runs the Kubernetes volume's binary. image names what the
// real pod would pull.
func MasterKubeAPIServerPod(in MasterInput, image string) Pod {
	in = in.withDefaults()
	rev := strconv.Itoa(in.Revision)
	ctr := corev1.Container{
		Name: string(KubeAPIServer), Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{string(KubeAPIServer)}, Args: MasterKubeAPIServerArgs(in),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "resource-dir", MountPath: masterResourceMount},
			{Name: "cert-dir", MountPath: masterCertMount},
		},
	}
	hostPath := func(p string) corev1.VolumeSource {
		return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}}
	}
	return Pod{File: "kube-apiserver-pod.yaml", Pod: corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver", Namespace: MasterNamespace,
			Labels:      map[string]string{"app": "openshift-kube-apiserver", "apiserver": "true", "revision": rev},
			Annotations: map[string]string{"kubectl.kubernetes.io/default-container": string(KubeAPIServer)}},
		Spec: corev1.PodSpec{
			HostNetwork: true, PriorityClassName: "system-node-critical", Containers: []corev1.Container{ctr},
			TerminationGracePeriodSeconds: ptr(int64(TerminationGracePeriod)),
			Volumes: []corev1.Volume{
				{Name: "resource-dir", VolumeSource: hostPath(in.HostDir(RevisionDir))},
				{Name: "cert-dir", VolumeSource: hostPath(in.HostDir(CertDir))},
			},
		},
	}}
}
