//go:build integration

package dashboard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/libvirt"
)

// The dashboard over the real libvirtd (test driver): a lab built with
// lab.Up is served with its network, nodes and the four frontends.
func TestIntegrationDashboardOverLibvirt(t *testing.T) {
	// Not parallel: its test:///default connection shares the libvirt test driver's one in-memory state with every connection open at the same time.
	if _, err := os.Stat("/var/run/libvirt/libvirt-sock"); err != nil {
		t.Fatalf("libvirtd is not running: install libvirt-daemon-system and start it (`mkdir -p /run/libvirt; virtlogd -d; libvirtd -d`): %v", err)
	}
	ctx := context.Background()
	// The test driver gives each connection fresh state: one for all.
	c, err := libvirt.Connect(ctx, "test:///default", nil)
	require.NoError(t, err)
	defer c.Close()
	home := t.TempDir()
	img := filepath.Join(home, "base.img")
	require.NoError(t, os.WriteFile(img, make([]byte, 1<<20), 0o644))
	s := &spec.Spec{Name: "dash", Libvirt: spec.Libvirt{URI: "test:///default"}, LabDir: filepath.Join(home, "labs", "dash"),
		Topology: spec.Topology{Masters: 1, Workers: 1}, Network: spec.Network{CIDR: "10.126.0.0/24"},
		Storage: spec.Storage{PoolDir: filepath.Join(home, "pool")}, Image: spec.Image{Path: img}}
	s.Defaults()
	_, err = lab.Up(ctx, c, s, lab.UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)

	v, _ := labView(t, home, hypervisor.Shared(c), "dash")
	assert.True(t, v.Network.Exists)
	assert.True(t, v.Network.Active)
	assert.Equal(t, 3, v.NodesUp)
	require.Len(t, v.Nodes, 3)
	assert.Equal(t, "running", v.Nodes[2].State)
	assert.Len(t, v.LoadBalancer.Frontends, 4)
	assert.Contains(t, v.LoadBalancer.Error, "test://")
	assert.Equal(t, PhaseBootstrapActive, v.Phase)
	assert.Contains(t, v.DNSNames(), "api.ocp.lab.local")
}
