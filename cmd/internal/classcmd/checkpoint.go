package classcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/class"
)

// CheckpointOptions are the options of `class checkpoint save|restore|delete NAME`.
type CheckpointOptions struct {
	LabsOptions
	// Verb is save, restore or delete; Name the checkpoint.
	Verb, Name string
}

// NewCmdCheckpoint builds `class checkpoint`: a checkpoint of every lab of
// the class at once, as `bootlab lab checkpoint` makes one of a lab.
func NewCmdCheckpoint(f *cmdutil.Factory, runF func(*CheckpointOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Save, restore or delete a checkpoint of every lab of the class",
		Example: `  bootlab class checkpoint save start --name ws
  bootlab class checkpoint restore start --name ws`,
		Long: `Run ` + "`bootlab lab checkpoint`" + ` on every lab of the class, --parallel at a time on
each host, the hosts side by side: save the exercise's start once, put every
learner back to it at once (` + "`bootlab class reset LEARNER --to NAME`" + ` puts one back).
One lab's failure does not stop the others; the summary names each failed lab.`,
		Args: cobra.ArbitraryArgs,
		RunE: cmdutil.UnknownSubcommand,
	}
	verb := func(name, short string) *cobra.Command {
		opts := &CheckpointOptions{Verb: name}
		c := &cobra.Command{
			Use:     name + " NAME",
			Short:   short,
			Example: fmt.Sprintf("  bootlab class checkpoint %s start --name ws\n  bootlab class checkpoint %s start -f class.yaml --parallel 2", name, name),
			Args:    cmdutil.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				opts.Name = args[0]
				if err := lab.ValidateCheckpointName(opts.Name); err != nil {
					return cmdutil.UsageErrorf("checkpoint name: %v", err)
				}
				if opts.Parallel < 1 {
					return cmdutil.UsageErrorf("--parallel %d: act on at least one lab at a time", opts.Parallel)
				}
				if runF != nil {
					return runF(opts)
				}
				return runClassCheckpoint(c.Context(), f, opts)
			},
		}
		addClassFlags(c, &opts.Class, false)
		c.Flags().IntVar(&opts.Parallel, "parallel", defaultParallel(), "act on at most this many labs at once on each host")
		return c
	}
	cmd.AddCommand(
		verb("save", "Save checkpoint NAME of every lab of the class"),
		verb("restore", "Put every lab of the class back to its checkpoint NAME"),
		verb("delete", "Delete checkpoint NAME of every lab of the class"),
	)
	return cmd
}

func runClassCheckpoint(ctx context.Context, f *cmdutil.Factory, opts *CheckpointOptions) error {
	_, ms, err := classMembers(&opts.Class, true)
	if err != nil {
		return err
	}
	rs := eachBuiltLab(ctx, f, ms, opts.Parallel, func(ctx context.Context, lf *cmdutil.Factory, l *lab.Lab, _ class.Lab) error {
		switch opts.Verb {
		case "save":
			cp, err := l.Checkpoint(ctx, opts.Name, lab.SaveOptions{})
			if err == nil {
				lf.Status.Infof("checkpoint %s saved: %d nodes", opts.Name, len(cp.Nodes))
			}
			return err
		case "restore":
			cp, err := l.Restore(ctx, opts.Name, lab.RestoreOptions{})
			if err == nil {
				lf.Status.Infof("checkpoint %s restored: %d nodes", opts.Name, len(cp.Nodes))
			}
			return err
		default:
			return l.DeleteCheckpoint(ctx, opts.Name)
		}
	})
	printResults(f, "checkpoint "+opts.Verb, rs)
	return exitFor("class checkpoint "+opts.Verb, rs)
}
