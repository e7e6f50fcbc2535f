package shims

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/guestcluster/operators/renders"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/spec"
)

// standInNode points the stand-ins at a release and probe config in a
// temporary directory and returns an /opt/openshift-like assets directory
// with the lab CA and the etcd signer in tls/.
func standInNode(t *testing.T) (tl *Tools, assets string, rel wire.RehearsalRelease, ca pki.Pair) {
	t.Helper()
	dir := t.TempDir()
	tl = New()
	rel = probe.ReleaseFor("4.19.10")
	data, _ := json.Marshal(rel)
	tl.ReleasePath = filepath.Join(dir, "release.json")
	require.NoError(t, os.WriteFile(tl.ReleasePath, data, 0o644))
	pc := wire.Config{Nodes: map[string]wire.NodeExpect{"52:54:00:00:00:0a": {Name: "bootstrap", FQDN: "bootstrap.ocp.lab.local", Role: "bootstrap", IP: "192.168.126.10"}}}
	data, _ = json.Marshal(pc)
	tl.ProbeConfigPath = filepath.Join(dir, "probe.json")
	require.NoError(t, os.WriteFile(tl.ProbeConfigPath, data, 0o644))

	ca, err := pki.NewCA("root-ca")
	require.NoError(t, err)
	signer, err := pki.NewIntermediate(ca, "etcd-signer")
	require.NoError(t, err)
	assets = filepath.Join(dir, "opt-openshift")
	require.NoError(t, os.MkdirAll(filepath.Join(assets, "tls"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(assets, "tls", "root-ca.crt"), ca.CertPEM, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(assets, "tls", "etcd-signer.crt"), signer.CertPEM, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(assets, "tls", "etcd-signer.key"), signer.KeyPEM, 0o600))
	return tl, assets, rel, ca
}

// image_for and oc adm release info answer from the release metadata, and
// say they are stand-ins.
func TestPodmanImageForAndOcReleaseInfo(t *testing.T) {
	t.Parallel()
	tl, _, rel, _ := standInNode(t)
	var out, errb bytes.Buffer
	code := tl.podmanMain([]string{"run", "--quiet", "--rm", "--net=none", rel.Image, "image", "etcd"}, &out, &errb)
	assert.Equal(t, 0, code, errb.String())
	assert.Equal(t, rel.Components["etcd"]+"\n", out.String())
	assert.Contains(t, errb.String(), "stand-in")

	out.Reset()
	assert.Equal(t, 1, tl.podmanMain([]string{"run", "--rm", rel.Image, "image", "no-such"}, &out, &errb))
	assert.Equal(t, 125, tl.podmanMain([]string{"run", "--rm", "quay.io/other@sha256:00", "image", "etcd"}, &out, &errb), "not an image of the release")
	assert.Equal(t, 125, tl.podmanMain([]string{"ps"}, &out, &errb))

	out.Reset()
	assert.Equal(t, 0, tl.OcMain([]string{"adm", "release", "info", "-o", "jsonpath={.metadata.version}", rel.Image}, &out, &errb))
	assert.Equal(t, "4.19.10", out.String())
	out.Reset()
	assert.Equal(t, 0, tl.OcMain([]string{"adm", "release", "info", "-o", "jsonpath={.displayVersions.kubernetes.Version}", "--icsp-file=x", rel.Image}, &out, &errb))
	assert.Equal(t, "1.32.13", out.String())
	assert.Equal(t, 1, tl.OcMain([]string{"get", "pods"}, &out, &errb))
	errb.Reset()
	assert.Equal(t, 1, tl.OcMain([]string{"patch", "clusterversion.config.openshift.io", "version", "--type=json", "--patch={}"}, &out, &errb))
	assert.Contains(t, errb.String(), "--type=merge", "the stand-in names what it plays")
	errb.Reset()
	assert.Equal(t, 1, tl.OcMain([]string{"patch", "pods", "x", "--type=merge"}, &out, &errb))
	assert.Contains(t, errb.String(), "only `oc patch clusterversion NAME`")
}

// The etcd render, called as stage 07 calls it, writes the member's static
// pod with real etcd flags, certificates chained to the lab CA, the client
// certificate, and manifests for the API server; the kubelet stand-in's
// view of the pod maps the certificate paths to the host.
func TestPodmanEtcdRender(t *testing.T) {
	t.Parallel()
	tl, assets, rel, ca := standInNode(t)
	var out, errb bytes.Buffer
	code := tl.podmanMain([]string{"run", "--quiet", "--net=host", "--rm", "--name", "etcd-render",
		"--volume", assets + ":/assets:z", rel.Components["cluster-etcd-operator"],
		"/usr/bin/cluster-etcd-operator", "render", "--asset-output-dir=/assets/etcd-bootstrap",
		"--cluster-configmap-file=/assets/manifests/cluster-config.yaml", "--etcd-image=" + rel.Components["etcd"]}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	assert.Contains(t, errb.String(), "stand-in")
	eb := filepath.Join(assets, "etcd-bootstrap")

	data, err := os.ReadFile(filepath.Join(eb, "etc-kubernetes/manifests/etcd-member-pod.yaml"))
	require.NoError(t, err)
	var pod corev1.Pod
	require.NoError(t, yaml.Unmarshal(data, &pod))
	assert.Equal(t, "openshift-etcd/etcd-bootstrap-member", pod.Namespace+"/"+pod.Name)
	assert.True(t, pod.Spec.HostNetwork)
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	assert.Equal(t, rel.Components["etcd"], c.Image)
	argv := kubelet.HostArgs(pod, c, append(c.Command, c.Args...))
	joined := strings.Join(argv, " ")
	assert.Contains(t, joined, "--cert-file="+renders.EtcdResourceDir+"/etcd-serving.crt", "the kubelet maps the mount to the host path")
	assert.Contains(t, joined, "--advertise-client-urls=https://192.168.126.10:2379")
	assert.Contains(t, joined, "--data-dir=/var/lib/etcd")
	assert.NotContains(t, joined, "--enable-v2", "etcd 3.5 serves no v2 API")
	assert.Contains(t, c.Env, corev1.EnvVar{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "8589934592"}, "the release's cluster-etcd-operator environment")
	assert.Contains(t, c.Env, corev1.EnvVar{Name: "ETCD_EXPERIMENTAL_WATCH_PROGRESS_NOTIFY_INTERVAL", Value: "5s"})

	roots := x509.NewCertPool()
	roots.AddCert(parseCert(t, ca.CertPEM))
	inter := x509.NewCertPool()
	bundle, err := os.ReadFile(filepath.Join(eb, "tls/etcd-ca-bundle.crt"))
	require.NoError(t, err)
	require.True(t, inter.AppendCertsFromPEM(bundle))
	for f, usage := range map[string]x509.ExtKeyUsage{
		"etc-kubernetes/static-pod-resources/etcd-member/etcd-serving.crt": x509.ExtKeyUsageServerAuth,
		"etc-kubernetes/static-pod-resources/etcd-member/etcd-peer.crt":    x509.ExtKeyUsageClientAuth,
		"tls/etcd-client.crt": x509.ExtKeyUsageClientAuth,
	} {
		data, err := os.ReadFile(filepath.Join(eb, f))
		require.NoError(t, err, f)
		cert := parseCert(t, data)
		_, err = cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: dnsFor(usage)})
		assert.NoError(t, err, "%s chains to the lab CA through etcd-signer", f)
	}
	for _, f := range []string{"tls/etcd-client.key", "etc-kubernetes/static-pod-resources/etcd-member/etcd-serving.key", "manifests/openshift-config-secret-etcd-client.yaml"} {
		fi, err := os.Stat(filepath.Join(eb, f))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	ents, err := os.ReadDir(filepath.Join(eb, "manifests"))
	require.NoError(t, err)
	assert.NotEmpty(t, ents, "stage 07 copies etcd-bootstrap/manifests/*")
}

func dnsFor(u x509.ExtKeyUsage) string {
	if u == x509.ExtKeyUsageServerAuth {
		return "localhost"
	}
	return ""
}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(data)
	require.NotNil(t, b)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

// The renders of stages 03 to 11, called as the stage scripts call them,
// write the files the scripts copy and the stage checks read.
func TestPodmanControlPlaneRenders(t *testing.T) {
	t.Parallel()
	tl, assets, rel, _ := standInNode(t)
	require.NoError(t, os.MkdirAll(filepath.Join(assets, "manifests"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(assets, "manifests", "99_feature-gate.yaml"), []byte("apiVersion: config.openshift.io/v1\nkind: FeatureGate\nmetadata:\n  name: cluster\nspec: {}\n"), 0o644))
	run := func(comp string, args ...string) {
		t.Helper()
		image := rel.Image
		if comp != "" {
			image = rel.Components[comp]
		}
		var out, errb bytes.Buffer
		code := tl.podmanMain(append([]string{"run", "--quiet", "--net=host", "--rm", "--volume", assets + ":/assets:z", image}, args...), &out, &errb)
		require.Equal(t, 0, code, "%s: %s", comp, errb.String())
	}
	run("cluster-config-api", "/usr/bin/render", "--asset-output-dir=/assets/api-bootstrap", "--rendered-manifest-dir=/assets/manifests", "--payload-version=4.19.10")
	run("cluster-authentication-operator", "render", "--asset-output-dir=/assets/auth-api-bootstrap/manifests", "--rendered-manifest-dir=/assets/manifests")
	run("cluster-config-operator", "/usr/bin/cluster-config-operator", "render", "--config-output-file=/assets/config-bootstrap/config",
		"--cloud-provider-config-output-file=/assets/config-bootstrap/cloud-provider-config-generated.yaml", "--asset-output-dir=/assets/config-bootstrap")
	run("", "render", "--output-dir=/assets/cvo-bootstrap", "--release-image="+rel.Image)
	run("cluster-kube-apiserver-operator", "/usr/bin/cluster-kube-apiserver-operator", "render", "--manifest-image=hk",
		"--asset-output-dir=/assets/kube-apiserver-bootstrap", "--config-output-file=/assets/kube-apiserver-bootstrap/config")
	run("cluster-kube-controller-manager-operator", "/usr/bin/cluster-kube-controller-manager-operator", "render", "--manifest-image=hk",
		"--asset-output-dir=/assets/kube-controller-manager-bootstrap", "--config-output-file=/assets/kube-controller-manager-bootstrap/config",
		"--cpc-config-output-file=/assets/kube-controller-manager-bootstrap/cpc-config")
	run("cluster-kube-scheduler-operator", "/usr/bin/cluster-kube-scheduler-operator", "render", "--manifest-image=hk",
		"--asset-output-dir=/assets/kube-scheduler-bootstrap", "--config-output-file=/assets/kube-scheduler-bootstrap/config")
	run("cluster-ingress-operator", "render", "--prefix=cluster-ingress-", "--output-dir=/assets/ingress-operator-manifests")
	run("cluster-node-tuning-operator", "render", "--asset-input-dir=/assets/manifests", "--asset-output-dir=/assets/node-tuning-bootstrap")

	for _, f := range []string{
		"api-bootstrap/manifests/0000_10_config-operator_01_apiservers.crd.yaml",
		"auth-api-bootstrap/manifests/0000_03_authorization-openshift_01_rolebindingrestriction.crd.yaml",
		"config-bootstrap/config", "config-bootstrap/cloud-provider-config-generated.yaml",
		"cvo-bootstrap/bootstrap/bootstrap-pod.yaml",
		"kube-apiserver-bootstrap/config", "kube-apiserver-bootstrap/bootstrap-manifests/kube-apiserver-pod.yaml",
		"kube-controller-manager-bootstrap/cpc-config", "kube-controller-manager-bootstrap/bootstrap-manifests/kube-controller-manager-pod.yaml",
		"kube-scheduler-bootstrap/config", "kube-scheduler-bootstrap/bootstrap-manifests/kube-scheduler-pod.yaml",
		"ingress-operator-manifests/cluster-ingress-00-custom-resource-definition.yaml",
	} {
		fi, err := os.Stat(filepath.Join(assets, f))
		require.NoError(t, err, f)
		assert.NotZero(t, fi.Size(), f)
	}
	fg, err := os.ReadFile(filepath.Join(assets, "manifests", "99_feature-gate.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(fg), "version: 4.19.10", "the feature gates are resolved for the payload")
	ents, err := os.ReadDir(filepath.Join(assets, "kube-apiserver-bootstrap", "manifests"))
	require.NoError(t, err)
	assert.NotEmpty(t, ents, "stage 08 copies kube-apiserver-bootstrap/manifests/*")
	data, err := os.ReadFile(filepath.Join(assets, "kube-controller-manager-bootstrap/bootstrap-manifests/kube-controller-manager-pod.yaml"))
	require.NoError(t, err)
	var pod corev1.Pod
	require.NoError(t, yaml.Unmarshal(data, &pod))
	assert.Len(t, pod.Spec.Containers, 2)
	assert.True(t, pod.Spec.HostNetwork)
}

// Stage 12's podman calls: the release's image-references, and the MCO
// bootstrap render with the bootstrap MCO pod and the pools.
func TestPodmanMCO(t *testing.T) {
	t.Parallel()
	tl, assets, rel, _ := standInNode(t)
	var out, errb bytes.Buffer
	require.Equal(t, 0, tl.podmanMain([]string{"run", "--quiet", "--rm", "--net=none", "--entrypoint=cat", rel.Image, "/release-manifests/image-references"}, &out, &errb), errb.String())
	var is struct {
		Kind string `json:"kind"`
		Spec struct {
			Tags []struct {
				Name string                `json:"name"`
				From struct{ Name string } `json:"from"`
			} `json:"tags"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &is))
	assert.Equal(t, "ImageStream", is.Kind)
	assert.Len(t, is.Spec.Tags, len(wire.ReleaseComponents))

	require.Equal(t, 0, tl.podmanMain([]string{"run", "--quiet", "--net=host", "--rm", "--name", "mco-render", "--user", "0", "--volume", assets + ":/assets:z",
		rel.Components["machine-config-operator"], "bootstrap", "--root-ca=/assets/tls/root-ca.crt", "--dest-dir=/assets/mco-bootstrap",
		"--image-references=assets/image-references", "--payload-version=4.19.10"}, &out, &errb), errb.String())
	data, err := os.ReadFile(filepath.Join(assets, "mco-bootstrap/bootstrap/machineconfigoperator-bootstrap-pod.yaml"))
	require.NoError(t, err)
	var pod corev1.Pod
	require.NoError(t, yaml.Unmarshal(data, &pod))
	assert.Equal(t, "machine-config-server", pod.Spec.Containers[0].Name)
	assert.Equal(t, "machine-config-controller", pod.Spec.InitContainers[0].Name)
	for _, f := range []string{"mco-bootstrap/bootstrap/manifests/master.machineconfigpool.yaml", "mco-bootstrap/bootstrap/manifests/worker.machineconfigpool.yaml"} {
		_, err := os.Stat(filepath.Join(assets, f))
		assert.NoError(t, err)
	}
	ents, err := os.ReadDir(filepath.Join(assets, "mco-bootstrap/manifests"))
	require.NoError(t, err)
	assert.NotEmpty(t, ents)
	// The node-bootstrapper's right to send the kubelets' CSRs.
	crb, err := os.ReadFile(filepath.Join(assets, "mco-bootstrap/manifests/csr-bootstrap-role-binding.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(crb), "name: system:node-bootstrapper")
	assert.Contains(t, string(crb), "name: node-bootstrapper\n  namespace: openshift-machine-config-operator")
}

// The renders of stages 08 and 09, called as the stage scripts call them,
// read the cluster's networks from the Network config they are given
// (--cluster-config-file), as the operators' renders do: the one a
// rehearsal's assets carry for a spec with another service network puts
// it in the kube-apiserver's --service-cluster-ip-range, and the pods pass
// the check stage validate holds them to for that Network.
func TestControlPlaneRendersTakeTheClusterConfigFile(t *testing.T) {
	t.Parallel()
	tl, assets, rel, ca := standInNode(t)
	mcs, err := pki.NewServing(ca, "api-int.ocp.lab.local", []string{"api-int.ocp.lab.local"})
	require.NoError(t, err)
	files, err := probe.RehearsalAssets(probe.Input{ClusterDomain: "ocp.lab.local", PKI: pki.Lab{CA: ca, MCS: mcs}},
		probe.AssetInput{ClusterName: "ocp", BaseDomain: "lab.local", MachineCIDR: "192.168.126.0/24", Masters: 3, Release: rel,
			ServiceNetwork: []string{"172.31.0.0/16"}, ClusterNetwork: []spec.ClusterNetwork{{CIDR: "10.132.0.0/14", HostPrefix: 23}}})
	require.NoError(t, err)
	for _, f := range files {
		if f.Path == wire.AssetDir+"/"+controlplane.NetworkManifest {
			require.NoError(t, os.MkdirAll(filepath.Join(assets, "manifests"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(assets, controlplane.NetworkManifest), f.Data, 0o644))
		}
	}
	network, err := os.ReadFile(filepath.Join(assets, controlplane.NetworkManifest))
	require.NoError(t, err)
	n, err := controlplane.ParseNetwork(network)
	require.NoError(t, err)
	in := controlplane.Input{ServiceCIDR: n.ServiceCIDR, ClusterCIDR: n.ClusterCIDR}
	for _, op := range []controlplane.Component{controlplane.KubeAPIServer, controlplane.KubeControllerManager} {
		args := []string{"run", "--quiet", "--net=host", "--rm", "--volume", assets + ":/assets:z", rel.Components["cluster-"+string(op)+"-operator"],
			"/usr/bin/cluster-" + string(op) + "-operator", "render", "--manifest-image=hk",
			"--asset-output-dir=/assets/" + string(op) + "-bootstrap", "--config-output-file=/assets/" + string(op) + "-bootstrap/config",
			"--cluster-config-file=/assets/manifests/cluster-network-02-config.yml"}
		if op == controlplane.KubeControllerManager {
			args = append(args, "--cpc-config-output-file=/assets/"+string(op)+"-bootstrap/cpc-config")
		}
		var out, errb bytes.Buffer
		require.Equal(t, 0, tl.podmanMain(args, &out, &errb), "%s: %s", op, errb.String())
		w := controlplane.Wanted(op, in)
		doc, err := os.ReadFile(filepath.Join(assets, string(op)+"-bootstrap", "bootstrap-manifests", w.File))
		require.NoError(t, err)
		assert.Contains(t, string(doc), "--service-cluster-ip-range=172.31.0.0/16", op)
		assert.NoError(t, controlplane.CheckPod(op, in, doc), op)
		assert.Error(t, controlplane.CheckPod(op, controlplane.Input{}, doc), "%s: not the default network's pod", op)
	}

	var errb bytes.Buffer
	code := tl.podmanMain([]string{"run", "--rm", "--volume", assets + ":/assets:z", rel.Components["cluster-kube-apiserver-operator"],
		"/usr/bin/cluster-kube-apiserver-operator", "render", "--asset-output-dir=/assets/x", "--config-output-file=/assets/x/config",
		"--cluster-config-file=/assets/manifests/none.yml"}, &bytes.Buffer{}, &errb)
	assert.Equal(t, 1, code)
	assert.Contains(t, errb.String(), "--cluster-config-file: open "+filepath.Join(assets, "manifests", "none.yml"))
}
