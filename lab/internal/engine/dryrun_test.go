package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

func planLines(res *UpResult, s *spec.Spec) string {
	var lines []string
	for _, c := range res.Changes {
		// Paths under the test's temporary directory are not stable.
		lines = append(lines, strings.ReplaceAll(c.String(), filepath.Dir(s.LabDir), "$TMP"))
	}
	return strings.Join(lines, "\n")
}

// `lab up --dry-run` runs Up's own steps over a hypervisor that records
// instead of changing: the plan is what up would do, and nothing changes.
func TestUpDryRunPlansAndChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "dry", false)
	opts := upOpts()
	opts.DryRun = true

	res, err := Up(ctx, hv, s, opts)
	require.NoError(t, err)
	assert.Empty(t, hv.Mutations(), "a dry run changes nothing in libvirt")
	_, statErr := os.Stat(s.LabDir)
	assert.True(t, os.IsNotExist(statErr), "nor on the host: no lab directory, no state")
	testutil.Golden(t, filepath.Join("..", "..", "..", "testdata", "plan", "dryrun-new-lab.golden"), []byte(planLines(res, s)+"\n"))

	// Built for real, the same spec plans nothing.
	opts.DryRun = false
	_, err = Up(ctx, hv, s, opts)
	require.NoError(t, err)
	opts.DryRun = true
	hv.Reset()
	res, err = Up(ctx, hv, s, opts)
	require.NoError(t, err)
	assert.Empty(t, res.Changes)
	assert.False(t, res.Changed)

	// A node left paused: the plan resumes it.
	hv.DomainObjects[s.DomainName(s.Nodes[0])].Paused = true
	res, err = Up(ctx, hv, s, opts)
	require.NoError(t, err)
	assert.Equal(t, []Change{{Action: "resume", Kind: "domain", Name: s.DomainName(s.Nodes[0]), Detail: "paused"}}, res.Changes)
	assert.Empty(t, hv.Mutations())
	hv.DomainObjects[s.DomainName(s.Nodes[0])].Paused = false

	// One node resized, one removed: the plan says what converge would do.
	changed := testSpec(t, "dry", false)
	changed.LabDir, changed.Storage.PoolDir, changed.Network = s.LabDir, s.Storage.PoolDir, s.Network
	changed.Topology = spec.Topology{Masters: 2, Workers: 0}
	changed.Nodes = nil
	changed.Defaults()
	changed.Nodes[1].MemoryMiB = 512
	before, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	res, err = Up(ctx, hv, changed, opts)
	require.NoError(t, err)
	assert.Empty(t, hv.Mutations())
	after, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, before.Updated, after.Updated, "the state is not written")
	testutil.Golden(t, filepath.Join("..", "..", "..", "testdata", "plan", "dryrun-converge.golden"), []byte(planLines(res, changed)+"\n"))
}
