//go:build integration

package openshift

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/images"
)

// A trainer fills cache A from the (local) mirror, exports it, and imports
// it on a host with cache B: there the clients and RHCOS are cache hits and
// the mirror sees no request at all.
func TestCacheTravelsToAnOfflineHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newTestMirror(t, "4.19.10")
	stream, err := images.ParseStream([]byte(m.streamJSON))
	require.NoError(t, err)
	disk, err := stream.QEMUDisk("x86_64")
	require.NoError(t, err)
	fill := func(dir string) (*Tools, images.RHCOSResult) {
		t.Helper()
		tools, err := EnsureTools(ctx, ToolsOptions{Version: "4.19.10", Mirror: m.clients(), CacheDir: dir, LookPath: noPath})
		require.NoError(t, err)
		img, err := images.EnsureRHCOS(ctx, &images.Downloader{}, dir, disk, m.URL)
		require.NoError(t, err)
		return tools, img
	}

	a := t.TempDir()
	tools, img := fill(a)
	require.Equal(t, "download", tools.InstallerFrom)
	require.False(t, img.Cached)
	online := len(m.requests())
	require.Positive(t, online)

	file := filepath.Join(t.TempDir(), "classroom-cache.tar.gz")
	manifest, err := cache.Export(a, file, cache.ExportOptions{})
	require.NoError(t, err)
	assert.Len(t, manifest.Files, 4, "openshift-install, oc, the RHCOS qcow2 and its .sha256")

	b := filepath.Join(t.TempDir(), "offline-cache")
	res, err := cache.Import(b, file)
	require.NoError(t, err)
	assert.Len(t, res.Imported, 4)

	la, err := cache.List(a)
	require.NoError(t, err)
	lb, err := cache.List(b)
	require.NoError(t, err)
	require.Len(t, lb, len(la))
	for i := range la {
		assert.Equal(t, la[i].Path, lb[i].Path)
		assert.Equal(t, la[i].SHA256, lb[i].SHA256, la[i].Path)
		assert.Equal(t, la[i].Kind, lb[i].Kind, la[i].Path)
	}

	tools, img = fill(b)
	assert.Equal(t, "cache", tools.InstallerFrom)
	assert.Equal(t, "cache", tools.OCFrom)
	assert.True(t, img.Cached)
	assert.Equal(t, filepath.Join(b, "rhcos", disk.FileName()), img.Path)
	assert.Len(t, m.requests(), online, "the imported cache serves everything: no request reaches the mirror")
	got, err := os.ReadFile(img.Path)
	require.NoError(t, err)
	assert.Equal(t, m.image, got)
}
