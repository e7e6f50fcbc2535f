package renders

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
)

// Mounts maps a path inside the operator's container to the node's, as
// podman's --volume options do.
type Mounts interface {
	HostPath(p string) string
}

// Func plays one operator's `render` command: m maps its container's
// paths, rel is the release, f its --flags (paths on the node).
type Func func(m Mounts, rel *wire.RehearsalRelease, f map[string]string) error

// ReleasePayload is the image-references name of the release image itself,
// whose entrypoint is the cluster-version-operator.
const ReleasePayload = ""

// Renders play the operators' `render` commands on a rehearsal bootstrap.
type Renders struct {
	// ProbeConfigPath is the probe config the agent wrote: the etcd render
	// finds the bootstrap node's name and address there.
	ProbeConfigPath string
}

// ByComponent are the renders: each writes the files its operator's render
// writes, in the directories its flags name. Components are keyed by
// image-references name (ReleasePayload for the release image).
func (t Renders) ByComponent() map[string]Func {
	return map[string]Func{
		"cluster-etcd-operator":                    t.renderEtcd,
		ReleasePayload:                             renderCVO,
		"cluster-config-api":                       renderAPI,
		"cluster-authentication-operator":          renderAuthAPI,
		"cluster-config-operator":                  renderConfig,
		"cluster-kube-apiserver-operator":          renderKAS,
		"cluster-kube-controller-manager-operator": renderKCM,
		"cluster-kube-scheduler-operator":          renderScheduler,
		"cluster-ingress-operator":                 renderIngress,
		"cluster-node-tuning-operator":             renderNodeTuning,
		"cloud-credential-operator":                renderCCO,
	}
}

// writeFiles writes files (relative to dir) with their modes.
func writeFiles(dir string, files map[string]File) error {
	for name, f := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.Mode); err != nil {
			return err
		}
	}
	return nil
}

// File is a file a render writes: its bytes and mode.
type File struct {
	Data []byte
	Mode os.FileMode
}

func yamlOut(obj any, mode os.FileMode) (File, error) {
	data, err := yaml.Marshal(obj)
	return File{data, mode}, err
}

// bootstrapSelf returns the bootstrap node's name and address from the
// probe config the agent wrote.
func (t Renders) bootstrapSelf() (wire.NodeExpect, error) {
	data, err := os.ReadFile(t.ProbeConfigPath)
	if err != nil {
		return wire.NodeExpect{}, err
	}
	var c wire.Config
	if err := json.Unmarshal(data, &c); err != nil {
		return wire.NodeExpect{}, err
	}
	for _, n := range c.Nodes {
		if n.Role == wire.RoleBootstrap {
			return n, nil
		}
	}
	return wire.NodeExpect{}, fmt.Errorf("%s names no bootstrap node", t.ProbeConfigPath)
}

// Paths of the bootstrap etcd member, as the cluster-etcd-operator's
// bootstrap pod uses them.
const (
	EtcdResourceDir = "/etc/kubernetes/static-pod-resources/etcd-member"
	etcdCertMount   = "/etc/ssl/etcd"
	etcdDataDir     = "/var/lib/etcd"
)

// renderEtcd plays `cluster-etcd-operator render`: the bootstrap etcd
// member's static pod and certificates under etc-kubernetes/, the
// secrets and config maps for the bootstrap API server under manifests/,
// and the CA bundle and client certificate under tls/. Certificates are
// signed by tls/etcd-signer (an intermediate of the lab CA).
func (t Renders) renderEtcd(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	out := f["asset-output-dir"]
	if out == "" {
		return fmt.Errorf("--asset-output-dir is required")
	}
	image := f["etcd-image"]
	if image == "" {
		image = rel.Components["etcd"]
	}
	signer, rootCA, err := readEtcdSigner(run.HostPath("/assets/tls"))
	if err != nil {
		return err
	}
	self, err := t.bootstrapSelf()
	if err != nil {
		return err
	}
	c, err := newEtcdCerts(signer, rootCA, self)
	if err != nil {
		return err
	}
	files := etcdCertFiles(c)
	for name, obj := range etcdRenderObjects(etcdBootstrapPod(self, image), c) {
		mode := os.FileMode(0o644)
		if strings.Contains(name, "secret") {
			mode = 0o600
		}
		fo, err := yamlOut(obj, mode)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		files[name] = fo
	}
	return writeFiles(out, files)
}

// readEtcdSigner reads tls/etcd-signer (the intermediate of the lab CA that
// signs etcd's certificates) and the lab's root CA from tlsDir.
func readEtcdSigner(tlsDir string) (signer pki.Pair, rootCA []byte, err error) {
	signerCert, err := os.ReadFile(filepath.Join(tlsDir, "etcd-signer.crt"))
	if err != nil {
		return pki.Pair{}, nil, fmt.Errorf("etcd signer: %w", err)
	}
	signerKey, err := os.ReadFile(filepath.Join(tlsDir, "etcd-signer.key"))
	if err != nil {
		return pki.Pair{}, nil, fmt.Errorf("etcd signer: %w", err)
	}
	rootCA, err = os.ReadFile(filepath.Join(tlsDir, "root-ca.crt"))
	if err != nil {
		return pki.Pair{}, nil, fmt.Errorf("root CA: %w", err)
	}
	return pki.Pair{CertPEM: signerCert, KeyPEM: signerKey}, rootCA, nil
}

// etcdCerts are the bootstrap etcd member's certificates and CA bundle.
type etcdCerts struct {
	serving, peer, client pki.Pair
	bundle                []byte
}

// newEtcdCerts signs the bootstrap member's serving, peer and client
// certificates; the bundle is the signer and the root CA.
func newEtcdCerts(signer pki.Pair, rootCA []byte, self wire.NodeExpect) (etcdCerts, error) {
	ip := net.ParseIP(self.IP)
	names := []string{"localhost", "etcd-bootstrap", self.Name, self.FQDN}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), ip}
	serving, err := pki.NewLeaf(signer, "system:etcd-server:"+self.FQDN, []string{"system:etcd-servers"}, names, ips)
	if err != nil {
		return etcdCerts{}, err
	}
	peer, err := pki.NewLeaf(signer, "system:etcd-peer:"+self.FQDN, []string{"system:etcd-peers"}, names, ips)
	if err != nil {
		return etcdCerts{}, err
	}
	client, err := pki.NewClient(signer, "etcd", []string{"etcd"})
	if err != nil {
		return etcdCerts{}, err
	}
	bundle := append(append([]byte(nil), signer.CertPEM...), rootCA...)
	return etcdCerts{serving: serving, peer: peer, client: client, bundle: bundle}, nil
}

// etcdBootstrapPod is the bootstrap etcd member's static pod, as the
// cluster-etcd-operator's render writes it.
func etcdBootstrapPod(self wire.NodeExpect, image string) corev1.Pod {
	url := func(port int) string { return fmt.Sprintf("https://%s", net.JoinHostPort(self.IP, fmt.Sprint(port))) }
	cert := func(n string) string { return etcdCertMount + "/" + n }
	hostPathDir := corev1.HostPathDirectoryOrCreate
	return corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-bootstrap-member", Namespace: "openshift-etcd",
			Labels: map[string]string{"k8s-app": "etcd"}},
		Spec: corev1.PodSpec{
			HostNetwork:       true,
			PriorityClassName: "system-node-critical",
			Containers: []corev1.Container{{
				Name: "etcd", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"etcd"},
				Args: []string{
					"--name=etcd-bootstrap",
					"--data-dir=" + etcdDataDir,
					"--initial-advertise-peer-urls=" + url(2380),
					"--initial-cluster=etcd-bootstrap=" + url(2380),
					"--initial-cluster-state=new",
					"--listen-peer-urls=https://0.0.0.0:2380",
					"--listen-client-urls=https://0.0.0.0:2379",
					"--advertise-client-urls=" + url(2379),
					"--listen-metrics-urls=https://0.0.0.0:9978",
					"--cert-file=" + cert("etcd-serving.crt"),
					"--key-file=" + cert("etcd-serving.key"),
					"--trusted-ca-file=" + cert("ca.crt"),
					"--client-cert-auth=true",
					"--peer-cert-file=" + cert("etcd-peer.crt"),
					"--peer-key-file=" + cert("etcd-peer.key"),
					"--peer-trusted-ca-file=" + cert("ca.crt"),
					"--peer-client-cert-auth=true",
					"--logger=zap",
					"--log-outputs=stderr",
				},
				Env: etcd.ReleaseEnv(),
				VolumeMounts: []corev1.VolumeMount{
					{Name: "certs", MountPath: etcdCertMount},
					{Name: "data-dir", MountPath: etcdDataDir},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "certs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: EtcdResourceDir}}},
				{Name: "data-dir", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: etcdDataDir, Type: &hostPathDir}}},
			},
		},
	}
}

// etcdCertFiles are the certificates the render writes, with their modes.
func etcdCertFiles(c etcdCerts) map[string]File {
	return map[string]File{
		"etc-kubernetes/static-pod-resources/etcd-member/ca.crt":           {c.bundle, 0o644},
		"etc-kubernetes/static-pod-resources/etcd-member/etcd-serving.crt": {c.serving.CertPEM, 0o644},
		"etc-kubernetes/static-pod-resources/etcd-member/etcd-serving.key": {c.serving.KeyPEM, 0o600},
		"etc-kubernetes/static-pod-resources/etcd-member/etcd-peer.crt":    {c.peer.CertPEM, 0o644},
		"etc-kubernetes/static-pod-resources/etcd-member/etcd-peer.key":    {c.peer.KeyPEM, 0o600},
		"tls/etcd-ca-bundle.crt": {c.bundle, 0o644},
		"tls/etcd-client.crt":    {c.client.CertPEM, 0o644},
		"tls/etcd-client.key":    {c.client.KeyPEM, 0o600},
	}
}

// etcdRenderObjects are the manifests the render writes: the member's pod,
// and the config maps, secret and service for the bootstrap API server.
func etcdRenderObjects(pod corev1.Pod, c etcdCerts) map[string]any {
	b64 := base64.StdEncoding.EncodeToString
	return map[string]any{
		"etc-kubernetes/manifests/etcd-member-pod.yaml": pod,
		"manifests/openshift-config-configmap-etcd-ca-bundle.yaml": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "etcd-ca-bundle", "namespace": "openshift-config"},
			"data":     map[string]string{"ca-bundle.crt": string(c.bundle)}},
		"manifests/openshift-config-configmap-etcd-serving-ca.yaml": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "etcd-serving-ca", "namespace": "openshift-config"},
			"data":     map[string]string{"ca-bundle.crt": string(c.bundle)}},
		"manifests/openshift-config-secret-etcd-client.yaml": map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
			"metadata": map[string]any{"name": "etcd-client", "namespace": "openshift-config"},
			"data":     map[string]string{"tls.crt": b64(c.client.CertPEM), "tls.key": b64(c.client.KeyPEM)}},
		// The operand's namespace, as the real render's 00_openshift-etcd-ns.yaml:
		// the service below lives in it.
		"manifests/00_openshift-etcd-ns.yaml": map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": "openshift-etcd", "labels": map[string]string{"openshift.io/run-level": "0"}}},
		"manifests/openshift-etcd-svc.yaml": map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "etcd", "namespace": "openshift-etcd"},
			"spec": map[string]any{"ports": []any{map[string]any{"name": "etcd", "port": 2379, "protocol": "TCP"}},
				"selector": map[string]string{"etcd": "true"}}},
	}
}

// crd is a CustomResourceDefinition of an OpenShift API group, with an
// open schema (the render stand-ins do not carry the real schemas).
func crd(group, kind, plural string, namespaced bool) map[string]any {
	scope := "Cluster"
	if namespaced {
		scope = "Namespaced"
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group,
			"annotations": map[string]string{"bootlab.dev/stand-in": "rendered by bootlab's rehearsal podman stand-in: the real schema comes from the release image"}},
		"spec": map[string]any{
			"group": group, "scope": scope,
			"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}
}

func required(f map[string]string, names ...string) error {
	for _, n := range names {
		if f[n] == "" {
			return fmt.Errorf("--%s is required", n)
		}
	}
	return nil
}

// renderAPI plays the cluster-config-api render: the config.openshift.io
// CRDs, and the FeatureGate in the rendered manifests resolved for the
// payload version (status.featureGates).
func renderAPI(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	if err := required(f, "asset-output-dir", "rendered-manifest-dir", "payload-version"); err != nil {
		return err
	}
	files := map[string]File{}
	for _, c := range []struct{ file, kind, plural string }{
		{"0000_10_config-operator_01_apiservers.crd.yaml", "APIServer", "apiservers"},
		{"0000_10_config-operator_01_infrastructures.crd.yaml", "Infrastructure", "infrastructures"},
		{"0000_10_config-operator_01_networks.crd.yaml", "Network", "networks"},
		{"0000_10_config-operator_01_featuregates.crd.yaml", "FeatureGate", "featuregates"},
		{"0000_10_config-operator_01_dnses.crd.yaml", "DNS", "dnses"},
		{"0000_10_config-operator_01_ingresses.crd.yaml", "Ingress", "ingresses"},
		{"0000_10_config-operator_01_proxies.crd.yaml", "Proxy", "proxies"},
		{"0000_10_config-operator_01_schedulers.crd.yaml", "Scheduler", "schedulers"},
	} {
		fo, err := yamlOut(crd("config.openshift.io", c.kind, c.plural, false), 0o644)
		if err != nil {
			return err
		}
		files["manifests/"+c.file] = fo
	}
	if err := writeFiles(f["asset-output-dir"], files); err != nil {
		return err
	}
	fgPath := filepath.Join(f["rendered-manifest-dir"], "99_feature-gate.yaml")
	var fg map[string]any
	data, err := os.ReadFile(fgPath)
	if err != nil {
		return fmt.Errorf("the installer's FeatureGate: %w (did stage 01 copy openshift/ into manifests/?)", err)
	}
	if err := yaml.Unmarshal(data, &fg); err != nil {
		return fmt.Errorf("%s: %w", fgPath, err)
	}
	fg["status"] = map[string]any{"featureGates": []any{map[string]any{
		"version":  f["payload-version"],
		"enabled":  []any{map[string]string{"name": "GatewayAPI"}, map[string]string{"name": "OpenShiftPodSecurityAdmission"}},
		"disabled": []any{map[string]string{"name": "DynamicResourceAllocation"}},
	}}}
	fo, err := yamlOut(fg, 0o644)
	if err != nil {
		return err
	}
	return writeFiles(filepath.Dir(fgPath), map[string]File{filepath.Base(fgPath): fo})
}

// renderAuthAPI plays the cluster-authentication-operator render (4.19+):
// the RoleBindingRestriction CRD.
func renderAuthAPI(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	if err := required(f, "asset-output-dir"); err != nil {
		return err
	}
	fo, err := yamlOut(crd("authorization.openshift.io", "RoleBindingRestriction", "rolebindingrestrictions", true), 0o644)
	if err != nil {
		return err
	}
	return writeFiles(f["asset-output-dir"], map[string]File{"0000_03_authorization-openshift_01_rolebindingrestriction.crd.yaml": fo})
}

// renderConfig plays the cluster-config-operator render: the operator
// config and the generated cloud provider config (empty on platform None).
func renderConfig(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	if err := required(f, "config-output-file", "cloud-provider-config-output-file"); err != nil {
		return err
	}
	cfg, err := yamlOut(map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperatorConfig",
		"payloadVersion": f["payload-version"], "featureGates": map[string]any{}}, 0o644)
	if err != nil {
		return err
	}
	cloud, err := yamlOut(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cloud-provider-config", "namespace": "openshift-config-managed"}, "data": map[string]any{}}, 0o644)
	if err != nil {
		return err
	}
	if err := writeFiles(filepath.Dir(f["config-output-file"]), map[string]File{filepath.Base(f["config-output-file"]): cfg}); err != nil {
		return err
	}
	return writeFiles(filepath.Dir(f["cloud-provider-config-output-file"]), map[string]File{filepath.Base(f["cloud-provider-config-output-file"]): cloud})
}

// renderCVO plays `cluster-version-operator render`: the bootstrap CVO
// static pod under bootstrap/ and the CVO's manifests under manifests/.
func renderCVO(run Mounts, rel *wire.RehearsalRelease, f map[string]string) error {
	if err := required(f, "output-dir"); err != nil {
		return err
	}
	image := f["release-image"]
	if image == "" {
		image = rel.Image
	}
	hostFile := corev1.HostPathFile
	pod := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-cluster-version-operator", Namespace: "openshift-cluster-version",
			Labels: map[string]string{"k8s-app": "cluster-version-operator"}},
		Spec: corev1.PodSpec{
			HostNetwork: true,
			Containers: []corev1.Container{{
				Name: "cluster-version-operator", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Args:         []string{"start", "--release-image=" + image, "--enable-auto-update=false", "--kubeconfig=/etc/kubernetes/kubeconfig"},
				Env:          []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"}, {Name: "KUBERNETES_SERVICE_PORT", Value: "6443"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kubeconfig", MountPath: "/etc/kubernetes/kubeconfig", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/kubernetes/kubeconfig", Type: &hostFile}}}},
		},
	}
	files := map[string]File{}
	var err error
	if files["bootstrap/bootstrap-pod.yaml"], err = yamlOut(pod, 0o644); err != nil {
		return err
	}
	for name, obj := range map[string]any{
		"manifests/0000_00_cluster-version-operator_00_namespace.yaml": map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": "openshift-cluster-version"}},
		"manifests/0000_00_cluster-version-operator_01_clusterversions.crd.yaml": crd("config.openshift.io", "ClusterVersion", "clusterversions", false),
		"manifests/cvo-overrides.yaml": map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
			"metadata": map[string]any{"name": "version", "namespace": "openshift-cluster-version"},
			"spec":     map[string]any{"clusterID": "rehearsal", "overrides": []any{}}},
	} {
		if files[name], err = yamlOut(obj, 0o644); err != nil {
			return err
		}
	}
	return writeFiles(f["output-dir"], files)
}

// Host paths every bootstrap control-plane pod mounts.
const (
	bootstrapSecretsDir = "/etc/kubernetes/bootstrap-secrets"
	bootstrapConfigsDir = "/etc/kubernetes/bootstrap-configs"
)
