package lab_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/spec"
)

// A hard reboot resets the node's VM and nothing else; an unknown node is
// refused naming the lab's nodes, and a node without SSH cannot be
// rebooted gracefully (the error names --hard).
func TestRebootResetsOnlyThatNode(t *testing.T) {
	ctx := context.Background()
	conn := fake.New()
	conn.Caps = hypervisor.Capabilities{}
	dir := t.TempDir()
	img := filepath.Join(dir, "base.img")
	require.NoError(t, os.WriteFile(img, make([]byte, 1<<20), 0o644))
	s := &spec.Spec{Name: "reboot-it", Profile: spec.ProfileOpenShift, Libvirt: spec.Libvirt{URI: "test:///default"},
		LabDir: filepath.Join(dir, "lab"), Topology: spec.Topology{Masters: 1, Workers: 0},
		Network: spec.Network{CIDR: "10.126.0.0/24"}, Storage: spec.Storage{PoolDir: filepath.Join(dir, "pool")},
		Image: spec.Image{Path: img}}
	s.OpenShift.PullSecretFile = "/dev/null"
	s.Defaults()
	for i := range s.Nodes {
		s.Nodes[i].DiskGiB = 1
	}
	_, err := lab.Up(ctx, conn, s, lab.UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	l, err := lab.Open(ctx, s, lab.Options{Connect: hypervisor.Shared(conn)})
	require.NoError(t, err)
	defer l.Close()

	conn.Reset()
	require.NoError(t, l.Reboot(ctx, "master-0", true))
	master, _ := s.Node("master-0")
	assert.Equal(t, []string{"ResetDomain " + s.DomainName(master)}, conn.Mutations())

	conn.Reset()
	err = l.Reboot(ctx, "master-9", true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no node "master-9" in lab reboot-it (nodes: bootstrap, master-0)`)
	err = l.Reboot(ctx, "master-0", false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--hard")
	assert.Empty(t, conn.Mutations(), "a refused reboot changes nothing")
}
