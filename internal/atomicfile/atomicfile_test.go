package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteReplacesWithTheModeAsked(t *testing.T) {
	t.Parallel()
	for name, perm := range map[string]os.FileMode{"secret": 0o600, "shared": 0o644, "program": 0o755} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := filepath.Join(dir, "state.json")
			// An older file with another mode, and a temporary file a
			// crash left (world-readable): neither leaks into the result.
			require.NoError(t, os.WriteFile(p, []byte("old"), 0o666))
			require.NoError(t, os.WriteFile(p+".tmp", []byte("stale"), 0o666))
			require.NoError(t, Write(p, []byte("new"), perm))
			got, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, "new", string(got))
			fi, err := os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, perm, fi.Mode().Perm())
			assert.Equal(t, []string{"state.json", "state.json.tmp"}, names(t, dir), "no temporary file of its own is left")
		})
	}
}

// A failed write leaves the old file as it was and no temporary file.
func TestWriteFailsCleanly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The target is a non-empty directory: the rename fails.
	p := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.MkdirAll(filepath.Join(p, "inside"), 0o755))
	err := Write(p, []byte("x"), 0o600)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "write "+p)
	assert.Equal(t, []string{"kubeconfig"}, names(t, dir))

	// No directory: said, and nothing made.
	err = Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "missing", "f"))
	assert.Equal(t, []string{"kubeconfig"}, names(t, dir))
}

// The temporary file is a dot-file ending in .tmp: the kubelet stand-in
// skips dot-files in its manifest directory, the cache listing knows .tmp.
func TestWriteTemporaryName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "etcd-pod.yaml")
	// A non-empty directory where the file goes makes the rename fail:
	// its error names the temporary file.
	require.NoError(t, os.MkdirAll(filepath.Join(p, "x"), 0o755))
	err := Write(p, []byte("x"), 0o644)
	require.Error(t, err)
	var le *os.LinkError
	require.ErrorAs(t, err, &le)
	base := filepath.Base(le.Old)
	assert.True(t, strings.HasPrefix(base, ".etcd-pod.yaml."), base)
	assert.True(t, strings.HasSuffix(base, ".tmp"), base)
	assert.Equal(t, dir, filepath.Dir(le.Old), "beside the file: the rename stays on one filesystem")
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// A file written without replace never takes the place of one that is
// there (made since the caller looked): the old bytes stay, the error is
// fs.ErrExist, no temporary file is left. With replace it is renamed over.
func TestCommitWithoutReplaceKeepsAnExistingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "export.tar")
	f, err := Create(p)
	require.NoError(t, err)
	_, err = f.Write([]byte("new"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte("someone else's"), 0o600))
	err = f.Commit(0o644, false)
	require.ErrorIs(t, err, os.ErrExist)
	assert.Contains(t, err.Error(), "write "+p)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "someone else's", string(got))
	assert.Equal(t, []string{"export.tar"}, names(t, dir))

	// Nothing there: the file appears whole, with its mode.
	q := filepath.Join(dir, "new.tar")
	f, err = Create(q)
	require.NoError(t, err)
	_, err = f.Write([]byte("new"))
	require.NoError(t, err)
	require.NoError(t, f.Commit(0o644, false))
	fi, err := os.Stat(q)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	assert.Equal(t, []string{"export.tar", "new.tar"}, names(t, dir))
}

// Abort leaves nothing: no temporary file, the path untouched.
func TestAbortRemovesTheTemporaryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "export.tar")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	f, err := Create(p)
	require.NoError(t, err)
	_, err = f.Write([]byte("half"))
	require.NoError(t, err)
	f.Abort()
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "old", string(got))
	assert.Equal(t, []string{"export.tar"}, names(t, dir))
}
