package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

func upForCheckpoint(t *testing.T, hv *fake.Hypervisor) *spec.Spec {
	t.Helper()
	s := testSpec(t, "t", true)
	_, err := Up(context.Background(), hv, s, upOpts())
	require.NoError(t, err)
	return s
}

func TestCheckpointSaveRestoreOnEveryNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := upForCheckpoint(t, hv)
	require.NoError(t, os.MkdirAll(labdir.Stages(s), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(labdir.Stages(s), "01.json"), []byte(`{"stage":1}`), 0o600))

	console := labdir.ConsoleLog(s, s.Nodes[1])
	require.NoError(t, os.MkdirAll(filepath.Dir(console), 0o755))
	require.NoError(t, os.WriteFile(console, []byte("report 1\n"), 0o644))
	consoleBefore, err := os.Stat(console)
	require.NoError(t, err)

	hv.Reset()
	cp, err := SaveCheckpoint(ctx, hv, s, "start", SaveOptions{})
	require.NoError(t, err)
	assert.Len(t, cp.Nodes, 4)
	assert.Equal(t, 4, countPrefix(hv.Mutations(), "CreateSnapshot bootlab-start "), "one snapshot per node")
	info, err := os.Stat(filepath.Join(labdir.Checkpoint(s, "start"), "state.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the copied state keeps its mode")

	// Break the lab: a node off, a new stage record, the state changed.
	master := s.DomainName(s.Nodes[1])
	require.NoError(t, hv.DestroyDomain(ctx, master))
	require.NoError(t, os.WriteFile(filepath.Join(labdir.Stages(s), "02.json"), []byte(`{"stage":2}`), 0o600))
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	st.BootstrapRemoved = true
	require.NoError(t, st.Save(s.LabDir))
	require.NoError(t, os.WriteFile(console, []byte("report 1\nreport 2 of the broken run\n"), 0o644))

	hv.Reset()
	_, err = RestoreCheckpoint(ctx, hv, s, "start", RestoreOptions{SkipLoadBalancer: true})
	require.NoError(t, err)
	assert.Equal(t, 4, countPrefix(hv.Mutations(), "RevertSnapshot bootlab-start "))
	assert.True(t, hv.DomainObjects[master].Active, "the node runs again, as it did at the checkpoint")
	_, err = os.Stat(filepath.Join(labdir.Stages(s), "02.json"))
	assert.True(t, os.IsNotExist(err), "a stage record made after the checkpoint is gone")
	data, err := os.ReadFile(filepath.Join(labdir.Stages(s), "01.json"))
	require.NoError(t, err)
	assert.Equal(t, `{"stage":1}`, string(data))
	st2, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.False(t, st2.BootstrapRemoved, "the state is the checkpoint's")
	assert.Equal(t, st.UUID, st2.UUID, "the lab keeps its identity")
	assert.Equal(t, st.NetworkUUID, st2.NetworkUUID)
	require.NotNil(t, st2.Restored, "the restore is recorded for status and verify")
	assert.Equal(t, "start", st2.Restored.Checkpoint)
	assert.False(t, st2.Restored.Finished.Before(st2.Restored.Started))

	data, err = os.ReadFile(console)
	require.NoError(t, err)
	assert.Equal(t, "report 1\n", string(data), "the console log is the checkpoint's")
	consoleAfter, err := os.Stat(console)
	require.NoError(t, err)
	assert.True(t, os.SameFile(consoleBefore, consoleAfter), "rewritten in place: virtlogd keeps appending to it")
}

func TestRestoreRecordResumed(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	r := &labdir.RestoreRecord{Started: t0, Finished: t0.Add(5 * time.Second)}
	assert.True(t, r.Resumed(t0.Add(2*time.Second)), "started by the restore")
	assert.False(t, r.Resumed(t0.Add(-time.Hour)), "running since before the restore: reverted in its own qemu")
	assert.False(t, r.Resumed(t0.Add(time.Minute)), "started again after the restore: a fresh boot")
	assert.False(t, r.Resumed(time.Time{}))
	assert.False(t, (*labdir.RestoreRecord)(nil).Resumed(t0))
}

func TestCheckpointListDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := upForCheckpoint(t, hv)
	master := s.DomainName(s.Nodes[1])
	// A snapshot somebody else took is neither listed nor deleted.
	require.NoError(t, hv.CreateSnapshot(ctx, master, `<domainsnapshot><name>mine</name></domainsnapshot>`))
	require.NoError(t, hv.CreateSnapshot(ctx, master, `<domainsnapshot><name>bootlab-fake</name><description>bootlab checkpoint=fake lab=other uuid=x</description></domainsnapshot>`))

	_, err := SaveCheckpoint(ctx, hv, s, "a", SaveOptions{})
	require.NoError(t, err)
	require.NoError(t, hv.DestroyDomain(ctx, master))
	_, err = SaveCheckpoint(ctx, hv, s, "b", SaveOptions{})
	require.NoError(t, err)

	cps, err := ListCheckpoints(ctx, hv, s)
	require.NoError(t, err)
	require.Len(t, cps, 2)
	assert.Equal(t, "a", cps[0].Name)
	assert.Equal(t, "b", cps[1].Name)
	assert.Equal(t, "running", cps[0].Nodes[master])
	assert.Equal(t, "shutoff", cps[1].Nodes[master])
	assert.Empty(t, cps[0].Missing)

	require.NoError(t, DeleteCheckpoint(ctx, hv, s, "a"))
	cps, err = ListCheckpoints(ctx, hv, s)
	require.NoError(t, err)
	require.Len(t, cps, 1)
	assert.Equal(t, "b", cps[0].Name)
	_, err = os.Stat(labdir.Checkpoint(s, "a"))
	assert.True(t, os.IsNotExist(err))
	assert.Len(t, hv.DomainSnapshots[master], 3, "mine, bootlab-fake and b")

	err = DeleteCheckpoint(ctx, hv, s, "a")
	assert.ErrorContains(t, err, "lab t has no checkpoint a")

	// A checkpoint whose snapshot vanished is listed as incomplete and not restored.
	require.NoError(t, hv.DeleteSnapshot(ctx, master, "bootlab-b"))
	cps, err = ListCheckpoints(ctx, hv, s)
	require.NoError(t, err)
	assert.Equal(t, []string{master}, cps[0].Missing)
	_, err = RestoreCheckpoint(ctx, hv, s, "b", RestoreOptions{SkipLoadBalancer: true})
	assert.ErrorContains(t, err, "checkpoint b of lab t is incomplete (missing: bootlab-t-master-0)")
}

func TestCheckpointRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := upForCheckpoint(t, hv)
	for _, bad := range []string{"", "Before", "a_b", "-a", "a-", "a.b", string(make([]byte, 64))} {
		_, err := SaveCheckpoint(ctx, hv, s, bad, SaveOptions{})
		assert.ErrorContains(t, err, "is not a DNS label", "%q", bad)
	}
	_, err := SaveCheckpoint(ctx, hv, s, "x", SaveOptions{})
	require.NoError(t, err)
	_, err = SaveCheckpoint(ctx, hv, s, "x", SaveOptions{})
	assert.ErrorContains(t, err, "checkpoint x of lab t exists: restore it, or delete it first (bootlab lab checkpoint delete x)")
	_, err = RestoreCheckpoint(ctx, hv, s, "nope", RestoreOptions{SkipLoadBalancer: true})
	assert.ErrorContains(t, err, "lab t has no checkpoint nope: `bootlab lab checkpoint list` shows them")
}

func TestCheckpointSaveFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := upForCheckpoint(t, hv)
	hv.FailOn = "CreateSnapshot bootlab-x " + s.DomainName(s.Nodes[2])
	_, err := SaveCheckpoint(ctx, hv, s, "x", SaveOptions{})
	require.ErrorContains(t, err, "injected failure")
	for d, snaps := range hv.DomainSnapshots {
		assert.Empty(t, snaps, "%s keeps no snapshot of the failed save", d)
	}
	_, err = os.Stat(labdir.Checkpoint(s, "x"))
	assert.True(t, os.IsNotExist(err))
	entries, _ := os.ReadDir(filepath.Join(s.LabDir, "checkpoints"))
	assert.Empty(t, entries, "no partial directory left")
}

func TestDownDeletesCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := upForCheckpoint(t, hv)
	_, err := SaveCheckpoint(ctx, hv, s, "a", SaveOptions{})
	require.NoError(t, err)
	_, err = SaveCheckpoint(ctx, hv, s, "b", SaveOptions{})
	require.NoError(t, err)
	_, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	assert.Empty(t, hv.DomainObjects, "every domain undefined (the fake, like libvirt, refuses one with snapshots)")
	_, err = os.Stat(filepath.Join(s.LabDir, "checkpoints"))
	assert.True(t, os.IsNotExist(err), "checkpoint files removed")
}

func TestInspectSinceUnknownForNodeResumedByRestore(t *testing.T) {
	// Not parallel: it points the package variable qemuRunDir elsewhere.
	ctx := context.Background()
	hv := fake.New()
	s := upForCheckpoint(t, hv) // qemu:///system: Since comes from qemu's pid files
	old := qemuRunDir
	qemuRunDir = t.TempDir()
	t.Cleanup(func() { qemuRunDir = old })
	pidAt := func(n spec.Node, at time.Time) {
		p := filepath.Join(qemuRunDir, s.DomainName(n)+".pid")
		require.NoError(t, os.WriteFile(p, []byte("1\n"), 0o644))
		require.NoError(t, os.Chtimes(p, at, at))
	}
	_, err := SaveCheckpoint(ctx, hv, s, "a", SaveOptions{})
	require.NoError(t, err)
	master, bootstrap := s.Nodes[1], s.Nodes[0]
	require.NoError(t, hv.DestroyDomain(ctx, s.DomainName(master)))
	_, err = RestoreCheckpoint(ctx, hv, s, "a", RestoreOptions{SkipLoadBalancer: true})
	require.NoError(t, err)
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	pidAt(master, st.Restored.Started.Add(time.Millisecond)) // started by the restore
	hourAgo := time.Now().Add(-time.Hour).Truncate(time.Second)
	pidAt(bootstrap, hourAgo) // reverted in its own, older qemu

	ls, err := Inspect(ctx, hv, s)
	require.NoError(t, err)
	since := map[string]time.Time{}
	for _, n := range ls.Nodes {
		since[n.Name] = n.Since
	}
	assert.True(t, since[master.Name].IsZero(), "the resumed node's run began before its qemu: unknown")
	assert.True(t, since[bootstrap.Name].Equal(hourAgo), "a node the restore did not restart keeps its qemu's start: %v", since[bootstrap.Name])
}

func TestCheckpointOfOneNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := upForCheckpoint(t, hv)
	boot, master := s.Nodes[0], s.Nodes[1]
	require.Equal(t, spec.RoleBootstrap, boot.Role)
	for _, n := range []spec.Node{boot, master} {
		require.NoError(t, os.MkdirAll(filepath.Dir(labdir.ConsoleLog(s, n)), 0o755))
		require.NoError(t, os.WriteFile(labdir.ConsoleLog(s, n), []byte(n.Name+" 1\n"), 0o644))
	}

	hv.Reset()
	cp, err := SaveCheckpoint(ctx, hv, s, "before-07", SaveOptions{Nodes: []string{"bootstrap"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{s.DomainName(boot): "running"}, cp.Nodes)
	assert.Equal(t, []string{"CreateSnapshot bootlab-before-07 " + s.DomainName(boot)}, hv.Mutations())
	assert.FileExists(t, filepath.Join(labdir.Checkpoint(s, "before-07"), consoleDir, "bootstrap.log"))
	assert.NoFileExists(t, filepath.Join(labdir.Checkpoint(s, "before-07"), consoleDir, master.Name+".log"),
		"only the console log of a node the checkpoint reverts")

	// The master goes on; restoring the bootstrap's checkpoint leaves its log alone.
	for _, n := range []spec.Node{boot, master} {
		require.NoError(t, os.WriteFile(labdir.ConsoleLog(s, n), []byte(n.Name+" 1\n"+n.Name+" 2\n"), 0o644))
	}
	hv.Reset()
	_, err = RestoreCheckpoint(ctx, hv, s, "before-07", RestoreOptions{SkipLoadBalancer: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"RevertSnapshot bootlab-before-07 " + s.DomainName(boot)}, hv.Mutations())
	data, err := os.ReadFile(labdir.ConsoleLog(s, boot))
	require.NoError(t, err)
	assert.Equal(t, "bootstrap 1\n", string(data))
	data, err = os.ReadFile(labdir.ConsoleLog(s, master))
	require.NoError(t, err)
	assert.Equal(t, master.Name+" 1\n"+master.Name+" 2\n", string(data))

	// A name in use is refused, unless replaced.
	_, err = SaveCheckpoint(ctx, hv, s, "before-07", SaveOptions{Nodes: []string{"bootstrap"}})
	assert.ErrorContains(t, err, "checkpoint before-07 of lab t exists")
	hv.Reset()
	_, err = SaveCheckpoint(ctx, hv, s, "before-07", SaveOptions{Nodes: []string{"bootstrap"}, Replace: true})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"DeleteSnapshot bootlab-before-07 " + s.DomainName(boot),
		"CreateSnapshot bootlab-before-07 " + s.DomainName(boot),
	}, hv.Mutations(), "the old snapshot is deleted, a new one taken")
	cps, err := ListCheckpoints(ctx, hv, s)
	require.NoError(t, err)
	require.Len(t, cps, 1)
	assert.Empty(t, cps[0].Missing)

	_, err = SaveCheckpoint(ctx, hv, s, "x", SaveOptions{Nodes: []string{"nosuch"}})
	assert.ErrorContains(t, err, "lab t has no VM bootlab-t-nosuch to checkpoint (node nosuch)")
}

// On a remote hypervisor the console logs are on its machine: a checkpoint
// reads them there and a restore rewrites them there, never in the lab
// directory.
func TestCheckpointConsoleLogsOfARemoteLab(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	hv.Machine = fake.NewMachine(true)
	s := testSpec(t, "t", true)
	s.Libvirt.URI = "qemu+ssh://root@hypervisor/system"
	s.Libvirt.HostDir = "/srv/bootlab/t"
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	console := labdir.ConsoleLog(s, s.Nodes[1])
	assert.Equal(t, "/srv/bootlab/t/console/"+s.Nodes[1].Name+".log", console)
	hv.Machine.Files[console] = []byte("before\n")

	_, err = SaveCheckpoint(ctx, hv, s, "a", SaveOptions{})
	require.NoError(t, err)
	saved, err := os.ReadFile(filepath.Join(labdir.Checkpoint(s, "a"), consoleDir, s.Nodes[1].Name+".log"))
	require.NoError(t, err)
	assert.Equal(t, "before\n", string(saved))

	hv.Machine.Files[console] = []byte("before\nafter\n")
	_, err = RestoreCheckpoint(ctx, hv, s, "a", RestoreOptions{SkipLoadBalancer: true})
	require.NoError(t, err)
	assert.Equal(t, "before\n", string(hv.Machine.Files[console]), "rewritten on the hypervisor's machine")
	_, err = os.Stat(filepath.Join(s.LabDir, consoleDir))
	assert.True(t, os.IsNotExist(err), "nothing written to the lab directory")
}
