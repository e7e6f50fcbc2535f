//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// TestProbeSavedStart: a probe lab's nodes start from the saved memory
// image of a template node (lab/internal/savedstart), each as itself (its
// MAC, so its reserved address and name, and its own Ignition: verify
// checks both), with its random pool reseeded and its clock set; the
// template and the per-node copies of the image are gone once up returns.
// BOOTLAB_SAVED_START=off boots a node as before.
func TestProbeSavedStart(t *testing.T) {
	parallel(t)
	l := newLabWith(t, "topology:\n  masters: 1\n  workers: 0\n")
	r := mustRun(t, "lab", "up", "-f", l.SpecFile)
	out := r.Stdout + r.Stderr
	for _, n := range []string{"bootstrap", "master-0"} {
		assert.Contains(t, out, n+" started (saved image)", "node %s starts from the saved image", n)
	}
	v, r := verifyJSON(t, l, "3m")
	require.Equal(t, 0, r.Code, "verify failed:\n%s\n%s", strings.Join(failedChecks(v), "\n"), r.Stderr)

	s := loadSpec(t, l)
	for _, n := range []string{"bootstrap", "master-0"} {
		data, err := os.ReadFile(labdir.ConsoleLog(s, spec.Node{Name: n}))
		require.NoError(t, err)
		assert.Contains(t, string(data), "bootlab-probe: restored from a saved start: random pool reseeded from virtio-rng",
			"node %s reseeded its random pool before starting again", n)
	}
	doms, err := virsh(t, "list", "--all", "--name")
	require.NoError(t, err)
	assert.NotContains(t, doms, "bootlab-"+l.Name+"-saved_start", "the template is saved, so stopped")
	copies, err := filepath.Glob(filepath.Join(cache.Dir(), "probe", "*", ".restore-bootlab-"+l.Name+"-*"))
	require.NoError(t, err)
	assert.Empty(t, copies, "each node's copy of the image is removed once restored")
	imgs, err := filepath.Glob(filepath.Join(cache.Dir(), "probe", "*", "saved-start-*.img"))
	require.NoError(t, err)
	assert.NotEmpty(t, imgs, "the image stays in the probe image's cache directory")

	// Off: a node stopped and started again boots.
	setRunEnv(t, "BOOTLAB_SAVED_START", "off")
	_, err = virsh(t, "destroy", "bootlab-"+l.Name+"-master-0")
	require.NoError(t, err)
	r = mustRun(t, "lab", "up", "-f", l.SpecFile)
	out = r.Stdout + r.Stderr
	assert.Contains(t, out, "master-0 started")
	assert.NotContains(t, out, "master-0 started (saved image)")
	v, r = verifyJSON(t, l, "3m")
	require.Equal(t, 0, r.Code, "verify after a boot failed:\n%s\n%s", strings.Join(failedChecks(v), "\n"), r.Stderr)

	labDown(t, l.LabDir, "-f", l.SpecFile)
	assert.Empty(t, leftovers(t, l))
}
