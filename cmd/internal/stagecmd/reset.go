package stagecmd

import (
	"context"
	"fmt"
	"time"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/stages"
)

// ResetOptions are the options of `stage reset`.
type ResetOptions struct {
	Spec  cmdutil.SpecFlags
	Stage string
	// Yes skips the question asked when the lab was found, not named.
	Yes bool
	// DryRun prints what the reset would change and changes nothing.
	DryRun bool
	// Checkpoints replaces the lab's libvirt (tests).
	Checkpoints func(ctx context.Context, f *cmdutil.Factory, spec *labspec.Spec) (checkpointer, func(), error)
}

// NewCmdReset builds `stage reset`.
func NewCmdReset(f *cmdutil.Factory, runF func(*ResetOptions) error) *cobra.Command {
	opts := &ResetOptions{}
	cmd := &cobra.Command{
		Use:   "reset STAGE",
		Short: "Put the bootstrap node back to where it was before a stage ran (checkpoint before-NN)",
		Long: `Restore the checkpoint before-NN that ` + "`stage run`" + ` took of the bootstrap node
before stage NN ran: the node's disk and memory (it resumes where it was, no
reboot), the lab's stage records and state, and the load balancer to match.
What the stage and every later one did on the node is gone: its .done
markers, the files it rendered, the services it started. The masters and
workers are left as they are. The checkpoint stays: reset again as often as
you like. --dry-run refuses what the reset refuses and prints what it would
change, changing nothing. See docs/checkpoints.md.`,
		Example: `  bootlab stage run 08          # checkpoint before-08 saved (0.5 s), then stage 08 breaks
  bootlab stage reset 08 --dry-run
  bootlab stage reset 08        # the node as it was before stage 08
  bootlab stage reset etcd-bootstrap
  bootlab lab checkpoint list   # every checkpoint of the lab`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErrorf("stage reset takes one stage (number, bootkube name or script name), e.g. bootlab stage reset 07")
			}
			opts.Stage = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runReset(cmd.Context(), f, opts)
		},
		ValidArgsFunction: completeStages,
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what the reset would change, and change nothing")
	cmdutil.AddYesFlag(cmd, &opts.Spec, "stage reset", &opts.Yes, &opts.DryRun)
	return cmd
}

func runReset(ctx context.Context, f *cmdutil.Factory, opts *ResetOptions) error {
	s, err := stages.Default().Lookup(opts.Stage)
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	l, spec, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	stageDir := l.StageDir()
	_ = l.Close()
	if spec.Profile == labspec.ProfileProbe && !spec.Rehearsal() {
		return cmdutil.WithCode(cmdutil.ExitInvalid, fmt.Errorf("lab %s is a probe lab built without manual bootstrap: it runs no stages, so it has no before-NN checkpoints (`bootlab lab checkpoint` saves and restores its nodes)", spec.Name))
	}
	connect := opts.Checkpoints
	if connect == nil {
		connect = connectCheckpoints
	}
	cps, closeCP, err := connect(ctx, f, spec)
	if err != nil {
		return err
	}
	defer closeCP()
	name := beforeName(s.Number)
	list, err := cps.List(ctx)
	if err != nil {
		return err
	}
	found := false
	for _, cp := range list {
		found = found || cp.Name == name
	}
	if !found {
		return noCheckpointError(spec.Name, name, list, readOffNotes(stageDir))
	}
	if opts.DryRun {
		changes, err := cps.PlanRestore(ctx, name)
		if err != nil {
			return err
		}
		return cmdutil.WritePlan(f, "", "table", spec.Name, changes,
			fmt.Sprintf("nothing to change: stage reset %s has nothing to do", s.ID()),
			fmt.Sprintf("stage reset %s would make these changes to lab %s (nothing was changed):", s.ID(), spec.Name))
	}
	start := time.Now()
	f.Status.Start("Resetting the bootstrap node of lab %s to checkpoint %s", spec.Name, name)
	if _, err := cps.Restore(ctx, name); err != nil {
		f.Status.End(false)
		return err
	}
	f.Status.EndDetail(true, fmt.Sprintf("%.1f s", time.Since(start).Seconds()))
	f.Status.Infof("stage %s and every later stage are undone on the bootstrap node; next: bootlab stage run %s", s.Label(), s.ID())
	return nil
}
