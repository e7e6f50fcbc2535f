package standin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/controlplane"
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
