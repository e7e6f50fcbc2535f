package controlplane

import (
	"path"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The masters' controller manager and scheduler, as their operators'
// installers give them: like the kube-apiserver's (master.go), each
// installer copies its revision's objects of its own namespace into
// /etc/kubernetes/static-pod-resources/<operand>-pod-<revision> and
// <operand>-certs and writes the pod into /etc/kubernetes/manifests. Each
// talks to its own master's kube-apiserver at localhost:6443 with a
// kubeconfig that names a client pair, as OpenShift's
// controller-manager-kubeconfig and scheduler-kubeconfig do.

// The operands' namespaces, as OpenShift's operators name them.
const (
	ControllerManagerNamespace = "openshift-kube-controller-manager"
	SchedulerNamespace         = "openshift-kube-scheduler"
)

// Operand is one master control-plane pod: the program, its namespace,
// the files its installer copies and the pod that reads them.
type Operand struct {
	Component Component
	// Namespace holds the pod and the objects its installer copies.
	Namespace string
	// PodName is the static pod's name (its mirror pod is
	// <PodName>-<node>), as cluster-bootstrap's required pods name it.
	PodName string
	// File is the pod's file in the manifests directory.
	File string
}

// KubeAPIServerOperand, KubeControllerManagerOperand and
// KubeSchedulerOperand are the three master pods.
var (
	KubeAPIServerOperand = Operand{Component: KubeAPIServer, Namespace: MasterNamespace,
		PodName: "kube-apiserver", File: "kube-apiserver-pod.yaml"}
	KubeControllerManagerOperand = Operand{Component: KubeControllerManager, Namespace: ControllerManagerNamespace,
		PodName: "kube-controller-manager", File: "kube-controller-manager-pod.yaml"}
	KubeSchedulerOperand = Operand{Component: KubeScheduler, Namespace: SchedulerNamespace,
		PodName: "openshift-kube-scheduler", File: "kube-scheduler-pod.yaml"}
)

// MasterOperands are the master pods in the order the installers run:
// the controller manager and scheduler talk to the kube-apiserver.
func MasterOperands() []Operand {
	return []Operand{KubeAPIServerOperand, KubeControllerManagerOperand, KubeSchedulerOperand}
}

// HostDir is where the operand's installer writes dir's files on the host.
func (o Operand) HostDir(in MasterInput, d ResourceDir) string {
	in = in.withDefaults()
	if d == CertDir {
		return path.Join(in.ResourcesDir, string(o.Component)+"-certs")
	}
	return path.Join(in.ResourcesDir, string(o.Component)+"-pod-"+strconv.Itoa(in.Revision))
}

// The files of a controller manager's or scheduler's kubeconfig: a
// client pair no operator issues in a rehearsal lab, so the master's
// served config carries it (NodeFile), and the kubeconfig naming it.
const (
	kubeconfigKey = "kubeconfig"
	tlsCrt        = "tls.crt"
	tlsKey        = "tls.key"
)

// Resources are the files the operand's pod names, in the order its
// installer copies them.
func (o Operand) Resources() []Resource {
	sec := func(d ResourceDir, name, key, boot string) Resource {
		return Resource{Dir: d, Kind: "secrets", Name: name, Key: key, Bootstrap: boot}
	}
	cm := func(d ResourceDir, name, key, boot string) Resource {
		return Resource{Dir: d, Kind: "configmaps", Name: name, Key: key, Bootstrap: boot}
	}
	node := func(r Resource) Resource { r.NodeFile = true; return r }
	client := o.ClientSecret()
	switch o.Component {
	case KubeControllerManager:
		return []Resource{
			cm(RevisionDir, "controller-manager-kubeconfig", kubeconfigKey, ""),
			cm(RevisionDir, "serviceaccount-ca", "ca-bundle.crt", RootCA),
			sec(RevisionDir, "service-account-private-key", "service-account.key", ServiceAccountKey),
			sec(CertDir, "csr-signer", tlsCrt, KubeletSignerCert),
			sec(CertDir, "csr-signer", tlsKey, KubeletSignerKey),
			node(sec(RevisionDir, client, tlsCrt, "")),
			node(sec(RevisionDir, client, tlsKey, "")),
		}
	case KubeScheduler:
		return []Resource{
			cm(RevisionDir, "scheduler-kubeconfig", kubeconfigKey, ""),
			cm(RevisionDir, "serviceaccount-ca", "ca-bundle.crt", RootCA),
			node(sec(RevisionDir, client, tlsCrt, "")),
			node(sec(RevisionDir, client, tlsKey, "")),
		}
	}
	return MasterResources()
}

// ClientSecret is the secret of the operand's client pair for the API
// ("" for the kube-apiserver).
func (o Operand) ClientSecret() string {
	switch o.Component {
	case KubeControllerManager:
		return "kube-controller-manager-client-cert-key"
	case KubeScheduler:
		return "kube-scheduler-client-cert-key"
	}
	return ""
}

// ClientUser is the identity of the operand's client certificate: the
// user upstream's RBAC bootstrap roles bind (system:kube-controller-manager,
// system:kube-scheduler), so each runs with its own role, not the admin's.
func (o Operand) ClientUser() string {
	if o.ClientSecret() == "" {
		return ""
	}
	return "system:" + string(o.Component)
}

// Kubeconfig is the operand's kubeconfig, as its installer copies it from
// its configmap: its own master's kube-apiserver at localhost, the CA of
// serviceaccount-ca, its client pair (nil for the kube-apiserver). The
// paths are relative to the kubeconfig's own directory, which client-go
// resolves them against: OpenShift's name the pod's absolute paths, which
// only a container's mounts give, while the kubelet stand-in runs the
// program on the host and maps only its flags. So the client pair is in
// the revision's directory beside the kubeconfig (upstream's is in the
// cert-dir, rotated without a new revision), and the same relative paths
// hold in a container and on the host.
func (o Operand) Kubeconfig() []byte {
	if o.ClientSecret() == "" {
		return nil
	}
	var kc, ca, crt, key string
	for _, r := range o.Resources() {
		switch {
		case r.Kind == "configmaps" && r.Key == kubeconfigKey:
			kc = containerPath(r)
		case r.Name == "serviceaccount-ca":
			ca = containerPath(r)
		case r.Name == o.ClientSecret() && r.Key == tlsCrt:
			crt = containerPath(r)
		case r.Name == o.ClientSecret() && r.Key == tlsKey:
			key = containerPath(r)
		}
	}
	rel := func(p string) string {
		r, err := filepath.Rel(path.Dir(kc), p)
		if err != nil {
			panic("controlplane: " + err.Error())
		}
		return r
	}
	user := string(o.Component)
	return []byte(`apiVersion: v1
kind: Config
clusters:
- name: localhost
  cluster:
    certificate-authority: ` + rel(ca) + `
    server: https://localhost:` + strconv.Itoa(APIPort) + `
contexts:
- name: ` + user + `
  context:
    cluster: localhost
    user: ` + user + `
current-context: ` + user + `
users:
- name: ` + user + `
  user:
    client-certificate: ` + rel(crt) + `
    client-key: ` + rel(key) + `
`)
}

// file is the container path of the operand's resource name/key.
func (o Operand) file(name, key string) string {
	for _, r := range o.Resources() {
		if r.Name == name && r.Key == key {
			return containerPath(r)
		}
	}
	panic("controlplane: " + string(o.Component) + " has no resource " + name + "/" + key)
}

// Args are the operand's flags on a master, with the paths its pod sees
// (what the operator's config.yaml gives OpenShift's binary).
func (o Operand) Args(in MasterInput) []string {
	in = in.withDefaults()
	switch o.Component {
	case KubeControllerManager:
		kc := o.file("controller-manager-kubeconfig", kubeconfigKey)
		args := append(masterComponentArgs(kc, ControllerManagerPort), controllerManagerLeaderElection()...)
		if gates := KubernetesFeatureGates(in.FeatureGates, in.OpenShift); len(gates) > 0 {
			args = append(args, "--feature-gates="+strings.Join(gates, ","))
		}
		return append(args,
			"--use-service-account-credentials=true",
			"--service-account-private-key-file="+o.file("service-account-private-key", "service-account.key"),
			"--root-ca-file="+o.file("serviceaccount-ca", "ca-bundle.crt"),
			"--cluster-signing-cert-file="+o.file("csr-signer", tlsCrt),
			"--cluster-signing-key-file="+o.file("csr-signer", tlsKey),
			"--cluster-cidr="+in.ClusterCIDR,
			"--service-cluster-ip-range="+in.ServiceCIDR,
			"--v=2",
		)
	case KubeScheduler:
		return append(masterComponentArgs(o.file("scheduler-kubeconfig", kubeconfigKey), SchedulerPort),
			"--leader-elect=true",
			"--leader-elect-lease-duration="+SchedulerLeaseDuration,
			"--leader-elect-renew-deadline="+SchedulerRenewDeadline,
			"--leader-elect-retry-period="+SchedulerRetryPeriod,
			"--leader-elect-resource-lock=leases",
			"--leader-elect-resource-namespace="+SchedulerNamespace,
			"--profiling=false",
			"--contention-profiling=false",
			"--v=2")
	}
	return MasterKubeAPIServerArgs(in)
}

// masterComponentArgs are what a master's controller manager and
// scheduler share: the kubeconfig for the API and its delegated
// authentication and authorization, the secure port on all addresses
// (upstream's servingInfo).
func masterComponentArgs(kubeconfig string, port int) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--secure-port=" + strconv.Itoa(port),
	}
}

// Pod is the operand's static pod on a master, as its installer writes
// it: one container, the program's own name as its command (the kubelet
// stand-in runs the Kubernetes volume's binary), the revision's
// resource-dir and the cert-dir as hostPath volumes. OpenShift's pods
// carry more containers (cert syncers, recovery controllers, the
// cluster-policy-controller), OpenShift programs a rehearsal lab has not;
// the stage pages say so. image names what the real pod would pull.
func (o Operand) Pod(in MasterInput, image string) Pod {
	if o.Component == KubeAPIServer {
		return MasterKubeAPIServerPod(in, image)
	}
	in = in.withDefaults()
	rev := strconv.Itoa(in.Revision)
	ctr := corev1.Container{
		Name: string(o.Component), Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{string(o.Component)}, Args: o.Args(in),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "resource-dir", MountPath: masterResourceMount},
			{Name: "cert-dir", MountPath: masterCertMount},
		},
	}
	hostPath := func(p string) corev1.VolumeSource {
		return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}}
	}
	return Pod{File: o.File, Pod: corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: o.PodName, Namespace: o.Namespace,
			Labels:      map[string]string{"app": o.Namespace, string(o.Component): "true", "revision": rev},
			Annotations: map[string]string{"kubectl.kubernetes.io/default-container": string(o.Component)}},
		Spec: corev1.PodSpec{
			HostNetwork: true, PriorityClassName: "system-node-critical", Containers: []corev1.Container{ctr},
			Volumes: []corev1.Volume{
				{Name: "resource-dir", VolumeSource: hostPath(o.HostDir(in, RevisionDir))},
				{Name: "cert-dir", VolumeSource: hostPath(o.HostDir(in, CertDir))},
			},
		},
	}}
}

// Generated is the content of a resource the operand's render writes
// itself rather than copying a bootstrap file: the kubeconfig.
func (o Operand) Generated(r Resource) ([]byte, bool) {
	if o.ClientSecret() != "" && r.Kind == "configmaps" && r.Key == kubeconfigKey {
		return o.Kubeconfig(), true
	}
	return nil, false
}
