package stagecmd

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/stages"
	"github.com/bootlab/bootlab/stages/stagestest"
)

// fakeCheckpoints stands in for the lab's libvirt snapshots.
type fakeCheckpoints struct {
	cps   map[string]*lab.Checkpoint
	calls []string
	now   func() time.Time
}

func newFakeCheckpoints() *fakeCheckpoints {
	return &fakeCheckpoints{cps: map[string]*lab.Checkpoint{}, now: time.Now}
}

func (c *fakeCheckpoints) List(context.Context) ([]lab.Checkpoint, error) {
	var out []lab.Checkpoint
	for _, cp := range c.cps {
		out = append(out, *cp)
	}
	return out, nil
}

func (c *fakeCheckpoints) SaveBootstrap(_ context.Context, name string, replace bool) (*lab.Checkpoint, error) {
	verb := "save"
	if replace {
		verb = "replace"
	}
	c.calls = append(c.calls, verb+" "+name)
	c.cps[name] = &lab.Checkpoint{Name: name, Created: c.now(), Nodes: map[string]string{"bootlab-stagetest-bootstrap": "running"}}
	return c.cps[name], nil
}

func (c *fakeCheckpoints) Restore(_ context.Context, name string) (*lab.Checkpoint, error) {
	c.calls = append(c.calls, "restore "+name)
	return c.cps[name], nil
}

func (c *fakeCheckpoints) PlanRestore(_ context.Context, name string) ([]lab.Change, error) {
	c.calls = append(c.calls, "plan restore "+name)
	return []lab.Change{{Action: "revert", Kind: "snapshot", Name: "bootlab-stagetest-bootstrap/" + name}}, nil
}

func (c *fakeCheckpoints) connect(context.Context, *cmdutil.Factory, *spec.Spec) (checkpointer, func(), error) {
	return c, func() {}, nil
}

// rehearsalUUID is the identity of rehearsalEnv's lab.
const rehearsalUUID = "5f0c7a52-7a43-4c36-9d0e-3f1b8c2d6e01"

// rehearsalEnv is an env whose lab is up: a rehearsal lab (the state
// records its spec), its bootstrap a fake node.
func rehearsalEnv(t *testing.T, specExtra string) (*env, *bytes.Buffer) {
	t.Helper()
	e := newEnv(t)
	require.NoError(t, os.WriteFile(e.spec, []byte("name: stagetest\nlabDir: "+e.labDir+"\nopenshift: {manualBootstrap: true}\n"+specExtra), 0o600))
	s, err := spec.Load(e.spec)
	require.NoError(t, err)
	s.Defaults()
	require.True(t, s.Rehearsal())
	require.NoError(t, (&labdir.State{Name: s.Name, UUID: rehearsalUUID, Spec: s}).Save(e.labDir))
	var say bytes.Buffer
	e.f.Status = status.New(&say, false)
	return e, &say
}

func runCmd(e *env, node *stagestest.Node, cps *fakeCheckpoints) *cobra.Command {
	var cmd *cobra.Command
	cmd = NewCmdRun(e.f, func(o *RunOptions) error {
		o.Target.Node = node
		o.Checkpoints = cps.connect
		return runRun(cmd, e.f, o)
	})
	return cmd
}

func resetCmd(e *env, cps *fakeCheckpoints) *cobra.Command {
	return NewCmdReset(e.f, func(o *ResetOptions) error {
		o.Checkpoints = cps.connect
		return runReset(context.Background(), e.f, o)
	})
}

func TestRunTakesBeforeCheckpointOnce(t *testing.T) {
	e, say := rehearsalEnv(t, "")
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.FinishBefore(stages.Default(), 7))
	fail := true
	node.Script = func(string, io.Writer) int {
		if fail {
			return 1
		}
		return 0
	}
	cps := newFakeCheckpoints()

	// First run of 07: before-07 is taken, then the stage fails.
	require.Error(t, execute(runCmd(e, node, cps), "-f", e.spec, "07"))
	assert.Equal(t, []string{"save before-07"}, cps.calls)
	assert.Regexp(t, `checkpoint before-07 saved \(\d+\.\d s\)\n`, say.String())

	// The rerun after the failure keeps the point before the first try.
	cps.calls, fail = nil, false
	say.Reset()
	require.NoError(t, execute(runCmd(e, node, cps), "-f", e.spec, "07"))
	assert.Empty(t, cps.calls, "before-07 kept")
	assert.Contains(t, say.String(), "checkpoint before-07 kept (taken ")
	assert.Contains(t, say.String(), "stage 07 started since and did not finish")

	// After a reset (the records are the checkpoint's again: nothing of
	// 07 since) the next run takes it anew.
	require.NoError(t, os.Remove(filepath.Join(e.labDir, "stages", stages.RecordsFile)))
	cps.calls = nil
	require.NoError(t, execute(runCmd(e, node, cps), "-f", e.spec, "07"))
	assert.Equal(t, []string{"replace before-07"}, cps.calls)

	// With the stage done and --force, there is no "before" to take.
	require.NoError(t, node.Touch("/opt/openshift/etcd-bootstrap.done"))
	delete(cps.cps, "before-07")
	cps.calls = nil
	say.Reset()
	require.NoError(t, execute(runCmd(e, node, cps), "-f", e.spec, "07", "--force"))
	assert.Empty(t, cps.calls)
	assert.Contains(t, say.String(), "no checkpoint before-07: stage 07 has already run (its markers exist)")

	// A range is checkpointed before its first stage with work to do.
	cps.calls = nil
	require.NoError(t, execute(runCmd(e, node, cps), "-f", e.spec, "--from", "07", "--to", "08"))
	assert.Equal(t, []string{"save before-08"}, cps.calls)
}

func TestRunWithoutCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		args       []string
		why        string
	}{
		{"flag", "", []string{"--no-checkpoint"}, "stage run --no-checkpoint"},
		{"spec", "stages: {checkpoints: false}\n", nil, "stages.checkpoints: false in the lab spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, say := rehearsalEnv(t, tc.spec)
			node := stagestest.New(t.TempDir())
			require.NoError(t, node.FinishBefore(stages.Default(), 7))
			cps := newFakeCheckpoints()
			require.NoError(t, execute(runCmd(e, node, cps), append([]string{"-f", e.spec, "07"}, tc.args...)...))
			assert.Empty(t, cps.calls)
			assert.Contains(t, say.String(), "no checkpoint before-07: "+tc.why)

			cps.cps["before-05"] = &lab.Checkpoint{Name: "before-05"}
			cps.cps["start"] = &lab.Checkpoint{Name: "start"}
			err := execute(resetCmd(e, cps), "-f", e.spec, "07")
			assert.EqualError(t, err, "lab stagetest has no checkpoint before-07: the stage ran without one ("+tc.why+"); it has before-05 (`bootlab stage reset NN` for one of them); `bootlab lab checkpoint list` shows every checkpoint")
			assert.Equal(t, cmdutil.ExitError, exitCode(err))
		})
	}
}

func TestRunTakesNoCheckpointOffTheLab(t *testing.T) {
	e, say := rehearsalEnv(t, "")
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.FinishBefore(stages.Default(), 7))
	cps := newFakeCheckpoints()
	require.NoError(t, execute(runCmd(e, node, cps), "-f", e.spec, "07", "--host", "192.0.2.7"))
	assert.Empty(t, cps.calls)
	assert.Contains(t, say.String(), "no checkpoint: --host 192.0.2.7 is not the bootstrap node of lab stagetest")

	// No lab at all (--host on a bare node): nothing to say.
	e2 := newEnv(t)
	require.NoError(t, execute(runCmd(e2, node, cps), "-f", e2.spec, "07", "--host", "192.0.2.7"))
	assert.Empty(t, cps.calls)
}

func TestReset(t *testing.T) {
	e, say := rehearsalEnv(t, "")
	cps := newFakeCheckpoints()
	cps.cps["before-07"] = &lab.Checkpoint{Name: "before-07"}
	// --dry-run: the restore's plan, nothing restored.
	require.NoError(t, execute(resetCmd(e, cps), "-f", e.spec, "etcd-bootstrap", "--dry-run"))
	assert.Equal(t, []string{"plan restore before-07"}, cps.calls)
	assert.Equal(t, "stage reset 07 would make these changes to lab stagetest (nothing was changed):\n  revert    snapshot     bootlab-stagetest-bootstrap/before-07\n", e.out.String())
	assert.Empty(t, say.String())
	err := execute(resetCmd(e, cps), "-f", e.spec, "08", "--dry-run")
	assert.EqualError(t, err, "lab stagetest has no checkpoint before-08: `bootlab stage run` takes it before the stage when the stage runs first in a run; it has before-07 (`bootlab stage reset NN` for one of them)", "refused as the reset is")
	cps.calls = nil

	require.NoError(t, execute(resetCmd(e, cps), "-f", e.spec, "etcd-bootstrap"))
	assert.Equal(t, []string{"restore before-07"}, cps.calls)
	assert.Contains(t, say.String(), "next: bootlab stage run 07")

	err = execute(resetCmd(e, cps), "-f", e.spec, "08")
	assert.EqualError(t, err, "lab stagetest has no checkpoint before-08: `bootlab stage run` takes it before the stage when the stage runs first in a run; it has before-07 (`bootlab stage reset NN` for one of them)")

	err = execute(resetCmd(e, cps), "-f", e.spec, "99")
	assert.Equal(t, cmdutil.ExitUsage, exitCode(err))
	err = execute(resetCmd(e, cps), "-f", e.spec)
	assert.Equal(t, cmdutil.ExitUsage, exitCode(err))

	// A lab never brought up, a probe lab without stages.
	e2 := newEnv(t)
	err = execute(resetCmd(e2, cps), "-f", e2.spec, "07")
	assert.ErrorIs(t, err, labdir.ErrNoState)
	s := &spec.Spec{Name: "stagetest", LabDir: e2.labDir}
	s.Defaults()
	require.NoError(t, (&labdir.State{Spec: s}).Save(e2.labDir))
	err = execute(resetCmd(e2, cps), "-f", e2.spec, "07")
	assert.Equal(t, cmdutil.ExitInvalid, exitCode(err))
	assert.ErrorContains(t, err, "it runs no stages, so it has no before-NN checkpoints")
}

func TestDecideCheckpoint(t *testing.T) {
	s := &stages.Stage{Number: 7, Slug: "etcd-bootstrap", Done: []string{"etcd-bootstrap.done"}}
	old := &lab.Checkpoint{Name: "before-07", Created: time.Now()}
	broken := &lab.Checkpoint{Name: "before-07", Missing: []string{"files"}}
	for _, tc := range []struct {
		name        string
		old         *lab.Checkpoint
		done, since bool
		want        checkpointAction
	}{
		{"first run", nil, false, false, cpSave},
		{"already done, none taken", nil, true, false, cpNone},
		{"rerun after a failure", old, false, true, cpKeep},
		{"forced rerun of a done stage", old, true, true, cpKeep},
		{"done, records lost", old, true, false, cpKeep},
		{"back here another way (reset to an earlier stage)", old, false, false, cpReplace},
		{"incomplete one, stage not run", broken, false, true, cpReplace},
		{"incomplete one, stage done", broken, true, false, cpNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := decideCheckpoint(s, tc.old, tc.done, tc.since)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestStartedSince(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	got, err := startedSince(dir, "lab-a", 7, t0)
	require.NoError(t, err)
	assert.False(t, got, "no records")
	appendRecords := func(labUUID string, recs ...stages.Record) {
		f, err := os.OpenFile(filepath.Join(dir, stages.RecordsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		require.NoError(t, err)
		w := &stages.JSONLines{W: f, LabUUID: labUUID}
		for _, r := range recs {
			require.NoError(t, w.Record(r))
		}
		require.NoError(t, f.Close())
	}
	appendRecords("lab-a",
		stages.Record{Timestamp: t0.Add(-time.Minute), Phase: stages.PhaseStart, Number: 7},
		stages.Record{Timestamp: t0.Add(time.Minute), Phase: stages.PhaseStart, Number: 6},
		stages.Record{Timestamp: t0.Add(time.Minute), Phase: stages.PhaseSkip, Number: 7})
	got, err = startedSince(dir, "lab-a", 7, t0)
	require.NoError(t, err)
	assert.False(t, got, "07 started only before; 06 and a skip do not count")

	// Another lab of the same name (an earlier one) started 07 since: not
	// this lab's run, and so is one written before records named their lab.
	appendRecords("lab-b", stages.Record{Timestamp: t0.Add(2 * time.Minute), Phase: stages.PhaseStart, Number: 7})
	appendRecords("", stages.Record{Timestamp: t0.Add(2 * time.Minute), Phase: stages.PhaseStart, Number: 8})
	got, err = startedSince(dir, "lab-a", 7, t0)
	require.NoError(t, err)
	assert.False(t, got, "another lab's records do not count")
	got, err = startedSince(dir, "lab-b", 7, t0)
	require.NoError(t, err)
	assert.True(t, got, "for lab-b they do")

	appendRecords("lab-a", stages.Record{Timestamp: t0.Add(2 * time.Minute), Phase: stages.PhaseStart, Number: 13})
	got, err = startedSince(dir, "lab-a", 7, t0)
	require.NoError(t, err)
	assert.True(t, got, "the node's script started at 13 ran 07's pending steps too")
}
