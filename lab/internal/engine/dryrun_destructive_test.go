package engine

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/probe"
)

func changeLines(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Action+" "+c.Kind+" "+c.Name)
	}
	sort.Strings(out)
	return out
}

// The lock is a file: a dry run of a lab whose directory exists (a lab
// after `down --keep-images`, or one a user made) must not create it.
func TestUpDryRunTakesNoLock(t *testing.T) {
	t.Parallel()
	hv := fake.New()
	s := testSpec(t, "dry", false)
	require.NoError(t, os.MkdirAll(s.LabDir, 0o755))
	root := filepath.Dir(s.LabDir)
	before := testutil.Tree(t, root)
	opts := upOpts()
	opts.DryRun = true
	res, err := Up(context.Background(), hv, s, opts)
	require.NoError(t, err)
	assert.NotEmpty(t, res.Changes)
	assert.Empty(t, hv.Mutations())
	assert.Equal(t, before, testutil.Tree(t, root), "a dry run writes nothing, not even the lock")
	assert.NoFileExists(t, labdir.LockPath(s.LabDir))
}

// `lab down --dry-run` is Down's own steps over the planning hypervisor:
// it lists what down then removes, and removes nothing.
func TestPlanDownListsWhatDownRemoves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	_, err = SaveCheckpoint(ctx, hv, s, "start", SaveOptions{})
	require.NoError(t, err)
	root := filepath.Dir(s.LabDir)
	before := testutil.Tree(t, root)
	hv.Reset()

	changes, err := PlanDown(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	assert.Empty(t, hv.Mutations(), "a dry run changes nothing in libvirt")
	assert.Equal(t, before, testutil.Tree(t, root), "nor a file")
	lines := changeLines(changes)
	for _, n := range s.Nodes {
		assert.Contains(t, lines, "remove domain "+s.DomainName(n))
		assert.Contains(t, lines, "remove snapshot "+s.DomainName(n)+"/bootlab-start")
	}
	for _, want := range []string{"remove network bootlab-t", "remove pool bootlab-t", "remove volume bootlab-t/base.qcow2",
		"remove labDir " + labdir.StatePath(s.LabDir), "remove labDir " + labdir.Checkpoints(s)} {
		assert.Contains(t, lines, want)
	}

	// Down removes what the plan said: every domain, the network, the pool.
	_, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	for _, n := range s.Nodes {
		assert.Contains(t, hv.Mutations(), "UndefineDomain "+s.DomainName(n))
	}
	// Of a lab that is gone, a dry run plans nothing.
	changes, err = PlanDown(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	assert.Empty(t, changes)
}

// Checkpoint restore and delete have dry runs that refuse what they refuse
// and change neither libvirt nor a file.
func TestPlanCheckpointRestoreAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := upForCheckpoint(t, hv)
	_, err := SaveCheckpoint(ctx, hv, s, "start", SaveOptions{})
	require.NoError(t, err)
	root := filepath.Dir(s.LabDir)
	before := testutil.Tree(t, root)
	hv.Reset()

	restore, err := PlanRestoreCheckpoint(ctx, hv, s, "start", RestoreOptions{SkipLoadBalancer: true})
	require.NoError(t, err)
	del, err := PlanDeleteCheckpoint(ctx, hv, s, "start")
	require.NoError(t, err)
	assert.Empty(t, hv.Mutations())
	assert.Equal(t, before, testutil.Tree(t, root))
	rl, dl := changeLines(restore), changeLines(del)
	for _, n := range s.Nodes {
		assert.Contains(t, rl, "revert snapshot "+s.DomainName(n)+"/bootlab-start")
		assert.Contains(t, dl, "remove snapshot "+s.DomainName(n)+"/bootlab-start")
	}
	assert.Contains(t, rl, "replace labDir "+labdir.StatePath(s.LabDir))
	assert.Contains(t, dl, "remove labDir "+labdir.Checkpoint(s, "start"))

	_, planErr := PlanRestoreCheckpoint(ctx, hv, s, "nosuch", RestoreOptions{})
	_, realErr := RestoreCheckpoint(ctx, hv, s, "nosuch", RestoreOptions{})
	require.Error(t, planErr)
	assert.Equal(t, realErr.Error(), planErr.Error(), "restore's dry run fails as restore does")
	_, planErr = PlanDeleteCheckpoint(ctx, hv, s, "nosuch")
	realErr = DeleteCheckpoint(ctx, hv, s, "nosuch")
	require.Error(t, planErr)
	assert.Equal(t, realErr.Error(), planErr.Error(), "delete's dry run fails as delete does")
}

// PlanBuild plans what the preparer would make before Up's own plan, and
// makes none of it: no lab directory, no key, no PKI, no Ignition.
func TestPlanBuildPlansThePreparerAndWritesNothing(t *testing.T) {
	t.Parallel()
	hv := fake.New()
	s := testSpec(t, "pb", true)
	s.Profile = spec.ProfileProbe
	boot := filepath.Dir(s.LabDir)
	for _, f := range []string{"vmlinuz", "initrd"} {
		require.NoError(t, os.WriteFile(filepath.Join(boot, f), []byte(f), 0o644))
	}
	s.Image.Kernel, s.Image.Initrd = filepath.Join(boot, "vmlinuz"), filepath.Join(boot, "initrd")
	before := testutil.Tree(t, boot)
	connect := hypervisor.Shared(hv)
	plan, err := PlanBuild(context.Background(), s, BuildOptions{Connect: connect, NoPreflight: true, Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	lines := changeLines(plan.Changes)
	assert.Contains(t, lines, "create sshKey "+labdir.SSHKey(s))
	assert.Contains(t, lines, "create pki "+labdir.PKI(s))
	assert.Contains(t, lines, "create ignition "+labdir.Ignition(s, s.Nodes[0]))
	assert.Contains(t, lines, "define network bootlab-pb")
	assert.NotContains(t, lines, "build probeImage "+filepath.Join(probe.DefaultCacheDir(), "probe"), "the spec names its own kernel and initrd")
	assert.Equal(t, "create sshKey", plan.Changes[0].Action+" "+plan.Changes[0].Kind, "the preparer's changes come first, as Build makes them first")
	assert.Empty(t, hv.Mutations())
	assert.Equal(t, before, testutil.Tree(t, boot))
}

// A plan of down reads in one order, though down removes domains in
// parallel: node by node (stop, snapshots, domain), then the rest as the
// steps run.
func TestSortedDownChanges(t *testing.T) {
	t.Parallel()
	in := []Change{
		{Action: "stop", Kind: "domain", Name: "bootlab-t-master-1"},
		{Action: "stop", Kind: "domain", Name: "bootlab-t-master-0"},
		{Action: "remove", Kind: "snapshot", Name: "bootlab-t-master-1/bootlab-start"},
		{Action: "remove", Kind: "domain", Name: "bootlab-t-master-1"},
		{Action: "remove", Kind: "snapshot", Name: "bootlab-t-master-0/bootlab-start"},
		{Action: "remove", Kind: "domain", Name: "bootlab-t-master-0"},
		{Action: "remove", Kind: "volume", Name: "bootlab-t/master-0.qcow2"},
		{Action: "remove", Kind: "network", Name: "bootlab-t"},
	}
	var got []string
	for _, c := range sortedDownChanges(in) {
		got = append(got, c.Action+" "+c.Kind+" "+c.Name)
	}
	assert.Equal(t, []string{
		"stop domain bootlab-t-master-0",
		"remove snapshot bootlab-t-master-0/bootlab-start",
		"remove domain bootlab-t-master-0",
		"stop domain bootlab-t-master-1",
		"remove snapshot bootlab-t-master-1/bootlab-start",
		"remove domain bootlab-t-master-1",
		"remove volume bootlab-t/master-0.qcow2",
		"remove network bootlab-t",
	}, got)
}
