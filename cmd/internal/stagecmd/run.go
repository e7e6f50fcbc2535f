package stagecmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/scripts"
	"github.com/bootlab/bootlab/stages"
)

// RunOptions are the options of `stage run`.
type RunOptions struct {
	Target   Target
	Stages   []string
	From     string
	To       string
	Skip     []string
	All      bool
	Force    bool
	DryRun   bool
	Validate bool
	Output   string
	// Source is node (the node's own bootkube.sh), bootlab (the annotated
	// scripts) or empty: node when the node has the script.
	Source string
	// Bootkube is a local copy of a node's script for --dry-run.
	Bootkube string
	// AutoCheckpoint is --no-checkpoint and the before-NN checkpoint (autocheckpoint.go).
	AutoCheckpoint
}

// runLong is `stage run --help`: what runs, in which order, what is
// refused and what is recorded.
const runLong = `Run the named stages, a --from/--to range, or --all, in bootkube's order, as
root on the bootstrap node. With bootlab's annotated scripts a stage whose
bootkube .done markers exist is skipped (--force reruns it) and a stage the
release lacks is skipped with the reason. Output streams to stderr with a [NN slug] prefix; every event is
recorded in the lab's stage log (records.jsonl, output.log).

On a bootstrap node that has /usr/local/bin/bootkube.sh, the default source
is the node's own script: a copy in /run/bootlab/bootkube-NN.sh, altered only
so that it stops right before the first step of a later stage. Its own .done
guards skip finished steps; every pending step before the stop runs, as when
bootkube.service restarts (--force removes the stage's markers first; a range
runs in one go through its last stage). --source bootlab runs bootlab's annotated scripts
instead (the default where the node has no bootkube.sh).

Stages run in bootkube's order. A stage whose earlier stages have not
finished on the node (their .done markers; for 14, wait-for-ceo's success
in /var/log/openshift/bootkube.json) is refused before anything runs, with
the stage to run first; on a rehearsal lab those stages run first instead,
in order (stage run 07 on a new lab runs 01 to 07). --force reruns only what cannot break a later
stage: the last stage that ran, a stage together with every later one that
ran (--from/--to), and 02, 14 and 15. Anything else is refused with the
reason (12 after 13 brings back a stale bootstrap MCS, 01 after 03
overwrites the resolved feature gates, 13 after cb-bootstrap.done starts a
second control plane) and the way back: bootlab stage reset NN on a lab
bootlab checkpoints; a real bootstrap node has none.

The release is the node's own: stage 02's VERSION, else oc adm release info
of its release image. A --openshift-version the node contradicts is refused,
and so is a --release-image other than the one in the node's
/usr/local/bin/release-image.sh: it would mix two payloads. bootkube.json
ends a run that leaves bootkube unfinished with result "stopped" and what
has not run, never "success".

On a lab bootlab built on this host, the run first checkpoints the bootstrap
node (disk and memory) and the lab's stage records as before-NN, NN the
first stage with work to do, and prints "checkpoint before-07 saved (0.5 s)":
` + "`bootlab stage reset 07`" + ` goes back to it. A rerun after a failure keeps
the before-NN taken first. --no-checkpoint, or stages.checkpoints: false in
the spec, takes none (docs/checkpoints.md).

--dry-run prints the script each stage would run, every setting filled in,
without a node; with --bootkube FILE, the copy of that node script that
would run.`

// NewCmdRun builds `stage run`.
func NewCmdRun(f *cmdutil.Factory, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run [STAGE...]",
		Short: "Run stages on the bootstrap node, in bootkube's order",
		Long:  runLong,
		Example: `  bootlab stage run 07
  bootlab stage run etcd-bootstrap
  bootlab stage run render-etcd --dry-run
  bootlab stage run --from 03 --to 07
  bootlab stage run --all --skip 15 --source bootlab
  bootlab stage run 07 --dry-run --bootkube ./bootkube.sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Stages = args
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if opts.DryRun && opts.Output == "json" {
				return cmdutil.UsageErrorf("-o json: stage run --dry-run prints the bash each stage would run, which has no JSON form; drop -o json (`bootlab stage list -o json` describes the stages)")
			}
			if opts.All && (len(args) > 0 || opts.From != "" || opts.To != "") {
				return cmdutil.UsageErrorf("--all runs every stage: do not name stages or --from/--to with it")
			}
			if !opts.All && len(args) == 0 && opts.From == "" && opts.To == "" {
				return cmdutil.UsageErrorf("name stages, give --from/--to, or --all (see `bootlab stage list`)")
			}
			if err := sourceFlag(opts.Source); err != nil {
				return err
			}
			if opts.Bootkube != "" && !opts.DryRun {
				return cmdutil.UsageErrorf("--bootkube reads a local copy of a node's script for --dry-run; on a node, bootlab reads the node's own")
			}
			if opts.Bootkube != "" && opts.Source == stages.SourceBootlab {
				return cmdutil.UsageErrorf("--bootkube is the node's script: it does not go with --source bootlab")
			}
			if opts.DryRun && opts.Source == stages.SourceNode && opts.Bootkube == "" {
				return cmdutil.UsageErrorf("--dry-run --source node needs --bootkube FILE, a copy of the node's /usr/local/bin/bootkube.sh")
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd, f, opts)
		},
		ValidArgsFunction: completeStages,
	}
	addVersionFlags(cmd, &opts.Target)
	addNodeFlags(cmd, &opts.Target)
	fl := cmd.Flags()
	fl.StringVar(&opts.From, "from", "", "first stage of the range")
	fl.StringVar(&opts.To, "to", "", "last stage of the range")
	fl.StringSliceVar(&opts.Skip, "skip", nil, "stages to leave out, whole: a number, stage or script name (repeatable)")
	fl.BoolVar(&opts.All, "all", false, "run every stage")
	fl.BoolVar(&opts.Force, "force", false, "rerun stages and steps whose .done markers exist")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print the scripts instead of running them (no node needed)")
	fl.BoolVar(&opts.Validate, "validate", false, "check each stage's files right after it runs (stage validate adds the live checks)")
	fl.StringVarP(&opts.Output, "output", "o", "table", "summary format: table or json")
	fl.StringVar(&opts.Source, "source", "", "what runs: node (the node's own bootkube.sh, stopped before the next stage) or bootlab (the annotated scripts); default node when the node has the script")
	addBootkubeFlag(cmd, &opts.Bootkube, "with --dry-run: print what would run of this copy of a node's bootkube.sh")
	addCheckpointFlag(cmd, &opts.AutoCheckpoint)
	return cmd
}

func runRun(cmd *cobra.Command, f *cmdutil.Factory, opts *RunOptions) error {
	ctx := cmd.Context()
	// The node's script runs any release; the annotated scripts need one
	// they model (checked below once the source is known).
	r, err := opts.Target.resolveVersion(ctx, f, true)
	if err != nil {
		return err
	}
	catalog := stages.Default()
	sel, err := catalog.Select(stages.Selection{Only: opts.Stages, From: opts.From, To: opts.To, Skip: opts.Skip})
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	runner := &stages.Runner{Catalog: catalog, Scripts: scripts.FS, Vars: r.vars, Log: f.Log, Status: f.Status}
	if opts.DryRun && opts.Bootkube != "" {
		ns, err := localScript(opts.Bootkube)
		if err != nil {
			return err
		}
		target, err := nodeTarget(f, sel, opts)
		if err != nil {
			return err
		}
		_, err = runner.RunNodeScript(ctx, target, ns, stages.Options{Force: opts.Force, DryRun: true, DryRunOut: f.Streams.Out})
		return err
	}
	if opts.DryRun {
		if err := r.vars.Version.CheckSupported(); err != nil {
			return cmdutil.WithCode(cmdutil.ExitInvalid, err)
		}
		_, err := runner.Run(ctx, sel, stages.Options{Force: opts.Force, DryRun: true, DryRunOut: f.Streams.Out})
		return err
	}
	phases := timing.Start(f.Log, "stage run")
	target, closeNode, err := opts.Target.connect(ctx, f, r)
	if err != nil {
		return err
	}
	defer closeNode()
	phases.Mark("ssh dial")
	if o, ok := target.(node.Opener); ok {
		if err := o.Open(ctx); err != nil {
			return err
		}
		phases.Mark("root shell (sudo bash, once)")
	}
	return runOnNode(ctx, f, opts, r, runner, sel, target, phases)
}

// runOnNode runs the selection on the node: from the node's own script or
// bootlab's, for the node's release, refused before anything happens when
// the node is not ready for it, after the before-NN checkpoint.
func runOnNode(ctx context.Context, f *cmdutil.Factory, opts *RunOptions, r *resolved, runner *stages.Runner, sel []*stages.Stage, node node.Node, phases *timing.Phases) error {
	active, err := stages.BootkubeActive(ctx, node)
	if err != nil {
		return err
	}
	phases.Mark("node check: bootkube.service")
	if active {
		return fmt.Errorf("bootkube.service is running on %s: stages would race it over /opt/openshift. Build the lab with openshift.manualBootstrap: true, or stop and mask it first: systemctl mask --now bootkube.service", node)
	}
	ns, pre, err := readNode(ctx, f, node, opts, r)
	if err != nil {
		return err
	}
	source, target, err := pickSource(f, opts, r, ns, runner.Catalog, sel, node.String())
	if err != nil {
		return err
	}
	noteInferredRelease(f, r.vars.Version, source, rehearsalTarget(&opts.Target, r))
	phases.Mark("node check: script and release")
	// Refused runs are refused before the checkpoint: nothing happens.
	runner.Node, runner.Vars = pre, r.vars
	runOpts := stages.Options{Force: opts.Force, Validate: opts.Validate}
	if source == stages.SourceBootlab && rehearsalTarget(&opts.Target, r) && len(opts.Skip) == 0 {
		if sel, err = withPrerequisites(ctx, f, runner, sel); err != nil {
			return err
		}
	}
	if source == stages.SourceNode {
		err = runner.PreflightNodeScript(ctx, target, ns, runOpts)
	} else {
		err = runner.Preflight(ctx, sel, runOpts)
	}
	if err != nil {
		return refusal(err, opts, r)
	}
	// The checkpoint below changes nothing on the node; the scripts and
	// what follows them read the node itself.
	runOpts.Preflighted, runner.Node = true, node
	phases.Mark("node check: stages done (markers), order")
	if err := opts.AutoCheckpoint.before(ctx, f, &opts.Target, r, runner, opts.Force, sel, target); err != nil {
		return err
	}
	phases.Mark("checkpoint")
	logDir := r.stageDir
	log, err := stages.OpenLog(logDir, r.labUUID)
	if err != nil {
		return err
	}
	defer log.Close()
	runner.Output, runner.OutputLog, runner.Records = f.Streams.ErrOut, log.Output, log.Records

	var outcomes []stages.Outcome
	var runErr error
	if source == stages.SourceNode {
		f.Status.Infof("source: %s", ns.Describe())
		var oc stages.Outcome
		oc, runErr = runner.RunNodeScript(ctx, target, ns, runOpts)
		outcomes = []stages.Outcome{oc}
	} else {
		f.Status.Infof("source: %s", sourceDescBootlab)
		outcomes, runErr = runner.Run(ctx, sel, runOpts)
		for i := range outcomes {
			if outcomes[i].Reason == "" {
				outcomes[i].Reason = sourceDescBootlab
			}
		}
	}
	phases.Mark("stages (bash on the node)")
	if err := printOutcomes(f, outcomes, opts.Output); err != nil {
		return err
	}
	var se *stages.StageError
	if errors.As(runErr, &se) {
		return fmt.Errorf("%w\n  full output: %s", runErr, filepath.Join(logDir, stages.OutputFile))
	}
	return runErr
}

// prefetched are the files a stage run's checks read before anything runs,
// and the directory of the markers: one command reads them all
// (node.Prefetch).
func prefetched() node.Paths {
	return node.Paths{
		Files: append(stages.NodeScriptFiles(), stages.ImagesFile, stages.ServiceRecords),
		Dirs:  []string{stages.AssetDir},
	}
}

// readNode reads the node's script and release (nodeScript, nodeRelease)
// from one read of the files they and the preflight need; the node it
// returns answers those from that read until anything runs.
func readNode(ctx context.Context, f *cmdutil.Factory, n node.Node, opts *RunOptions, r *resolved) (*stages.NodeScript, node.Node, error) {
	pre, err := node.Prefetch(ctx, n, prefetched())
	if err != nil {
		return nil, nil, err
	}
	ns, err := nodeScript(ctx, f, pre)
	if err != nil {
		return nil, nil, err
	}
	if err := nodeRelease(ctx, f, pre, &opts.Target, r, ns); err != nil {
		return nil, nil, err
	}
	return ns, pre, nil
}

// withPrerequisites puts before sel the stages it needs that the node has
// not finished: on a rehearsal lab `stage run 07` runs 01 to 06 first, as
// bootkube would, and says so (a real node refuses and names them).
func withPrerequisites(ctx context.Context, f *cmdutil.Factory, runner *stages.Runner, sel []*stages.Stage) ([]*stages.Stage, error) {
	pending, err := runner.Pending(ctx, sel)
	if err != nil || len(pending) == 0 {
		return sel, err
	}
	ids := make([]string, len(pending))
	for i, p := range pending {
		ids[i] = p.ID()
	}
	f.Status.Infof("stage %s needs %s first (bootkube runs its stages in order, each reading what the ones before made): running %s, then %s",
		sel[0].ID(), strings.Join(ids, ", "), strings.Join(ids, ", "), sel[0].ID())
	return append(pending, sel...), nil
}

// pickSource chooses what runs: --source, else the node's own script on a
// real bootstrap node and bootlab's annotated scripts elsewhere; with the
// node's script, target is the stage it runs through.
func pickSource(f *cmdutil.Factory, opts *RunOptions, r *resolved, ns *stages.NodeScript, catalog stages.Catalog, sel []*stages.Stage, nodeName string) (string, *stages.Stage, error) {
	source := opts.Source
	if source == "" {
		source = stages.SourceBootlab
		// A real bootstrap node's own script is the truth; a rehearsal
		// bootstrap's is only its shape (it runs bootlab's annotated
		// scripts, the ones a learner reads).
		if ns != nil && !rehearsalTarget(&opts.Target, r) {
			source = stages.SourceNode
		}
	}
	if source == stages.SourceNode {
		if ns == nil {
			return "", nil, cmdutil.UsageErrorf("%s has no %s (not a bootstrap node, or a rehearsal lab): run bootlab's annotated scripts with --source bootlab", nodeName, stages.NodeBootkube)
		}
		target, err := nodeTarget(f, sel, opts)
		return source, target, err
	}
	if err := r.vars.Version.CheckSupported(); err != nil {
		return "", nil, cmdutil.WithCode(cmdutil.ExitInvalid, err)
	}
	// A rehearsal bootstrap's bootkube.sh is only the shape of the real one
	// (its first step, then a comment): comparing it says nothing.
	if ns != nil && !rehearsalTarget(&opts.Target, r) {
		if diff := catalog.CompareSteps(ns.Script, r.vars.Version); diff != "" {
			f.Status.Infof("warning: bootlab's annotated scripts for OpenShift %s do not have the steps of the %s: %s. `bootlab stage diff NN` shows the difference; --source node replays the node's script exactly", r.vars.Version, ns.Describe(), diff)
		}
	}
	return source, nil, nil
}

// nodeTarget is the stage the node's script runs through: the last one
// selected. The script runs every pending step before its stop, so stages
// cannot be left out of it.
func nodeTarget(f *cmdutil.Factory, sel []*stages.Stage, opts *RunOptions) (*stages.Stage, error) {
	if len(opts.Skip) > 0 {
		return nil, cmdutil.UsageErrorf("--skip needs --source bootlab: the node's bootkube.sh runs every pending step before the stage it stops at")
	}
	if len(sel) == 0 {
		return nil, cmdutil.UsageErrorf("no stage selected")
	}
	target := sel[len(sel)-1]
	if len(sel) > 1 {
		f.Status.Infof("the node's bootkube.sh runs every pending step through stage %s in one go", target.Label())
	}
	return target, nil
}

func printOutcomes(f *cmdutil.Factory, outcomes []stages.Outcome, format string) error {
	if format == "json" {
		if outcomes == nil {
			outcomes = []stages.Outcome{}
		}
		ok := true
		for _, o := range outcomes {
			ok = ok && o.Result != stages.ResultFailure
		}
		return cmdutil.WriteJSON(f.Streams.Out, "StageRun", struct {
			OK     bool             `json:"ok"`
			Stages []stages.Outcome `json:"stages"`
		}{ok, outcomes})
	}
	w := tabwriter.NewWriter(f.Streams.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NO\tSTAGE\tRESULT\tDURATION\tREASON")
	for _, o := range outcomes {
		d := "-"
		if o.Duration > 0 {
			d = o.Duration.Round(1e8).String()
		}
		fmt.Fprintf(w, "%02d\t%s\t%s\t%s\t%s\n", o.Number, o.Slug, o.Result, d, o.Reason)
	}
	return w.Flush()
}

// rehearsalTarget is true when the stages go to a rehearsal lab's bootstrap
// (found through the lab, not --host or --local).
func rehearsalTarget(t *Target, r *resolved) bool {
	return t.Node == nil && t.Host == "" && !t.Local && r.stateErr == nil && r.spec.Rehearsal()
}
