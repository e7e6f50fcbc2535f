package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/ignition"
)

// The merged config a master applied on its first boot is kept (0600: it
// carries keys) and read back as the same config; what is not an Ignition
// config is an error naming the file, not a config.
func TestAppliedConfigIsKeptAndReadBack(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "var", "lib", "bootlab", "applied-ignition.json")
	_, err := readAppliedConfig(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "a first boot has none")

	contents := "data:,master-0"
	mode := 0o600
	cfg := types.Config{Ignition: types.Ignition{Version: "3.2.0"}}
	cfg.Storage.Files = []types.File{{Node: types.Node{Path: "/etc/kubernetes/kubeconfig"},
		FileEmbedded1: types.FileEmbedded1{Mode: &mode, Contents: types.Resource{Source: &contents}}}}
	require.NoError(t, writeAppliedConfig(path, cfg))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	got, err := readAppliedConfig(path)
	require.NoError(t, err)
	data, ok, err := ignition.FileContents(got, "/etc/kubernetes/kubeconfig")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "master-0", string(data))

	require.NoError(t, os.WriteFile(path, []byte("secret-line-not-json"), 0o600))
	_, err = readAppliedConfig(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.NotContains(t, err.Error(), "secret-line-not-json", "never a line of the file")
}
