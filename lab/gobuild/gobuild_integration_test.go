//go:build integration

package gobuild

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/release"
)

// The default release's etcd is built for real from the module proxy:
// static, answering as etcd and as etcdctl at the pinned version; a second
// call and a call on a cache imported from an export run no go at all.
func TestEnsureBuildsEtcdOnceAndTravels(t *testing.T) {
	r, err := release.For("4.19")
	require.NoError(t, err)
	c, err := Etcd(r.Etcd.Module)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	src := t.TempDir()
	b, err := Ensure(ctx, src, c, nil)
	require.NoError(t, err)
	require.True(t, b.Built)
	fi, err := os.Stat(b.Path)
	require.NoError(t, err)
	t.Logf("etcd %s: built in %s, %d bytes", c.Version, b.Took.Round(time.Second), fi.Size())

	f, err := elf.Open(b.Path)
	require.NoError(t, err)
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "etcd must be static")
	}
	f.Close()
	bin := t.TempDir()
	require.NoError(t, os.Symlink(b.Path, filepath.Join(bin, "etcd")))
	require.NoError(t, os.Symlink(b.Path, filepath.Join(bin, "etcdctl")))
	for prog, want := range map[string]string{"etcd": "etcd Version: " + r.Etcd.Module + "\n", "etcdctl": "etcdctl version: " + r.Etcd.Module + "\n"} {
		arg := "version"
		if prog == "etcd" {
			arg = "--version"
		}
		out, err := exec.Command(filepath.Join(bin, prog), arg).Output()
		require.NoError(t, err, prog)
		assert.True(t, bytes.HasPrefix(out, []byte(want)), "%s %s: %s", prog, arg, out)
	}

	t.Setenv("PATH", t.TempDir()) // no go from here on
	again, err := Ensure(ctx, src, c, nil)
	require.NoError(t, err)
	assert.False(t, again.Built)
	assert.Equal(t, b.SHA256, again.SHA256)

	export := filepath.Join(t.TempDir(), "cache.tar.gz")
	_, err = cache.Export(src, export, cache.ExportOptions{})
	require.NoError(t, err)
	dst := t.TempDir()
	_, err = cache.Import(dst, export)
	require.NoError(t, err)
	es, err := cache.List(dst)
	require.NoError(t, err)
	var listed []cache.Entry
	for _, e := range es {
		if e.Kind == cache.KindGoBinary {
			listed = append(listed, e)
		}
	}
	require.Len(t, listed, 1)
	assert.Equal(t, r.Etcd.Module, listed[0].Version)
	assert.True(t, listed[0].Executable)
	imported, err := Ensure(ctx, dst, c, nil)
	require.NoError(t, err)
	assert.False(t, imported.Built, "an imported cache needs no rebuild")
	assert.Equal(t, b.SHA256, imported.SHA256)
}
