package renders

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/lab/probe"
)

// Stages 08-10's renders write the pods internal/controlplane checks: the
// same flags `stage validate` holds them to and the real binaries run
// with (internal/controlplane's integration test).
func TestControlPlaneRendersWriteTheRealPods(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	f := map[string]string{"asset-output-dir": out, "config-output-file": filepath.Join(out, "config"),
		"cpc-config-output-file": filepath.Join(out, "cpc-config"), "manifest-image": "quay.io/example/hyperkube"}
	for c, render := range map[controlplane.Component]Func{
		controlplane.KubeAPIServer: renderKAS, controlplane.KubeControllerManager: renderKCM, controlplane.KubeScheduler: renderScheduler,
	} {
		require.NoError(t, render(nil, nil, f), c)
		w := controlplane.Wanted(c, controlplane.Input{})
		doc, err := os.ReadFile(filepath.Join(out, "bootstrap-manifests", w.File))
		require.NoError(t, err, c)
		assert.NoError(t, controlplane.CheckPod(c, controlplane.Input{}, doc), c)
	}
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
		render Func
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
		require.NoError(t, tc.render(nil, nil, f), tc.o.Component)
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
	err = renderKAS(nil, nil, f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bound-service-account-signing-key needs service-account.key from --asset-input-dir")
	f["cpc-config-output-file"] = filepath.Join(out, "cpc")
	err = renderKCM(nil, nil, f)
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
