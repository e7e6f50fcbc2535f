package labcmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/labdir"
)

// On the shared fake playing libvirt's test driver (no guests, no load
// balancer) an openshift-profile pivot destroys the bootstrap domain and
// deletes its overlay, keeps the masters and workers, records the pivot,
// and a second pivot changes nothing.
func TestPivotRemovesBootstrapOnOpenShift(t *testing.T) {
	ctx := context.Background()
	conn := fake.New()
	conn.Caps = hypervisor.Capabilities{}

	dir := t.TempDir()
	img := filepath.Join(dir, "base.img")
	require.NoError(t, os.WriteFile(img, make([]byte, 1<<20), 0o644))
	s := &spec.Spec{Name: "pivot-it", Profile: spec.ProfileOpenShift, Libvirt: spec.Libvirt{URI: "test:///default"},
		LabDir: filepath.Join(dir, "lab"), Topology: spec.Topology{Masters: 3, Workers: 1},
		Network: spec.Network{CIDR: "10.125.0.0/24"}, Storage: spec.Storage{PoolDir: filepath.Join(dir, "pool")},
		Image: spec.Image{Path: img}}
	s.OpenShift.PullSecretFile = "/dev/null"
	s.Defaults()
	for i := range s.Nodes {
		s.Nodes[i].DiskGiB = 1 // the test driver's pool is small
	}
	_, err := lab.Up(ctx, conn, s, lab.UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)

	l, err := lab.Open(ctx, s, lab.Options{Connect: hypervisor.Shared(conn)})
	require.NoError(t, err)
	defer l.Close()

	// The dry run: Pivot's own steps, recorded, nothing changed.
	conn.Reset()
	stateBefore, err := os.ReadFile(labdir.StatePath(s.LabDir))
	require.NoError(t, err)
	bootstrap, _ := s.Node("bootstrap")
	plan, err := l.PlanPivot(ctx)
	require.NoError(t, err)
	assert.True(t, plan.Changed)
	assert.Empty(t, plan.RemovedNodes, "nothing removed")
	assert.Equal(t, []lab.Change{
		{Action: "update", Kind: "labDir", Name: labdir.StatePath(s.LabDir), Detail: "the bootstrap is out of the load balancer"},
		{Action: "stop", Kind: "domain", Name: s.DomainName(bootstrap)},
		{Action: "remove", Kind: "domain", Name: s.DomainName(bootstrap)},
		{Action: "remove", Kind: "volume", Name: s.PoolName() + "/" + s.VolumeName(bootstrap)},
	}, plan.Changes)
	assert.Empty(t, conn.Mutations(), "a dry run changes nothing in libvirt")
	stateAfter, err := os.ReadFile(labdir.StatePath(s.LabDir))
	require.NoError(t, err)
	assert.Equal(t, string(stateBefore), string(stateAfter), "nor the lab state")

	res, err := l.Pivot(ctx)
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, []string{"bootstrap"}, res.RemovedNodes)

	_, err = conn.LookupDomain(ctx, s.DomainName(bootstrap))
	assert.True(t, errors.Is(err, hypervisor.ErrNotFound), "bootstrap domain still defined: %v", err)
	vols, err := conn.Volumes(ctx, s.PoolName())
	require.NoError(t, err)
	var names []string
	for _, v := range vols {
		names = append(names, v.Name)
	}
	assert.NotContains(t, names, s.VolumeName(bootstrap))
	for _, n := range s.Nodes {
		if n.Role == spec.RoleBootstrap {
			continue
		}
		d, err := conn.LookupDomain(ctx, s.DomainName(n))
		require.NoError(t, err, "%s must survive the pivot", n.Name)
		assert.True(t, d.Active, n.Name)
		assert.Contains(t, names, s.VolumeName(n))
	}
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.True(t, st.BootstrapRemoved)

	res, err = l.Pivot(ctx)
	require.NoError(t, err, "pivot is idempotent")
	assert.False(t, res.Changed)
	plan, err = l.PlanPivot(ctx)
	require.NoError(t, err)
	assert.False(t, plan.Changed)
	assert.Empty(t, plan.Changes, "and its dry run plans nothing")
}
