package renders

import (
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/wire"
)

// controlPlanePod is a bootstrap control-plane static pod: host network,
// the bootstrap secrets and configs mounted where the operands read them.
func controlPlanePod(ns, name string, containers ...corev1.Container) corev1.Pod {
	mounts := []corev1.VolumeMount{
		{Name: "secrets", MountPath: bootstrapSecretsDir},
		{Name: "config", MountPath: bootstrapConfigsDir},
	}
	for i := range containers {
		containers[i].VolumeMounts = append(containers[i].VolumeMounts, mounts...)
		containers[i].ImagePullPolicy = corev1.PullIfNotPresent
	}
	return corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"openshift.io/control-plane": "true"}},
		Spec: corev1.PodSpec{
			HostNetwork: true, PriorityClassName: "system-node-critical", Containers: containers,
			Volumes: []corev1.Volume{
				{Name: "secrets", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: bootstrapSecretsDir}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: bootstrapConfigsDir}}},
			},
		},
	}
}

// controlPlaneRender writes what the kube-* operators' renders write: the
// operand config at --config-output-file, the bootstrap pod under
// bootstrap-manifests/ and the operand's namespace under manifests/.
func controlPlaneRender(f map[string]string, cfgKind, podFile string, pod corev1.Pod, extra map[string]File) error {
	if err := required(f, "asset-output-dir", "config-output-file"); err != nil {
		return err
	}
	out := f["asset-output-dir"]
	files := map[string]File{}
	var err error
	if files["bootstrap-manifests/"+podFile], err = yamlOut(pod, 0o644); err != nil {
		return err
	}
	if files["manifests/00_"+pod.Namespace+"-namespace.yaml"], err = yamlOut(map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": pod.Namespace, "labels": map[string]string{"openshift.io/run-level": "0"}}}, 0o644); err != nil {
		return err
	}
	for k, v := range extra {
		files[k] = v
	}
	if err := writeFiles(out, files); err != nil {
		return err
	}
	cfg, err := yamlOut(map[string]any{"apiVersion": "kubecontrolplane.config.openshift.io/v1", "kind": cfgKind}, 0o644)
	if err != nil {
		return err
	}
	return writeFiles(filepath.Dir(f["config-output-file"]), map[string]File{filepath.Base(f["config-output-file"]): cfg})
}

func renderKAS(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	// OpenShift's pod runs `hyperkube kube-apiserver --openshift-config=...`;
	// upstream's binary has no --openshift-config, so the lab's pod carries
	// the settings as flags (internal/controlplane; stage 08's page says so).
	in, err := controlplane.RenderInput(os.ReadFile, f)
	if err != nil {
		return err
	}
	pod := controlplane.BootstrapPod(controlplane.KubeAPIServer, in, f["manifest-image"]).Pod
	// The real render also writes the namespaces of the cluster's
	// configuration (00_openshift-config-ns.yaml, ...-managed-ns.yaml): the
	// installer's pull secret and the etcd render's objects live there.
	extra := map[string]File{}
	for _, ns := range []string{"openshift-config", "openshift-config-managed"} {
		fo, err := yamlOut(map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns, "labels": map[string]string{"openshift.io/run-level": "0"}}}, 0o644)
		if err != nil {
			return err
		}
		extra["manifests/00_"+ns+"-ns.yaml"] = fo
	}
	if err := addOperandObjects(extra, controlplane.KubeAPIServerOperand, f); err != nil {
		return err
	}
	return controlPlaneRender(f, "KubeAPIServerConfig", "kube-apiserver-pod.yaml", pod, extra)
}

func renderKCM(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	if err := required(f, "cpc-config-output-file"); err != nil {
		return err
	}
	in, err := controlplane.RenderInput(os.ReadFile, f)
	if err != nil {
		return err
	}
	pod := controlplane.BootstrapPod(controlplane.KubeControllerManager, in, f["manifest-image"]).Pod
	// OpenShift's pod also runs its cluster-policy-controller, an OpenShift
	// program the lab does not have: it stays in the pod, as not run.
	policy := controlPlanePod("kube-system", "", corev1.Container{Name: "cluster-policy-controller", Image: f["cluster-policy-controller-image"],
		Command: []string{"cluster-policy-controller", "start"},
		Args:    []string{"--config=" + bootstrapConfigsDir + "/cluster-policy-controller-config.yaml", "--kubeconfig=" + bootstrapSecretsDir + "/kubeconfig"}})
	pod.Spec.Containers = append(pod.Spec.Containers, policy.Spec.Containers...)
	cpc, err := yamlOut(map[string]any{"apiVersion": "openshiftcontrolplane.config.openshift.io/v1", "kind": "OpenShiftControllerManagerConfig"}, 0o644)
	if err != nil {
		return err
	}
	if err := writeFiles(filepath.Dir(f["cpc-config-output-file"]), map[string]File{filepath.Base(f["cpc-config-output-file"]): cpc}); err != nil {
		return err
	}
	extra := map[string]File{}
	if err := addOperandObjects(extra, controlplane.KubeControllerManagerOperand, f); err != nil {
		return err
	}
	return controlPlaneRender(f, "KubeControllerManagerConfig", "kube-controller-manager-pod.yaml", pod, extra)
}

func renderScheduler(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	pod := controlplane.BootstrapPod(controlplane.KubeScheduler, controlplane.Input{}, f["manifest-image"]).Pod
	extra := map[string]File{}
	if err := addOperandObjects(extra, controlplane.KubeSchedulerOperand, f); err != nil {
		return err
	}
	return controlPlaneRender(f, "KubeSchedulerConfiguration", "kube-scheduler-pod.yaml", pod, extra)
}

// addOperandObjects adds to extra, when the render has --asset-input-dir,
// the objects the master's installer of o copies (OperandObjects) and o's
// namespace, where the bootstrap pod's is another (kube-system).
func addOperandObjects(extra map[string]File, o controlplane.Operand, f map[string]string) error {
	in := f["asset-input-dir"]
	if in == "" {
		return nil
	}
	objs, err := OperandObjects(o, in)
	if err != nil {
		return err
	}
	for k, v := range objs {
		extra[k] = v
	}
	if o.Component == controlplane.KubeAPIServer {
		return nil
	}
	ns, err := yamlOut(map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": o.Namespace, "labels": map[string]string{"openshift.io/run-level": "0"}}}, 0o644)
	extra["manifests/00_"+o.Namespace+"-namespace.yaml"] = ns
	return err
}

// renderIngress plays `ingress-operator render`: the IngressController CRD
// and the operator's namespace, prefixed.
func renderIngress(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	if err := required(f, "output-dir"); err != nil {
		return err
	}
	prefix := f["prefix"]
	files := map[string]File{}
	var err error
	if files[prefix+"00-custom-resource-definition.yaml"], err = yamlOut(crd("operator.openshift.io", "IngressController", "ingresscontrollers", true), 0o644); err != nil {
		return err
	}
	if files[prefix+"00-namespace.yaml"], err = yamlOut(map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "openshift-ingress-operator"}}, 0o644); err != nil {
		return err
	}
	return writeFiles(f["output-dir"], files)
}

// renderNodeTuning plays the node tuning operator's render: on a cluster
// without performance profiles it writes nothing.
func renderNodeTuning(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	if err := required(f, "asset-output-dir"); err != nil {
		return err
	}
	return os.MkdirAll(f["asset-output-dir"], 0o755)
}

// MCO plays `machine-config-operator bootstrap`: the master and
// worker pools for the bootstrap controller under bootstrap/manifests/,
// the bootstrap MCO pod (machine-config-controller as init container,
// machine-config-server) and the operator's manifests.
func MCO(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	if err := required(f, "dest-dir"); err != nil {
		return err
	}
	image := rel.Components["machine-config-operator"]
	dirOrCreate, fileType := corev1.HostPathDirectoryOrCreate, corev1.HostPathFile
	hostPath := func(name, p string, t *corev1.HostPathType) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: t}}}
	}
	pod := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-machine-config-operator", Namespace: "openshift-machine-config-operator",
			Labels: map[string]string{"k8s-app": "machine-config-operator"}},
		Spec: corev1.PodSpec{
			HostNetwork: true,
			InitContainers: []corev1.Container{{
				Name: "machine-config-controller", Image: image, Command: []string{"/usr/bin/machine-config-controller"},
				Args:         []string{"bootstrap", "--manifest-dir=/etc/mcc/bootstrap", "--dest-dir=/etc/mcs/bootstrap", "--pull-secret=/etc/mcc/bootstrap/machineconfigcontroller-pull-secret"},
				VolumeMounts: []corev1.VolumeMount{{Name: "bootstrap-manifests", MountPath: "/etc/mcc/bootstrap"}, {Name: "server-basedir", MountPath: "/etc/mcs/bootstrap"}},
			}},
			Containers: []corev1.Container{{
				Name: "machine-config-server", Image: image, Command: []string{"/usr/bin/machine-config-server"},
				Args: []string{"bootstrap", "--bootstrap-kubeconfig=/etc/mcs/kubeconfig", "--server-basedir=/etc/mcs/bootstrap",
					"--cert=/etc/ssl/mcs/tls.crt", "--key=/etc/ssl/mcs/tls.key"},
				VolumeMounts: []corev1.VolumeMount{{Name: "server-certs", MountPath: "/etc/ssl/mcs"}, {Name: "bootstrap-kubeconfig", MountPath: "/etc/mcs/kubeconfig"},
					{Name: "server-basedir", MountPath: "/etc/mcs/bootstrap"}},
			}},
			Volumes: []corev1.Volume{
				hostPath("server-certs", "/etc/ssl/mcs", nil),
				hostPath("bootstrap-kubeconfig", "/etc/mcs/kubeconfig", &fileType),
				hostPath("server-basedir", "/etc/mcs/bootstrap", &dirOrCreate),
				hostPath("bootstrap-manifests", "/etc/mcc/bootstrap", nil),
			},
		},
	}
	files := map[string]File{}
	var err error
	if files["bootstrap/machineconfigoperator-bootstrap-pod.yaml"], err = yamlOut(pod, 0o644); err != nil {
		return err
	}
	for _, role := range []string{"master", "worker"} {
		if files["bootstrap/manifests/"+role+".machineconfigpool.yaml"], err = yamlOut(map[string]any{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
			"metadata": map[string]any{"name": role, "labels": map[string]string{"machineconfiguration.openshift.io/mco-built-in": "", "pools.operator.machineconfiguration.openshift.io/" + role: ""}},
			"spec": map[string]any{
				"machineConfigSelector": map[string]any{"matchLabels": map[string]string{"machineconfiguration.openshift.io/role": role}},
				"nodeSelector":          map[string]any{"matchLabels": map[string]string{"node-role.kubernetes.io/" + role: ""}},
			}}, 0o644); err != nil {
			return err
		}
	}
	if files["manifests/0000_80_machine-config_00_namespace.yaml"], err = yamlOut(map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "openshift-machine-config-operator"}}, 0o644); err != nil {
		return err
	}
	// The node-bootstrapper may ask for client certificates (the kubelets'
	// join, with the installer's kubeconfig-kubelet): the operator's
	// csr-bootstrap-role-binding.
	if files["manifests/csr-bootstrap-role-binding.yaml"], err = yamlOut(map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "system-bootstrap-node-bootstrapper"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "node-bootstrapper", "namespace": "openshift-machine-config-operator"}},
	}, 0o644); err != nil {
		return err
	}
	return writeFiles(f["dest-dir"], files)
}

// renderCCO plays the cloud-credential-operator render: on platform None
// in the default mode it has nothing to add.
func renderCCO(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	if err := required(f, "dest-dir"); err != nil {
		return err
	}
	return os.MkdirAll(f["dest-dir"], 0o755)
}
