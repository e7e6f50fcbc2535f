package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

// A power reset writes no report: the lab state records it, and status
// shows the node rebooting until a report of its next boot arrives; the
// other nodes stay running, and a checkpoint restore is not needed to end
// it (the next boot's report does).
func TestStatusShowsANodeRebootingAfterAReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := listSpec(t, t.TempDir(), "reset", "10.90.7.0/24")
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	master := s.Nodes[1]
	log := labdir.ConsoleLog(s, master)
	require.NoError(t, os.MkdirAll(filepath.Dir(log), 0o755))
	boot := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	before := wire.Report{Node: master.Name, Boot: boot, Seq: 7}
	require.NoError(t, os.WriteFile(log, before.Line(), 0o600))

	state := func() map[string]string {
		st, err := Inspect(ctx, hv, s)
		require.NoError(t, err)
		out := map[string]string{}
		for _, n := range st.Nodes {
			out[n.Name] = n.State
		}
		return out
	}
	require.Equal(t, "running", state()[master.Name])

	hv.Reset()
	require.NoError(t, ResetNode(ctx, hv, s, master))
	assert.Equal(t, []string{"ResetDomain " + s.DomainName(master)}, hv.Mutations())
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	require.Contains(t, st.Resets, master.Name)
	assert.True(t, st.Resets[master.Name].Boot.Equal(boot), "the record names the boot the reset ended")

	got := state()
	assert.Equal(t, "rebooting", got[master.Name])
	assert.Equal(t, "running", got["bootstrap"], "only the reset node reboots")

	// The boot before writes once more (a line qemu flushed late): still rebooting.
	late := before
	late.Seq = 8
	appendLine(t, log, late.Line())
	assert.Equal(t, "rebooting", state()[master.Name])

	next := wire.Report{Node: master.Name, Boot: time.Now().UTC(), Seq: 1}
	appendLine(t, log, next.Line())
	assert.Equal(t, "running", state()[master.Name], "the next boot's report ends it")
}

// A reset of a node that is not running changes nothing and records
// nothing.
func TestResetOfAStoppedNodeRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := listSpec(t, t.TempDir(), "reset-off", "10.90.8.0/24")
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	master := s.Nodes[1]
	hv.DomainObjects[s.DomainName(master)].Active = false
	require.Error(t, ResetNode(ctx, hv, s, master))
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Empty(t, st.Resets)
}

func TestProbeNodeState(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old := at.Add(-time.Hour)
	reset := &labdir.ResetRecord{At: at, Boot: old}
	for _, tc := range []struct {
		name  string
		rep   *wire.Report
		reset *labdir.ResetRecord
		since time.Time
		want  string
	}{
		{"no report, no reset", nil, nil, time.Time{}, "running"},
		{"reported, no reset", &wire.Report{Boot: old}, nil, time.Time{}, "running"},
		{"its agent reboots it", &wire.Report{Boot: old, Shutdown: "reboot"}, nil, time.Time{}, "rebooting"},
		{"its agent powers it off", &wire.Report{Boot: old, Shutdown: "poweroff"}, nil, time.Time{}, "powering off"},
		{"reset, last report of the boot it ended", &wire.Report{Boot: old}, reset, old, "rebooting"},
		{"reset, no report at all", nil, &labdir.ResetRecord{At: at}, time.Time{}, "rebooting"},
		{"reset, the next boot reported", &wire.Report{Boot: at.Add(time.Minute)}, reset, old, "running"},
		{"reset, a first report after none", &wire.Report{Boot: at.Add(time.Minute)}, &labdir.ResetRecord{At: at}, time.Time{}, "running"},
		{"reset, then its qemu started again", &wire.Report{Boot: old}, reset, at.Add(time.Minute), "running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, probeNodeState(tc.rep, tc.reset, tc.since))
		})
	}
}

func appendLine(t *testing.T, path string, line []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	_, err = f.Write(line)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// power-cycle-master is the trainer's reset of the first master: the same
// reset and record as lab reboot --hard, refused on a lab whose masters
// keep no node disk; undoing it only clears the record (the node boots on
// its own).
func TestBreakPowerCycleMaster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := listSpec(t, t.TempDir(), "cycle", "10.90.8.0/24")
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	target := FaultTarget{Networks: hv, Host: hv.Host()}

	err = BreakFault(ctx, s, target, FaultPowerCycleMaster, time.Now())
	require.Error(t, err, "a probe lab's master keeps no node disk")
	assert.Contains(t, err.Error(), "is not a rehearsal lab")

	s.OpenShift.ManualBootstrap = true
	hv.Reset()
	require.NoError(t, BreakFault(ctx, s, target, FaultPowerCycleMaster, time.Now()))
	master := s.NodesByRole("master")[0]
	assert.Equal(t, []string{"ResetDomain " + s.DomainName(master)}, hv.Mutations())
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Contains(t, st.Resets, master.Name, "status shows it rebooting until it reports")
	active, err := ActiveFaults(s)
	require.NoError(t, err)
	require.Len(t, active, 1)
	assert.Equal(t, FaultPowerCycleMaster, active[0].Name)

	hv.Reset()
	undone, err := UndoFault(ctx, s, target, "")
	require.NoError(t, err)
	assert.Equal(t, []string{FaultPowerCycleMaster}, undone)
	assert.Empty(t, hv.Mutations(), "nothing to undo on the node")
}
