package labcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lab init writes a valid rehearsal-lab spec that names nothing derived
// from the lab's name: a copy with another name is a lab of its own.
func TestInitWritesASpecSafeToRename(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ux1.yaml")
	cmd := NewCmdInit(testFactory(), nil)
	cmd.SetArgs([]string{"--name", "ux1", "--cidr", "192.168.140.0/24", "-f", file})
	require.NoError(t, cmd.Execute())

	data, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, derived := range []string{"bridge", "mac", "labDir", "poolDir", "nodes:"} {
		assert.NotContains(t, string(data), derived+":", "derived from the name: left out")
	}
	s, err := spec.Load(file)
	require.NoError(t, err)
	s.Defaults()
	require.NoError(t, s.Validate())
	assert.Equal(t, "ux1", s.Name)
	assert.True(t, s.Rehearsal(), "a rehearsal lab: the stages run on its bootstrap")
	assert.Equal(t, "192.168.140.0/24", s.Network.CIDR)
	assert.Equal(t, 3, s.Topology.Masters)

	// A renamed copy derives its own bridge, MACs and directories.
	copied := strings.Replace(string(data), "\nname: ux1\n", "\nname: ux2\n", 1)
	require.NotEqual(t, string(data), copied)
	renamed, err := spec.Parse([]byte(copied), "ux2.yaml")
	require.NoError(t, err)
	renamed.Defaults()
	assert.NotEqual(t, s.Network.Bridge, renamed.Network.Bridge)
	assert.NotEqual(t, s.Nodes[0].MAC, renamed.Nodes[0].MAC)
	assert.NotEqual(t, s.LabDir, renamed.LabDir)
	assert.NotEqual(t, s.Storage.PoolDir, renamed.Storage.PoolDir)
}

// An existing file is kept (exit 2, what to do said); --force replaces it.
// A bad name is refused before anything is written.
func TestInitRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bootlab.yaml")
	require.NoError(t, os.WriteFile(file, []byte("name: mine\n"), 0o644))

	cmd := NewCmdInit(testFactory(), nil)
	cmd.SetArgs([]string{"-f", file})
	err := cmd.Execute()
	require.Error(t, err)
	assert.Equal(t, "write lab spec "+file+": exists, and is kept: give another path, or --force to replace it", err.Error())
	data, _ := os.ReadFile(file)
	assert.Equal(t, "name: mine\n", string(data))

	cmd = NewCmdInit(testFactory(), nil)
	cmd.SetArgs([]string{"-f", file, "--force", "--name", "x2"})
	require.NoError(t, cmd.Execute())
	data, _ = os.ReadFile(file)
	assert.Contains(t, string(data), "\nname: x2\n")

	bad := filepath.Join(dir, "bad.yaml")
	cmd = NewCmdInit(testFactory(), nil)
	cmd.SetArgs([]string{"-f", bad, "--name", "Not_A_Name"})
	err = cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "name")
	assert.NoFileExists(t, bad)
}

// The README shows what `bootlab lab init --name demo` writes, exactly.
func TestReadmeShowsWhatInitWrites(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "`bootlab lab init --name demo` writes")
	require.True(t, ok, "README introduces lab init's output")
	_, block, ok := strings.Cut(after, "```yaml\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)

	file := filepath.Join(t.TempDir(), "demo.yaml")
	cmd := NewCmdInit(testFactory(), nil)
	cmd.SetArgs([]string{"--name", "demo", "-f", file})
	require.NoError(t, cmd.Execute())
	want, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(want), block, "README's spec differs from what lab init writes: paste the new output")
}
