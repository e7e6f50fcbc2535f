package stagecmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/stages"
)

// AutoCheckpoint is what `stage run` needs for its automatic before-NN
// checkpoint of the bootstrap node (docs/checkpoints.md, "Before each
// stage run").
type AutoCheckpoint struct {
	// NoCheckpoint is --no-checkpoint: this run takes none.
	NoCheckpoint bool
	// Checkpoints replaces the lab's libvirt (tests); nil: the lab's URI.
	Checkpoints func(ctx context.Context, f *cmdutil.Factory, spec *spec.Spec) (checkpointer, func(), error)
}

// checkpointer is the part of lab's checkpoints stage run and reset use.
type checkpointer interface {
	List(ctx context.Context) ([]lab.Checkpoint, error)
	// SaveBootstrap checkpoints the bootstrap node as name (replace: a
	// checkpoint of that name is deleted first).
	SaveBootstrap(ctx context.Context, name string, replace bool) (*lab.Checkpoint, error)
	Restore(ctx context.Context, name string) (*lab.Checkpoint, error)
	// PlanRestore is what Restore would change, changing nothing.
	PlanRestore(ctx context.Context, name string) ([]lab.Change, error)
}

// labCheckpoints are a lab's checkpoints through its handle.
type labCheckpoints struct {
	l *lab.Lab
}

func (c *labCheckpoints) List(ctx context.Context) ([]lab.Checkpoint, error) {
	return c.l.Checkpoints(ctx)
}

func (c *labCheckpoints) SaveBootstrap(ctx context.Context, name string, replace bool) (*lab.Checkpoint, error) {
	var nodes []string
	for _, n := range c.l.Spec().NodesByRole(spec.RoleBootstrap) {
		nodes = append(nodes, n.Name)
	}
	return c.l.Checkpoint(ctx, name, lab.SaveOptions{Nodes: nodes, Replace: replace})
}

func (c *labCheckpoints) Restore(ctx context.Context, name string) (*lab.Checkpoint, error) {
	return c.l.Restore(ctx, name, lab.RestoreOptions{})
}

func (c *labCheckpoints) PlanRestore(ctx context.Context, name string) ([]lab.Change, error) {
	return c.l.PlanRestore(ctx, name, lab.RestoreOptions{})
}

// connectCheckpoints opens the lab; its hypervisor is connected on the
// first call.
func connectCheckpoints(ctx context.Context, f *cmdutil.Factory, spec *spec.Spec) (checkpointer, func(), error) {
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	return &labCheckpoints{l: l}, func() { _ = l.Close() }, nil
}

func (a *AutoCheckpoint) connect(ctx context.Context, f *cmdutil.Factory, spec *spec.Spec) (checkpointer, func(), error) {
	if a.Checkpoints != nil {
		return a.Checkpoints(ctx, f, spec)
	}
	return connectCheckpoints(ctx, f, spec)
}

func addCheckpointFlag(cmd *cobra.Command, a *AutoCheckpoint) {
	cmd.Flags().BoolVar(&a.NoCheckpoint, "no-checkpoint", false, "take no before-NN checkpoint of the bootstrap node (default: one before the first stage that runs; spec stages.checkpoints: false turns them off for the lab)")
}

// beforeName is the automatic checkpoint taken before stage n.
func beforeName(n int) string { return fmt.Sprintf("before-%02d", n) }

// checkpointAction is what stage run does about before-NN.
type checkpointAction int

const (
	cpNone    checkpointAction = iota // take none
	cpSave                            // take it
	cpReplace                         // delete the old one, take it anew
	cpKeep                            // keep the one there is
)

// decideCheckpoint chooses what happens to before-NN. The checkpoint is the
// point before stage NN first ran from where the node is now: it is taken
// when the stage has not run (its markers are absent), and an old one is
// replaced only when the stage has not started since it was taken (the
// node got here again another way, say after a reset to an earlier stage).
// A rerun after a failure, or with --force after a success, keeps the
// original point: the node is no longer at it.
func decideCheckpoint(s *stages.Stage, old *lab.Checkpoint, done, startedSince bool) (checkpointAction, string) {
	name := beforeName(s.Number)
	switch {
	case old != nil && len(old.Missing) > 0:
		if done {
			return cpNone, fmt.Sprintf("no checkpoint %s: the one there is is incomplete (missing %s), and stage %s has already run, so a new one would not be the point before it", name, strings.Join(old.Missing, ", "), s.ID())
		}
		return cpReplace, ""
	case old == nil && done:
		return cpNone, fmt.Sprintf("no checkpoint %s: stage %s has already run (its markers exist), so the node is not at the point before it", name, s.ID())
	case old == nil:
		return cpSave, ""
	case done:
		return cpKeep, fmt.Sprintf("checkpoint %s kept (taken %s): stage %s has run since", name, old.Created.Local().Format(time.TimeOnly), s.ID())
	case startedSince:
		return cpKeep, fmt.Sprintf("checkpoint %s kept (taken %s): stage %s started since and did not finish; `bootlab stage reset %s` goes back to it", name, old.Created.Local().Format(time.TimeOnly), s.ID(), s.ID())
	}
	return cpReplace, ""
}

// checkpointTarget reports whether stage run may checkpoint the node: it
// must be the bootstrap VM of a bootlab lab on this host's libvirt. why is
// said to the user when it is not obvious.
func checkpointTarget(t *Target, r *resolved, injected bool) (ok bool, why string) {
	if t.Local || r.stateErr != nil || (t.Node != nil && !injected) {
		// On the node itself, or no lab built: nothing bootlab manages.
		return false, ""
	}
	bs := r.spec.NodesByRole(spec.RoleBootstrap)
	if len(bs) == 0 || bs[0].IP == "" {
		return false, ""
	}
	if t.Host != "" && t.Host != bs[0].IP && t.Host != bs[0].Name && t.Host != r.spec.FQDN(bs[0]) {
		return false, fmt.Sprintf("no checkpoint: --host %s is not the bootstrap node of lab %s (%s)", t.Host, r.spec.Name, bs[0].IP)
	}
	return true, ""
}

// firstToRun is the first stage of the run with work to do: the one the
// checkpoint is taken before. candidates are the stages the run may run, in
// order; nil when none has work left.
func firstToRun(st *stages.NodeState, v stages.Version, force bool, candidates []*stages.Stage) *stages.Stage {
	for _, s := range candidates {
		if s.SkipReason(v) != "" {
			continue
		}
		if force {
			return s
		}
		if run, _ := st.RunIf(s); run {
			return s
		}
	}
	return nil
}

// stageDone reports whether every Done marker of s exists on the node
// (false for a stage without markers: it runs every time).
func stageDone(st *stages.NodeState, s *stages.Stage) bool {
	if len(s.Done) == 0 {
		return false
	}
	run, _ := st.RunIf(s)
	return !run
}

// startedSince reports whether the lab's stage records (those of the lab
// whose state has labUUID) show a run of stage n or a later one starting
// after t.
func startedSince(logDir, labUUID string, n int, t time.Time) (bool, error) {
	recs, err := stages.ReadRecords(logDir, labUUID)
	if err != nil {
		return false, err
	}
	for _, rec := range recs {
		if rec.Phase == stages.PhaseStart && rec.Number >= n && rec.Timestamp.After(t) {
			return true, nil
		}
	}
	return false, nil
}

// offNotesFile, in the stage log directory, names the stages that ran
// without a checkpoint and why, for `stage reset` to say so.
const offNotesFile = "checkpoints-off.json"

func readOffNotes(logDir string) map[string]string {
	notes := map[string]string{}
	data, err := os.ReadFile(filepath.Join(logDir, offNotesFile))
	if err == nil {
		_ = json.Unmarshal(data, &notes)
	}
	return notes
}

func writeOffNote(logDir, name, why string) error {
	notes := readOffNotes(logDir)
	if why == "" {
		if _, ok := notes[name]; !ok {
			return nil
		}
		delete(notes, name)
	} else {
		notes[name] = why
	}
	data, err := json.MarshalIndent(notes, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(logDir, offNotesFile), data, 0o600)
}

// checkpointCandidates are the stages a run may run: the selection, or
// with the node's script every stage through its target (the script runs
// each pending step before its stop).
func checkpointCandidates(sel []*stages.Stage, through *stages.Stage) []*stages.Stage {
	if through == nil {
		return sel
	}
	var out []*stages.Stage
	for _, s := range stages.Default() {
		if s.Number <= through.Number {
			out = append(out, s)
		}
	}
	return out
}

// before takes stage run's automatic checkpoint of the bootstrap node,
// before the first stage with work to do, as decideCheckpoint says. A
// checkpoint that cannot be saved stops the run: the user counts on
// `stage reset`, and --no-checkpoint goes on without one.
//
// The markers decide, as the runner read them for its preflight: nothing
// has run on the node since.
func (a *AutoCheckpoint) before(ctx context.Context, f *cmdutil.Factory, t *Target, r *resolved, runner *stages.Runner, force bool, sel []*stages.Stage, through *stages.Stage) error {
	ok, why := checkpointTarget(t, r, a.Checkpoints != nil)
	if !ok {
		if why != "" {
			f.Status.Infof("%s", why)
		}
		return nil
	}
	st, err := runner.NodeState(ctx)
	if err != nil {
		return err
	}
	first := firstToRun(st, r.vars.Version, force, checkpointCandidates(sel, through))
	if first == nil {
		return nil
	}
	name := beforeName(first.Number)
	logDir := r.stageDir
	if off := checkpointsOff(a, t, r); off != "" {
		f.Status.Infof("no checkpoint %s: %s", name, off)
		return writeOffNote(logDir, name, off)
	}
	cps, closeCP, err := a.connect(ctx, f, r.spec)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w (pass --no-checkpoint to run without one)", name, err)
	}
	defer closeCP()
	list, err := cps.List(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w (pass --no-checkpoint to run without one)", name, err)
	}
	var old *lab.Checkpoint
	for i := range list {
		if list[i].Name == name {
			old = &list[i]
		}
	}
	done := stageDone(st, first)
	since := false
	if old != nil {
		if since, err = startedSince(logDir, r.labUUID, first.Number, old.Created); err != nil {
			return err
		}
	}
	action, msg := decideCheckpoint(first, old, done, since)
	if action == cpNone || action == cpKeep {
		f.Status.Infof("%s", msg)
		return nil
	}
	start := time.Now()
	if _, err := cps.SaveBootstrap(ctx, name, action == cpReplace); err != nil {
		return fmt.Errorf("checkpoint %s of the bootstrap node: %w\n  pass --no-checkpoint to run without one (then `bootlab stage reset %s` has nothing to go back to)", name, err, first.ID())
	}
	f.Status.Infof("checkpoint %s saved (%.1f s)", name, time.Since(start).Seconds())
	return writeOffNote(logDir, name, "")
}

// checkpointsOff says why this run takes no checkpoint, or "". The spec
// is the lab as built, or the spec file when it says false since.
func checkpointsOff(a *AutoCheckpoint, t *Target, r *resolved) string {
	if a.NoCheckpoint {
		return "stage run --no-checkpoint"
	}
	if !r.spec.StageCheckpoints() {
		return "stages.checkpoints: false in the lab spec"
	}
	if t.Spec.File != "" {
		if s, err := spec.Load(t.Spec.File); err == nil && !s.StageCheckpoints() {
			return "stages.checkpoints: false in " + t.Spec.File
		}
	}
	return ""
}

// noCheckpointError says that the lab has no checkpoint name, which
// before-NN it has, and why there is none when a run said so.
func noCheckpointError(labName, name string, list []lab.Checkpoint, notes map[string]string) error {
	var before []string
	for _, cp := range list {
		if strings.HasPrefix(cp.Name, "before-") {
			before = append(before, cp.Name)
		}
	}
	sort.Strings(before)
	msg := fmt.Sprintf("lab %s has no checkpoint %s", labName, name)
	if why, ok := notes[name]; ok {
		msg += fmt.Sprintf(": the stage ran without one (%s)", why)
	} else {
		msg += ": `bootlab stage run` takes it before the stage when the stage runs first in a run"
	}
	if len(before) > 0 {
		msg += fmt.Sprintf("; it has %s (`bootlab stage reset NN` for one of them)", strings.Join(before, ", "))
	} else {
		msg += "; it has no before-NN checkpoint"
	}
	if len(before) < len(list) {
		msg += "; `bootlab lab checkpoint list` shows every checkpoint"
	}
	return errors.New(msg)
}
