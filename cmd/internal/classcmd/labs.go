package classcmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/class"
)

// LabsOptions are the options of the commands over a built class's labs
// (verify, down).
type LabsOptions struct {
	Class    ClassFlags
	Parallel int
	Timeout  time.Duration
}

// NewCmdVerify builds `class verify`.
func NewCmdVerify(f *cmdutil.Factory, runF func(*LabsOptions) error) *cobra.Command {
	opts := &LabsOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Run lab verify on every lab of the class; one line per lab",
		Example: `  bootlab class verify -f class.yaml
  bootlab class verify --name ux --timeout 5m`,
		Long: `Run ` + "`bootlab lab verify`" + `'s checks on every lab of the class, --parallel at a
time, and print one line per lab. The result is kept as lab verify keeps it,
for class status. Exit code 4 when a lab's check failed
(` + "`bootlab lab verify --name LAB`" + ` shows which and how to fix it).`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Parallel < 1 {
				return cmdutil.UsageErrorf("--parallel %d: verify at least one lab at a time", opts.Parallel)
			}
			if runF != nil {
				return runF(opts)
			}
			return runVerify(cmd.Context(), f, opts)
		},
	}
	addClassFlags(cmd, &opts.Class, false)
	cmd.Flags().IntVar(&opts.Parallel, "parallel", defaultParallel(), "verify at most this many labs at once on each host")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 3*time.Minute, "wait at most this long for each lab's checks to pass")
	return cmd
}

// eachBuiltLab opens every lab of ms, parallel at a time on each host,
// and runs fn on it with the lab's own status lines; a lab never
// completely built is refused without being opened. One lab's failure
// does not stop the others.
func eachBuiltLab(ctx context.Context, f *cmdutil.Factory, ms []member, parallel int, fn func(ctx context.Context, lf *cmdutil.Factory, l *lab.Lab, cl class.Lab) error) []class.Result {
	pf, closeAll := pooledFactory(f)
	defer closeAll()
	var mu sync.Mutex
	return class.EachOnHosts(ctx, builtLabs(ms), parallel, func(ctx context.Context, cl class.Lab) error {
		if !cl.Built {
			return cmdutil.WithCode(cmdutil.ExitNoLab, fmt.Errorf("lab %s was never completely built: `bootlab class up` builds it", cl.Spec.Name))
		}
		lf := labFactory(pf, cl.Spec.Name, &mu)
		l, err := lf.OpenLab(ctx, cl.Spec)
		if err != nil {
			return err
		}
		defer l.Close()
		return fn(ctx, lf, l, cl)
	})
}

// builtLabs is the class's labs as class.Labs, for class.Each.
func builtLabs(ms []member) []class.Lab {
	out := make([]class.Lab, len(ms))
	for i, m := range ms {
		out[i] = class.Lab{Learner: m.Learner, Spec: m.Spec, Built: m.Built, Host: m.Host}
	}
	return out
}

func runVerify(ctx context.Context, f *cmdutil.Factory, opts *LabsOptions) error {
	_, ms, err := classMembers(&opts.Class, true)
	if err != nil {
		return err
	}
	pf, closeAll := pooledFactory(f)
	defer closeAll()
	var mu sync.Mutex
	rs := class.EachOnHosts(ctx, builtLabs(ms), opts.Parallel, func(ctx context.Context, l class.Lab) error {
		lf := labFactory(pf, l.Spec.Name, &mu)
		return verifyLab(ctx, lf, l.Spec, opts.Timeout)
	})
	printResults(f, "verify", rs)
	return exitFor("class verify", rs)
}

// verifyLab is `lab verify` of one built lab: the same call (Lab.Verify),
// so a remote class reads its console logs on the hypervisor's machine.
func verifyLab(ctx context.Context, f *cmdutil.Factory, spec *spec.Spec, timeout time.Duration) error {
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return err
	}
	defer l.Close()
	res, err := l.Verify(ctx, lab.VerifyOptions{Timeout: timeout})
	var nb *lab.NotBuiltError
	if errors.As(err, &nb) {
		return cmdutil.WithCode(cmdutil.ExitNoLab, fmt.Errorf("lab %s is not up (no complete up recorded): run `bootlab class up` first", spec.Name))
	}
	if err != nil {
		return err
	}
	if failed := res.Failed(); len(failed) > 0 {
		return cmdutil.WithCode(cmdutil.ExitCheckFailed, fmt.Errorf("%d of %d checks failed (first: %s %s: %s): `bootlab lab verify --name %s`", len(failed), len(res.Checks), failed[0].Group, failed[0].Name, failed[0].Detail, spec.Name))
	}
	// "all 44 checks passed", or on a rehearsal lab whose stages have not
	// run "35 of 63 checks passed, 28 pending", as lab verify says.
	f.Status.Infof("%s", strings.Replace(check.Summarize(res.Checks).String(), " passed", " checks passed", 1))
	return nil
}

// ResetOptions are the options of `class reset`.
type ResetOptions struct {
	Class   ClassFlags
	Learner string
	To      string
	// DryRun prints what reset would change and changes nothing.
	DryRun bool
}

// NewCmdReset builds `class reset LEARNER`.
func NewCmdReset(f *cmdutil.Factory, runF func(*ResetOptions) error) *cobra.Command {
	opts := &ResetOptions{}
	cmd := &cobra.Command{
		Use:   "reset LEARNER",
		Short: "Put one learner's lab back: to a checkpoint (--to), or rebuilt",
		Example: `  bootlab class reset alice -f class.yaml
  bootlab class reset alice --name ux --to before-07 --dry-run`,
		Long: `Put one learner's lab back where the exercise started.

With --to CHECKPOINT the lab's checkpoint is restored (` + "`bootlab lab checkpoint restore`" + `):
disks, node states, stage records and the load balancer as they were.
Without --to the lab is rebuilt from its spec: removed, then built again
(the other labs of the class are not touched either way).`,
		Args: cmdutil.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Learner = args[0]
			if opts.To != "" {
				if err := lab.ValidateCheckpointName(opts.To); err != nil {
					return cmdutil.UsageErrorf("--to: %v", err)
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return runReset(cmd.Context(), f, opts)
		},
	}
	addClassFlags(cmd, &opts.Class, false)
	cmd.Flags().StringVar(&opts.To, "to", "", "restore this checkpoint instead of rebuilding the lab")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what reset would change, and change nothing")
	cmd.ValidArgsFunction = opts.completeLearners
	_ = cmd.RegisterFlagCompletionFunc("to", func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		return opts.completeCheckpoints(c, f, args)
	})
	return cmd
}

// completeLearners offers the learners with a lab in the class the flags
// name.
func (o *ResetOptions) completeLearners(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	_, ms, err := classMembers(&o.Class, false)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Learner+"\tlab "+m.Spec.Name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeCheckpoints offers the checkpoints of the lab of the learner
// named first, for --to.
func (o *ResetOptions) completeCheckpoints(c *cobra.Command, f *cmdutil.Factory, args []string) ([]string, cobra.ShellCompDirective) {
	if len(args) != 1 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	_, ms, err := classMembers(&o.Class, false)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	for _, m := range ms {
		if m.Learner != args[0] || !m.Built {
			continue
		}
		ctx, cancel := cmdutil.CompletionContext(c)
		defer cancel()
		l, err := f.OpenLab(ctx, m.Spec)
		if err != nil {
			break
		}
		defer l.Close()
		return cmdutil.CheckpointNames(ctx, l), cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

func runReset(ctx context.Context, f *cmdutil.Factory, opts *ResetOptions) error {
	name, ms, err := classMembers(&opts.Class, false)
	if err != nil {
		return err
	}
	var m *member
	var learners []string
	for i := range ms {
		learners = append(learners, ms[i].Learner)
		if ms[i].Learner == opts.Learner {
			m = &ms[i]
		}
	}
	if m == nil {
		return cmdutil.WithCode(cmdutil.ExitNoLab, fmt.Errorf("class %s has no lab of learner %q (learners with a lab: %v)", name, opts.Learner, learners))
	}
	if !m.Built {
		return cmdutil.WithCode(cmdutil.ExitNoLab, fmt.Errorf("lab %s was never completely built: `bootlab class up` builds it", m.Spec.Name))
	}
	l, err := f.OpenLab(ctx, m.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	if opts.DryRun {
		return resetDryRun(ctx, f, l, name, m, opts)
	}
	start := time.Now()
	if opts.To != "" {
		f.Status.Start("Restoring checkpoint %s of lab %s", opts.To, m.Spec.Name)
		cp, err := l.Restore(ctx, opts.To, lab.RestoreOptions{})
		if err != nil {
			f.Status.End(false)
			return err
		}
		f.Status.EndDetail(true, fmt.Sprintf("%d nodes, %.1fs", len(cp.Nodes), time.Since(start).Seconds()))
		return nil
	}
	// Rebuild from the spec as built: down removes the lab directory, and
	// the build makes its key, CA and boot files again as for a new lab.
	spec := *m.Spec
	accel := l.Accelerator()
	if _, err := l.Down(ctx, lab.TeardownOptions{}); err != nil {
		return err
	}
	if accel == "" {
		a, _, err := l.ChooseAccelerator(ctx)
		if err != nil {
			return err
		}
		accel = a
	}
	var prep sync.Mutex
	if err := buildLab(ctx, f, &spec, accel, name, m.Learner, m.Host, &prep, nil); err != nil {
		return err
	}
	f.Status.Infof("lab %s rebuilt in %s", spec.Name, time.Since(start).Round(time.Second))
	return nil
}

// resetDryRun prints what class reset would change: the checkpoint's
// restore, or the lab's removal and its build again.
func resetDryRun(ctx context.Context, f *cmdutil.Factory, l *lab.Lab, name string, m *member, opts *ResetOptions) error {
	var changes []lab.Change
	var err error
	if opts.To != "" {
		changes, err = l.PlanRestore(ctx, opts.To, lab.RestoreOptions{})
	} else {
		changes, err = l.PlanDown(ctx, lab.TeardownOptions{})
		changes = append(changes,
			lab.Change{Action: "create", Kind: "lab", Name: m.Spec.Name, Detail: "built again from its spec, as class up builds it"},
			lab.Change{Action: "update", Kind: "classDir", Name: filepath.Join(class.Dir(spec.DefaultHome(), name), "handouts", m.Learner), Detail: "handout"})
	}
	if err != nil {
		return err
	}
	return cmdutil.WritePlan(f, "", "table", m.Spec.Name, changes,
		fmt.Sprintf("nothing to change: class reset %s has nothing to do", m.Learner),
		fmt.Sprintf("class reset %s would make these changes to lab %s (nothing was changed):", m.Learner, m.Spec.Name))
}

// HandoutsOptions are the options of `class handouts`.
type HandoutsOptions struct {
	Class ClassFlags
	Dir   string
}

// NewCmdHandouts builds `class handouts DIR`.
func NewCmdHandouts(f *cmdutil.Factory, runF func(*HandoutsOptions) error) *cobra.Command {
	opts := &HandoutsOptions{}
	cmd := &cobra.Command{
		Use:     "handouts DIR",
		Short:   "Write one handout directory per learner into DIR",
		Example: `  bootlab class handouts ./handouts -f class.yaml`,
		Long: `Write DIR/<learner>/ for every lab of the class: the lab's spec as built, its
SSH key (0600), its addresses, the kubeconfig when the lab has one, and a
README with the exact commands for that lab. class up writes the same into
<bootlab home>/classes/<class>/handouts.`,
		Args: cmdutil.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runHandouts(f, opts)
		},
	}
	addClassFlags(cmd, &opts.Class, false)
	return cmd
}

func runHandouts(f *cmdutil.Factory, opts *HandoutsOptions) error {
	name, ms, err := classMembers(&opts.Class, true)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range ms {
		if !m.Built {
			errs = append(errs, fmt.Errorf("lab %s was never completely built: no handout", m.Spec.Name))
			continue
		}
		dir := filepath.Join(opts.Dir, m.Learner)
		if err := class.WriteHandout(dir, name, m.Learner, m.Host, m.Spec); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintln(f.Streams.Out, dir)
	}
	return errors.Join(errs...)
}
