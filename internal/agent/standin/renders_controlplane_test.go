package standin

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/spec"
)

// Stages 08-10's renders write the pods internal/controlplane checks: the
// same flags `stage validate` holds them to and the real binaries run
// with (internal/controlplane's integration test).
func TestControlPlaneRendersWriteTheRealPods(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	f := map[string]string{"asset-output-dir": out, "config-output-file": filepath.Join(out, "config"),
		"cpc-config-output-file": filepath.Join(out, "cpc-config"), "manifest-image": "quay.io/example/hyperkube"}
	for c, render := range map[controlplane.Component]func(*podmanRun, *wire.RehearsalRelease, map[string]string) error{
		controlplane.KubeAPIServer: renderKAS, controlplane.KubeControllerManager: renderKCM, controlplane.KubeScheduler: renderScheduler,
	} {
		require.NoError(t, render(&podmanRun{}, nil, f), c)
		w := controlplane.Wanted(c, controlplane.Input{})
		doc, err := os.ReadFile(filepath.Join(out, "bootstrap-manifests", w.File))
		require.NoError(t, err, c)
		assert.NoError(t, controlplane.CheckPod(c, controlplane.Input{}, doc), c)
	}
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

// Stages 08-10's renders write, from --asset-input-dir (/assets/tls), the
// objects each master installer copies into its operand's namespace, with
// the bootstrap's own bytes (secrets 0600) or, for the controller
// manager's and scheduler's kubeconfigs, the kubeconfig naming their
// cert-dir's client pair; a missing file is named.
func TestRendersWriteTheMastersObjects(t *testing.T) {
	t.Parallel()
	tlsDir := t.TempDir()
	ca, err := pki.NewCA("bootlab-test-root")
	require.NoError(t, err)
	files, err := probe.ControlPlaneTLS(ca, "ocp.lab.local", controlplane.DefaultServiceCIDR)
	require.NoError(t, err)
	files = append(files, probe.TLSFile{Name: controlplane.ClientCABundle, Mode: 0o644, Data: ca.CertPEM},
		probe.TLSFile{Name: controlplane.RootCA, Mode: 0o644, Data: ca.CertPEM})
	for _, f := range files {
		require.NoError(t, os.WriteFile(filepath.Join(tlsDir, f.Name), f.Data, os.FileMode(f.Mode)))
	}
	for _, tc := range []struct {
		o      controlplane.Operand
		render func(*podmanRun, *wire.RehearsalRelease, map[string]string) error
		extra  map[string]string
		n      int
	}{
		{controlplane.KubeAPIServerOperand, renderKAS, nil, 12},
		{controlplane.KubeControllerManagerOperand, renderKCM, map[string]string{"cpc-config-output-file": "cpc"}, 5},
		{controlplane.KubeSchedulerOperand, renderScheduler, nil, 2},
	} {
		out := t.TempDir()
		f := map[string]string{"asset-output-dir": out, "config-output-file": filepath.Join(out, "config"), "asset-input-dir": tlsDir}
		for k, v := range tc.extra {
			f[k] = filepath.Join(out, v)
		}
		require.NoError(t, tc.render(&podmanRun{}, nil, f), tc.o.Component)
		n := 0
		for _, r := range tc.o.Resources() {
			if r.NodeFile {
				continue
			}
			n++
			assertRenderedResource(t, tc.o, r, out, tlsDir)
		}
		assert.Equal(t, tc.n, n, "%s: every resource but the node's own", tc.o.Component)
		if tc.o.Component != controlplane.KubeAPIServer {
			assert.FileExists(t, filepath.Join(out, "manifests", "00_"+tc.o.Namespace+"-namespace.yaml"))
		}
	}

	require.NoError(t, os.Remove(filepath.Join(tlsDir, controlplane.ServiceAccountKey)))
	out := t.TempDir()
	f := map[string]string{"asset-output-dir": out, "config-output-file": filepath.Join(out, "config"), "asset-input-dir": tlsDir}
	err = renderKAS(&podmanRun{}, nil, f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bound-service-account-signing-key needs service-account.key from --asset-input-dir")
	f["cpc-config-output-file"] = filepath.Join(out, "cpc")
	err = renderKCM(&podmanRun{}, nil, f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kube-controller-manager's secrets openshift-kube-controller-manager/service-account-private-key needs service-account.key")
}

// assertRenderedResource checks r's object in the render's manifests/:
// kind, namespace, mode and the bytes the installer will copy.
func assertRenderedResource(t *testing.T, o controlplane.Operand, r controlplane.Resource, out, tlsDir string) {
	t.Helper()
	kind, prefix, mode := "ConfigMap", "configmap-", os.FileMode(0o644)
	if r.Secret() {
		kind, prefix, mode = "Secret", "secret-", 0o600
	}
	if o.Component != controlplane.KubeAPIServer {
		prefix = o.Namespace + "-" + prefix
	}
	p := filepath.Join(out, "manifests", prefix+r.Name+".yaml")
	fi, err := os.Stat(p)
	require.NoError(t, err, r.Rel())
	assert.Equal(t, mode, fi.Mode().Perm(), p)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	var obj struct {
		Kind     string            `json:"kind"`
		Metadata map[string]string `json:"metadata"`
		Data     map[string]string `json:"data"`
	}
	require.NoError(t, yaml.Unmarshal(data, &obj))
	assert.Equal(t, kind, obj.Kind)
	assert.Equal(t, o.Namespace, obj.Metadata["namespace"])
	want, generated := o.Generated(r)
	if !generated {
		want, err = os.ReadFile(filepath.Join(tlsDir, r.Bootstrap))
		require.NoError(t, err)
	}
	got := []byte(obj.Data[r.Key])
	if r.Secret() {
		got, err = base64.StdEncoding.DecodeString(obj.Data[r.Key])
		require.NoError(t, err)
	}
	assert.Equal(t, string(want), string(got), "%s/%s is the bootstrap's %s", o.Namespace, r.Rel(), r.Bootstrap)
}
