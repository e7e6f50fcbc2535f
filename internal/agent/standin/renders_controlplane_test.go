package standin

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/lab/pki"
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
	for c, render := range map[controlplane.Component]func(*podmanRun, *probe.RehearsalRelease, map[string]string) error{
		controlplane.KubeAPIServer: renderKAS, controlplane.KubeControllerManager: renderKCM, controlplane.KubeScheduler: renderScheduler,
	} {
		require.NoError(t, render(&podmanRun{}, nil, f), c)
		w := controlplane.Wanted(c, controlplane.Input{})
		doc, err := os.ReadFile(filepath.Join(out, "bootstrap-manifests", w.File))
		require.NoError(t, err, c)
		assert.NoError(t, controlplane.CheckPod(c, controlplane.Input{}, doc), c)
	}
}

// Stage 08's render writes, from --asset-input-dir (/assets/tls), the
// openshift-kube-apiserver objects a master's installer copies, with the
// bootstrap's own bytes (secrets 0600); a missing file is named.
func TestKASRenderWritesTheMastersObjects(t *testing.T) {
	t.Parallel()
	tlsDir, out := t.TempDir(), t.TempDir()
	ca, err := pki.NewCA("bootlab-test-root")
	require.NoError(t, err)
	files, err := probe.ControlPlaneTLS(ca, "ocp.lab.local", controlplane.DefaultServiceCIDR)
	require.NoError(t, err)
	files = append(files, probe.TLSFile{Name: controlplane.ClientCABundle, Mode: 0o644, Data: ca.CertPEM})
	for _, f := range files {
		require.NoError(t, os.WriteFile(filepath.Join(tlsDir, f.Name), f.Data, os.FileMode(f.Mode)))
	}
	f := map[string]string{"asset-output-dir": out, "config-output-file": filepath.Join(out, "config"), "asset-input-dir": tlsDir}
	require.NoError(t, renderKAS(&podmanRun{}, nil, f))
	n := 0
	for _, r := range controlplane.MasterResources() {
		if r.NodeFile {
			continue
		}
		n++
		kind, prefix, mode := "ConfigMap", "configmap-", os.FileMode(0o644)
		if r.Secret() {
			kind, prefix, mode = "Secret", "secret-", 0o600
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
		assert.Equal(t, controlplane.MasterNamespace, obj.Metadata["namespace"])
		want, err := os.ReadFile(filepath.Join(tlsDir, r.Bootstrap))
		require.NoError(t, err)
		got := []byte(obj.Data[r.Key])
		if r.Secret() {
			got, err = base64.StdEncoding.DecodeString(obj.Data[r.Key])
			require.NoError(t, err)
		}
		assert.Equal(t, want, got, "%s is the bootstrap's %s", r.Rel(), r.Bootstrap)
	}
	assert.Equal(t, 11, n, "every resource but etcd's three")

	require.NoError(t, os.Remove(filepath.Join(tlsDir, controlplane.ServiceAccountKey)))
	err = renderKAS(&podmanRun{}, nil, f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bound-service-account-signing-key needs service-account.key from --asset-input-dir")
}
