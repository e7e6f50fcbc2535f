package probe

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/upstream"
)

// The volume's bin/ holds what the binaries are: the hyperkube built and a
// link per program, or the four official binaries, each a file.
func TestStageKubeTreeLaysOutEitherKind(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(src, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	built := &upstream.Binaries{Files: []upstream.File{{Path: file("hyperkube", "hk"), Names: wire.KubePrograms()}}}
	official := &upstream.Binaries{}
	for _, n := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"} {
		official.Files = append(official.Files, upstream.File{Path: file(n, n+"!"), Names: []string{n}})
	}

	root := t.TempDir()
	size, err := stageKubeTree(built, root)
	require.NoError(t, err)
	assert.Equal(t, int64(2), size)
	for _, n := range wire.KubePrograms()[1:] {
		dest, err := os.Readlink(filepath.Join(root, "bin", n))
		require.NoError(t, err, n)
		assert.Equal(t, "hyperkube", dest)
	}

	root = t.TempDir()
	size, err = stageKubeTree(official, root)
	require.NoError(t, err)
	assert.Equal(t, int64(len("kube-apiserver!kube-controller-manager!kube-scheduler!kubectl!")), size)
	for _, f := range official.Files {
		p := filepath.Join(root, "bin", f.Names[0])
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		assert.True(t, fi.Mode().IsRegular(), "a file, not a link")
		assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, f.Names[0]+"!", string(data))
	}
	assert.NoFileExists(t, filepath.Join(root, "bin", "hyperkube"))
}
