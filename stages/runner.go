package stages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/status"
)

// StageError is a stage that failed: "stage 07 (etcd-bootstrap): ...".
type StageError struct {
	Stage *Stage
	Err   error
}

func (e *StageError) Error() string {
	return fmt.Sprintf("stage %s (%s): %v", e.Stage.ID(), e.Stage.Slug, e.Err)
}

func (e *StageError) Unwrap() error { return e.Err }

// Selection picks stages from the catalog, like kubeadm's phase flags.
type Selection struct {
	// Only lists stages to run, by any name Lookup accepts; empty means the
	// From..To range (all stages when both are empty).
	Only     []string
	From, To string
	Skip     []string
}

// Select returns the chosen stages in catalog order.
func (c Catalog) Select(sel Selection) ([]*Stage, error) {
	if len(sel.Only) > 0 && (sel.From != "" || sel.To != "") {
		return nil, errors.New("name stages or give --from/--to, not both")
	}
	skip := map[*Stage]bool{}
	for _, a := range sel.Skip {
		s, err := c.Lookup(a)
		if err != nil {
			return nil, fmt.Errorf("--skip: %w", err)
		}
		// A stage runs whole: skipping it for one of its steps would
		// silently leave out the others (cco-bootstrap takes the MCS along).
		if steps := s.PartOf(a); steps != nil {
			return nil, fmt.Errorf("--skip %s: %s is one step of stage %s (%s), and stages run whole; --skip %s leaves out all of them",
				a, a, s.Label(), strings.Join(steps, ", "), s.ID())
		}
		skip[s] = true
	}
	var out []*Stage
	if len(sel.Only) > 0 {
		want := map[*Stage]bool{}
		for _, a := range sel.Only {
			s, err := c.Lookup(a)
			if err != nil {
				return nil, err
			}
			want[s] = true
		}
		for _, s := range c {
			if want[s] && !skip[s] {
				out = append(out, s)
			}
		}
		return out, nil
	}
	from, to := c[0], c[len(c)-1]
	if sel.From != "" {
		s, err := c.Lookup(sel.From)
		if err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		from = s
	}
	if sel.To != "" {
		s, err := c.Lookup(sel.To)
		if err != nil {
			return nil, fmt.Errorf("--to: %w", err)
		}
		to = s
	}
	if to.Number < from.Number {
		return nil, fmt.Errorf("--from %s comes after --to %s", from.Label(), to.Label())
	}
	for _, s := range c {
		if s.Number >= from.Number && s.Number <= to.Number && !skip[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

// Runner runs stages on a node.
type Runner struct {
	Catalog Catalog
	// Scripts is the scripts tree (scripts.FS).
	Scripts fs.FS
	// Node runs the scripts; unused for a dry run.
	Node node.Node
	Vars Vars
	// Output receives the scripts' output, each line prefixed "[07 etcd-bootstrap] ".
	Output io.Writer
	// OutputLog receives the same lines (the lab's output.log).
	OutputLog io.Writer
	// Records receives one record per event; may be nil.
	Records RecordSink
	Log     *slog.Logger
	Status  *status.Status
	// Now is the clock (tests).
	Now func() time.Time

	// state is the node's state as last read, kept from Pending or
	// Preflight until a script runs or Run returns: each read is SSH
	// sessions on the node, a sudo and a bash each (0.5 s on a TCG node),
	// and a stage run asked for it five times before anything changed.
	state *NodeState
}

// ScriptDir is where the runner puts each stage's script on the node.
const ScriptDir = "/run/bootlab/stages"

// ScriptPath is where stage s's rendered script is written on the node.
func ScriptPath(s *Stage) string { return ScriptDir + "/" + s.ScriptFile() }

// Options change how stages run.
type Options struct {
	// Force runs stages whose markers exist and redoes their steps.
	Force bool
	// Validate runs each stage's file checks right after it succeeds
	// (live checks are left to `stage validate`: services take a moment).
	Validate bool
	// DryRun writes each script to DryRunOut instead of running it.
	DryRun    bool
	DryRunOut io.Writer
	// Preflighted says the caller has just run Preflight on the same
	// stages and options and nothing ran on the node since: Run does not
	// read the node's state over again (each read is SSH round trips).
	Preflighted bool
}

// Outcome is what happened to one stage.
type Outcome struct {
	Stage    *Stage        `json:"-"`
	Number   int           `json:"number"`
	Slug     string        `json:"slug"`
	Result   Result        `json:"result"`
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"duration"`
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (r *Runner) record(rec Record) {
	if r.Records == nil {
		return
	}
	if r.Node != nil {
		rec.Node = r.Node.String()
	}
	if err := r.Records.Record(rec); err != nil {
		r.log().Warn("could not write stage record", "err", err)
	}
}

// Run runs stages in order and stops at the first failure, which it
// returns as a *StageError.
func (r *Runner) Run(ctx context.Context, stages []*Stage, opts Options) ([]Outcome, error) {
	if err := r.Vars.Version.CheckSupported(); err != nil {
		return nil, err
	}
	vars := r.Vars
	vars.Force = vars.Force || opts.Force
	if vars.Force && len(stages) > 0 {
		// CheckForce allowed later stages that ran because this run
		// redoes them too; each script's own check is told so.
		vars.ForceThrough = stages[len(stages)-1].Number
	}
	// The state read before this run is stale once it returns (the
	// caller may run other commands on the node after it).
	defer r.forget()
	if !opts.Preflighted {
		r.forget()
	}
	if !opts.DryRun && !opts.Preflighted {
		if err := r.Preflight(ctx, stages, opts); err != nil {
			return nil, err
		}
	}
	var outcomes []Outcome
	for _, s := range stages {
		if err := ctx.Err(); err != nil {
			return outcomes, err
		}
		oc := Outcome{Stage: s, Number: s.Number, Slug: s.Slug}
		if reason := s.SkipReason(vars.Version); reason != "" {
			oc.Result, oc.Reason = ResultSkipped, reason
			outcomes = append(outcomes, oc)
			r.noteVersionSkip(s, reason, opts)
			continue
		}
		script, err := RenderScript(r.Scripts, s, vars)
		if err != nil {
			return outcomes, &StageError{Stage: s, Err: err}
		}
		if opts.DryRun {
			if _, err := opts.DryRunOut.Write(script); err != nil {
				return outcomes, err
			}
			fmt.Fprintln(opts.DryRunOut)
			oc.Result = ResultDryRun
			outcomes = append(outcomes, oc)
			continue
		}
		if r.Node == nil {
			return outcomes, &StageError{Stage: s, Err: errors.New("no node to run on")}
		}
		if !vars.Force {
			reason, err := r.skipDone(ctx, s)
			if err != nil {
				return outcomes, &StageError{Stage: s, Err: err}
			}
			if reason != "" {
				oc.Result, oc.Reason = ResultSkipped, reason
				outcomes = append(outcomes, oc)
				continue
			}
		}
		// From here on the node is not what was read.
		r.forget()
		oc.Result, oc.Duration, err = r.runOne(ctx, s, script)
		if err == nil && opts.Validate {
			err = r.validate(ctx, s, vars)
			if err != nil {
				oc.Result = ResultFailure
			}
		}
		outcomes = append(outcomes, oc)
		if err != nil {
			return outcomes, &StageError{Stage: s, Err: err}
		}
	}
	return outcomes, nil
}

// Preflight refuses, before anything runs, a selection the node is not
// ready for (a stage before an earlier one it needs) and a --force that
// would break a later stage (Catalog.CheckOrder, Catalog.CheckForce).
// Pending is what sel needs first on the node (Catalog.Prerequisites).
func (r *Runner) Pending(ctx context.Context, sel []*Stage) ([]*Stage, error) {
	st, err := r.NodeState(ctx)
	if err != nil {
		return nil, err
	}
	return r.Catalog.Prerequisites(st, sel, r.Vars.Version), nil
}

// NodeState is what the node shows of the stages: read once, then kept
// until a script runs on the node or Run returns. A caller that runs
// anything else on the node in between must not use the Runner's answers.
func (r *Runner) NodeState(ctx context.Context) (*NodeState, error) {
	if r.state != nil {
		return r.state, nil
	}
	if r.Node == nil {
		return nil, errors.New("no node to run on")
	}
	st, err := ReadNodeState(ctx, r.Node, r.Catalog)
	if err != nil {
		return nil, err
	}
	r.state = st
	return st, nil
}

// noteVersionSkip says stage s is skipped for the release: in the dry
// run's output, or to the user and the records.
func (r *Runner) noteVersionSkip(s *Stage, reason string, opts Options) {
	if opts.DryRun {
		fmt.Fprintf(opts.DryRunOut, "# stage %s skipped: %s\n\n", s.Label(), reason)
		return
	}
	r.Status.Infof("stage %s skipped: %s", s.Label(), reason)
	r.record(Record{Timestamp: r.now().UTC(), Phase: PhaseSkip, Stage: s.Slug, Number: s.Number, Result: ResultSkipped, Reason: reason})
}

// forget drops the state read: the node may have changed since.
func (r *Runner) forget() { r.state = nil }

// skippedDone begins the reason of a skip because the stage is already
// done (FoldRecords reads such a stage as done).
const skippedDone = "already done: "

// skipDone says why stage s is skipped as already done, recording it, or
// "" when it has work left.
func (r *Runner) skipDone(ctx context.Context, s *Stage) (string, error) {
	run, why, err := r.runIf(ctx, s)
	if err != nil || run {
		return "", err
	}
	reason := skippedDone + why + " (--force reruns)"
	r.Status.Infof("stage %s skipped: %s", s.Label(), reason)
	r.record(Record{Timestamp: r.now().UTC(), Phase: PhaseSkip, Stage: s.Slug, Number: s.Number, Result: ResultSkipped, Reason: reason})
	return reason, nil
}

// runIf is s.RunIf, from the state read when nothing ran since.
func (r *Runner) runIf(ctx context.Context, s *Stage) (bool, string, error) {
	if r.state != nil {
		run, why := r.state.RunIf(s)
		return run, why, nil
	}
	return s.RunIf(ctx, r.Node)
}

func (r *Runner) Preflight(ctx context.Context, stages []*Stage, opts Options) error {
	st, err := r.NodeState(ctx)
	if err != nil {
		return err
	}
	if err := r.Catalog.CheckOrder(st, stages, r.Vars.Version); err != nil {
		return err
	}
	if opts.Force || r.Vars.Force {
		return r.Catalog.CheckForce(st, stages, r.Vars.Version)
	}
	return nil
}

func (r *Runner) runOne(ctx context.Context, s *Stage, script []byte) (Result, time.Duration, error) {
	return r.runScript(ctx, s, script, ScriptPath(s), "bootlab's annotated script "+s.ScriptFile())
}

// runScript writes script to file on the node and runs it, streaming and
// recording; what says which script it is.
func (r *Runner) runScript(ctx context.Context, s *Stage, script []byte, file, what string) (Result, time.Duration, error) {
	start := r.now()
	r.log().Debug("running stage", "stage", s.Label(), "script", file, "node", r.Node.String())
	r.record(Record{Timestamp: start.UTC(), Phase: PhaseStart, Stage: s.Slug, Number: s.Number, Reason: what})
	// No spinner: the script's own lines stream to the same terminal.
	r.Status.Infof("▶ stage %s (%s) on %s: %s", s.Label(), s.Script, r.Node, what)
	sink := newLineSink("["+s.Label()+"] ", 3, r.Output, r.OutputLog)
	stdout, stderr := sink.Stream(), sink.Stream()
	// The script goes to a file first: with `bash -s` any command that
	// reads stdin would eat the rest of the script. The learner can read
	// (and rerun) the file on the node. Written and run in one command
	// where the node can: one SSH session instead of two.
	code, runErr := node.RunScript(ctx, r.Node, file, script, stdout, stderr)
	stdout.Flush()
	stderr.Flush()
	dur := r.now().Sub(start)
	var err error
	switch {
	case runErr != nil:
		err = fmt.Errorf("run %s on %s: %w", path.Base(file), r.Node, runErr)
	case code != 0:
		err = fmt.Errorf("%s exited %d on %s; last output: %s; see `bootlab stage explain %s` for common failures and the journal lines to look for",
			path.Base(file), code, r.Node, lastLines(sink.Tail()), s.ID())
	}
	rec := Record{Timestamp: r.now().UTC(), Phase: PhaseEnd, Stage: s.Slug, Number: s.Number, Result: ResultSuccess, DurationSeconds: dur.Seconds()}
	switch {
	case err != nil && ctx.Err() == nil && (runErr != nil || code < 0):
		// No exit status: the session ended under the script (the node
		// rebooted, a signal ended it, the connection dropped).
		rec.Result = ResultInterrupted
		rec.ErrorMessage = err.Error() + "; the script ended without an exit status (did the node reboot?): run the stage again"
	case err != nil:
		rec.Result = ResultFailure
		rec.ErrorMessage = err.Error()
		if code != 0 {
			rec.ErrorLine = fmt.Sprintf("exit status %d", code)
		}
	}
	r.record(rec)
	if err != nil {
		r.Status.Infof("✗ stage %s failed after %s", s.Label(), dur.Round(time.Second))
	} else {
		r.Status.Infof("✓ stage %s done in %s", s.Label(), dur.Round(time.Second))
	}
	if err != nil {
		return ResultFailure, dur, err
	}
	return ResultSuccess, dur, nil
}

func lastLines(lines []string) string {
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.Join(lines, " | ")
}

func (r *Runner) validate(ctx context.Context, s *Stage, vars Vars) error {
	var failed []string
	for _, c := range Validate(ctx, r.Node, s, vars, ValidateOptions{SkipLive: true, Now: r.now()}) {
		if c.Failed() {
			failed = append(failed, c.Detail)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("the script succeeded but %d check(s) failed: %s", len(failed), strings.Join(failed, "; "))
}
