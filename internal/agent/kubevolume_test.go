package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/wire"
)

// The volume's disk is found by its serial among the node's disks, and
// every program is linked on PATH to the volume's bin/.
func TestKubeVolumeFoundBySerialAndLinked(t *testing.T) {
	t.Parallel()
	sys := t.TempDir()
	for dev, serial := range map[string]string{"vda": "", "vdb": wire.KubeVolumeSerial + "\n", "vdc": "other"} {
		require.NoError(t, os.MkdirAll(filepath.Join(sys, dev), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(sys, dev, "serial"), []byte(serial), 0o444))
	}
	assert.Equal(t, "vdb", findDiskBySerial(sys, wire.KubeVolumeSerial))
	assert.Empty(t, findDiskBySerial(sys, "absent"))

	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "kubectl"), []byte("stale"), 0o755))
	require.NoError(t, linkPrograms(wire.KubeVolumeBin, bin))
	for _, p := range []string{"hyperkube", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"} {
		dst, err := os.Readlink(filepath.Join(bin, p))
		require.NoError(t, err, p)
		assert.Equal(t, wire.KubeVolumeBin+"/"+p, dst)
	}
}

// A node without the disk (a worker) waits, then reports no volume and
// no error; a cancelled boot stops waiting.
func TestNoKubeVolumeIsNoError(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, err := mountKubeVolume(ctx, t.TempDir())
	assert.NoError(t, err)
	assert.False(t, ok)
}
