//go:build integration

package probe

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/cache"
)

// A probe image built on the trainer's host and carried over with cache
// export/import is a cache hit on the classroom host: nothing is rebuilt.
func TestProbeImageTravelsWithTheCache(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/qemu-img"); err != nil {
		t.Fatalf("qemu-img is needed: apt-get install -y qemu-utils")
	}
	dir := t.TempDir()
	mods := filepath.Join(dir, "modules")
	require.NoError(t, os.MkdirAll(mods, 0o755))
	for _, m := range Modules {
		require.NoError(t, os.WriteFile(filepath.Join(mods, m+".ko"), []byte(m), 0o644))
	}
	kernel := filepath.Join(dir, "vmlinuz")
	require.NoError(t, os.WriteFile(kernel, []byte("kernel"), 0o644))
	agent := filepath.Join(dir, "agent")
	require.NoError(t, os.WriteFile(agent, buildAgent(t), 0o755))

	a, b := filepath.Join(dir, "cache-a"), filepath.Join(dir, "cache-b")
	built, err := EnsureImage(context.Background(), ImageOptions{CacheDir: a, Kernel: kernel, ModulesDir: mods, Agent: agent})
	require.NoError(t, err)
	require.True(t, built.Built)

	file := filepath.Join(dir, "cache.tar.gz")
	_, err = cache.Export(a, file, cache.ExportOptions{})
	require.NoError(t, err)
	_, err = cache.Import(b, file)
	require.NoError(t, err)

	img, err := EnsureImage(context.Background(), ImageOptions{CacheDir: b, Kernel: kernel, ModulesDir: mods, Agent: agent})
	require.NoError(t, err)
	assert.False(t, img.Built, "the imported image is used as it is")
	assert.Equal(t, built.Hash, img.Hash)
	assert.Equal(t, filepath.Join(b, "probe", img.Hash[:16], "initramfs.img"), img.Initrd)
	want, err := os.ReadFile(built.Initrd)
	require.NoError(t, err)
	got, err := os.ReadFile(img.Initrd)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	es, err := cache.List(b)
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, e := range es {
		kinds[e.Kind]++
	}
	assert.Equal(t, 3, kinds[cache.KindProbeImage], "vmlinuz, initramfs.img, base.qcow2")
}
