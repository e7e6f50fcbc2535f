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

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/engine"
)

// engine.List against the real libvirtd (test driver): a lab whose directory
// is in the home is listed with its running nodes; one whose directory is
// not is found through libvirt as orphaned.
func TestIntegrationList(t *testing.T) {
	// Not parallel: its test:///default connection shares the libvirt test driver's one in-memory state with every connection open at the same time.
	c := connect(t)
	ctx := context.Background()
	home := t.TempDir()

	s := integSpec(t, "listed")
	s.LabDir = filepath.Join(home, "labs", "listed")
	_, err := engine.Up(ctx, c, s, engine.UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	require.NoError(t, c.DestroyDomain(ctx, s.DomainName(s.Nodes[1])))

	dir := t.TempDir()
	o := &spec.Spec{Name: "elsewhere", Libvirt: spec.Libvirt{URI: "test:///default"}, LabDir: filepath.Join(dir, "lab"),
		Topology: spec.Topology{Masters: 1}, Network: spec.Network{CIDR: "10.125.0.0/24"},
		Storage: spec.Storage{PoolDir: filepath.Join(dir, "pool")}, Image: s.Image}
	o.Defaults()
	_, err = engine.Up(ctx, c, o, engine.UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(o.LabDir))

	labs, err := engine.List(ctx, engine.ListOptions{Home: home, Connect: hypervisor.Shared(c)})
	require.NoError(t, err)
	require.Len(t, labs, 2)
	assert.Equal(t, "elsewhere", labs[0].Name)
	assert.True(t, labs[0].Orphaned)
	assert.Equal(t, "bootlab-elsewhere", labs[0].Network)
	assert.Len(t, labs[0].Domains, len(o.Nodes))
	assert.Equal(t, "listed", labs[1].Name)
	assert.False(t, labs[1].Orphaned)
	assert.Equal(t, len(s.Nodes), labs[1].NodesTotal)
	assert.Equal(t, len(s.Nodes)-1, labs[1].NodesUp, "one node was shut off")
	assert.Equal(t, "test:///default", labs[1].URI)
}
