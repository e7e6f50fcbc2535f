//go:build integration

package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/internal/engine"
)

// TestIntegrationCheckpointSnapshots runs the checkpoint verbs against
// libvirtd's test driver: its snapshots are metadata only, which is what
// this test checks (names, descriptions, states, revert of the run state,
// deletion before undefine).
func TestIntegrationCheckpointSnapshots(t *testing.T) {
	// Not parallel: its test:///default connection shares the libvirt test driver's one in-memory state with every connection open at the same time.
	c := connect(t)
	ctx := context.Background()
	s := integSpec(t, "integcp")
	s.Network.CIDR = "10.125.0.0/24"
	s.Network.Bridge, s.Network.Gateway, s.Network.APIAddress, s.Network.IngressAddress = "", "", "", ""
	s.Nodes = nil
	s.Defaults()
	_, err := engine.Up(ctx, c, s, engine.UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	master := s.DomainName(s.Nodes[1])
	// A snapshot that is not bootlab's, on our domain.
	require.NoError(t, c.CreateSnapshot(ctx, master, `<domainsnapshot><name>by-hand</name></domainsnapshot>`))

	cp, err := engine.SaveCheckpoint(ctx, c, s, "start", engine.SaveOptions{})
	require.NoError(t, err)
	assert.Len(t, cp.Nodes, len(s.Nodes))
	snaps, err := c.Snapshots(ctx, master)
	require.NoError(t, err)
	var names []string
	for _, sn := range snaps {
		names = append(names, sn.Name)
		if sn.Name == "bootlab-start" {
			assert.Equal(t, "running", sn.State)
			assert.Contains(t, sn.Description, "lab=integcp")
			assert.False(t, sn.Created.IsZero())
		}
	}
	assert.ElementsMatch(t, []string{"by-hand", "bootlab-start"}, names)

	require.NoError(t, c.DestroyDomain(ctx, master))
	require.NoError(t, os.WriteFile(filepath.Join(s.LabDir, "verify.json"), []byte("{}"), 0o600))
	_, err = engine.RestoreCheckpoint(ctx, c, s, "start", engine.RestoreOptions{})
	require.NoError(t, err)
	d, err := c.LookupDomain(ctx, master)
	require.NoError(t, err)
	assert.True(t, d.Active, "reverted to the running snapshot")
	_, err = os.Stat(filepath.Join(s.LabDir, "verify.json"))
	assert.True(t, os.IsNotExist(err), "a file the checkpoint did not have is gone")

	cps, err := engine.ListCheckpoints(ctx, c, s)
	require.NoError(t, err)
	require.Len(t, cps, 1, "by-hand is not a checkpoint")
	assert.Equal(t, "start", cps[0].Name)
	assert.Empty(t, cps[0].Missing)

	_, err = engine.Down(ctx, c, s, engine.DownOptions{})
	require.NoError(t, err)
	doms, err := c.Domains(ctx)
	require.NoError(t, err)
	for _, o := range doms {
		assert.NotContains(t, o.Name, "bootlab-integcp-", "down undefined every domain, snapshots and all")
	}
}
