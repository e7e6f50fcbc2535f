//go:build integration

package gobuild

import (
	"bytes"
	"context"
	"debug/elf"
	"io"
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
// The export carries the release's Kubernetes beside it, listed by name.
func TestEnsureBuildsEtcdOnceAndTravels(t *testing.T) {
	// Not parallel: t.Setenv (PATH) changes the whole process's environment.
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

	kc, err := Kubernetes(r.Kubernetes)
	require.NoError(t, err)
	kube := ensureShared(t, kc)
	require.NoError(t, os.MkdirAll(kc.Dir(src), 0o755))
	// A copy: the shared cache may be on another filesystem than src.
	copyFile(t, kube.Path, filepath.Join(kc.Dir(src), "hyperkube"))

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
	listed := map[string]cache.Entry{}
	for _, e := range es {
		if e.Kind == cache.KindGoBinary {
			listed[e.Name] = e
		}
	}
	require.Len(t, listed, 2)
	assert.Equal(t, r.Etcd.Module, listed["etcd"].Version)
	assert.Equal(t, r.Kubernetes, listed["kubernetes"].Version)
	for name, e := range listed {
		assert.True(t, e.Executable, name)
	}
	for _, want := range []*Binary{b, kube} {
		imported, err := Ensure(ctx, dst, want.Component, nil)
		require.NoError(t, err)
		assert.False(t, imported.Built, "an imported cache needs no rebuild of %s", want.Component.Name)
		assert.Equal(t, want.SHA256, imported.SHA256)
	}
}

// copyFile copies the file at from to to, executable.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
