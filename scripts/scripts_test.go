package scripts

import (
	"io/fs"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShellcheck runs shellcheck on every stage script and the library,
// the same line the Makefile lint target uses.
func TestShellcheck(t *testing.T) {
	t.Parallel()
	sc, err := exec.LookPath("shellcheck")
	require.NoError(t, err, "shellcheck is needed: apt-get install -y shellcheck")
	files, err := filepath.Glob("*.sh")
	require.NoError(t, err)
	lib, err := filepath.Glob("lib/*.sh")
	require.NoError(t, err)
	require.Len(t, files, 15, "one script per stage")
	out, err := exec.Command(sc, append([]string{"-x"}, append(files, lib...)...)...).CombinedOutput()
	assert.NoError(t, err, "shellcheck -x scripts/*.sh scripts/lib/*.sh:\n%s", out)
}

func TestEmbeddedMatchesFiles(t *testing.T) {
	t.Parallel()
	n := 0
	require.NoError(t, fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	}))
	assert.Equal(t, 16, n, "15 stage scripts and lib/bootkube.sh are embedded")
}
