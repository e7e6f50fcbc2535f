package labcmd

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// CheckpointOptions are the options of the `lab checkpoint` verbs.
type CheckpointOptions struct {
	Spec cmdutil.SpecFlags
	// Verb is save, restore, list or delete; Name the checkpoint (not for list).
	Verb   string
	Name   string
	Output string
	// DryRun (restore, delete) prints what would change and changes nothing.
	DryRun bool
	// Yes (restore, delete) skips the question asked when the lab was
	// found, not named.
	Yes bool
}

// NewCmdCheckpoint builds the `lab checkpoint` group.
func NewCmdCheckpoint(f *cmdutil.Factory, runF func(*CheckpointOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Save, restore, list and delete checkpoints of every node of a lab (libvirt snapshots)",
		Example: `  sudo bootlab lab checkpoint save before-lesson
  sudo bootlab lab checkpoint list
  sudo bootlab lab checkpoint restore before-lesson`,
		Long: `A checkpoint is an internal libvirt snapshot of every node of the lab, with
memory for a running node (it resumes where it was, no reboot) and disks only
for one that is off, plus a copy of the lab's own files that change with the
nodes: state.json, verify.json and the stage records. Restore puts all of it
back and makes the load balancer match. ` + "`lab down`" + ` deletes every checkpoint.
See docs/checkpoints.md.`,
		Args: cobra.ArbitraryArgs,
		RunE: cmdutil.UnknownSubcommand,
	}
	// Each verb's Example.
	examples := map[string]string{
		"save":    "  bootlab lab checkpoint save before-lesson\n  bootlab lab checkpoint save after-07 --name demo",
		"restore": "  bootlab lab checkpoint restore before-lesson\n  bootlab lab checkpoint restore before-07 --name demo --dry-run",
		"list":    "  bootlab lab checkpoint list\n  bootlab lab checkpoint list --name demo -o json",
		"delete":  "  bootlab lab checkpoint delete before-lesson --dry-run\n  bootlab lab checkpoint delete before-lesson",
	}
	verb := func(use, short string, named bool) *cobra.Command {
		opts := &CheckpointOptions{Verb: strings.Fields(use)[0]}
		c := &cobra.Command{
			Use:   use,
			Short: short,
			RunE: func(cmd *cobra.Command, args []string) error {
				if named {
					if len(args) != 1 {
						return cmdutil.UsageErrorf("lab checkpoint %s takes one checkpoint name", opts.Verb)
					}
					opts.Name = args[0]
					if err := lab.ValidateCheckpointName(opts.Name); err != nil {
						return cmdutil.UsageErrorf("%v", err)
					}
				} else if len(args) != 0 {
					return cmdutil.UsageErrorf("lab checkpoint %s takes no arguments", opts.Verb)
				}
				if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
					return err
				}
				if runF != nil {
					return runF(opts)
				}
				return runCheckpoint(cmd.Context(), f, opts)
			},
		}
		cmdutil.AddTargetFlags(c, &opts.Spec)
		if !named {
			c.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
		} else {
			opts.Output = "table"
		}
		if opts.Verb == "restore" || opts.Verb == "delete" {
			c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what "+opts.Verb+" would change, and change nothing")
			cmdutil.AddYesFlag(c, &opts.Spec, "lab checkpoint "+opts.Verb, &opts.Yes, &opts.DryRun)
			c.ValidArgsFunction = f.CompleteCheckpoints(&opts.Spec)
		}
		c.Example = examples[opts.Verb]
		return c
	}
	cmd.AddCommand(
		verb("save NAME", "Snapshot every node of the lab and keep its state and stage records, as checkpoint NAME", true),
		verb("restore NAME", "Put every node, the lab state and stage records back as they were at checkpoint NAME", true),
		verb("list", "List the lab's checkpoints", false),
		verb("delete NAME", "Delete checkpoint NAME: its snapshot on every node and its files", true),
	)
	return cmd
}

// CheckpointList is what `lab checkpoint list -o json` prints.
type CheckpointList struct {
	Lab         string           `json:"lab"`
	Checkpoints []lab.Checkpoint `json:"checkpoints"`
}

func runCheckpoint(ctx context.Context, f *cmdutil.Factory, opts *CheckpointOptions) error {
	l, spec, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	if opts.DryRun {
		return checkpointDryRun(ctx, f, l, spec, opts)
	}
	start := time.Now()
	switch opts.Verb {
	case "save":
		f.Status.Start("Saving checkpoint %s of lab %s", opts.Name, spec.Name)
		cp, err := l.Checkpoint(ctx, opts.Name, lab.SaveOptions{})
		if err != nil {
			f.Status.End(false)
			return err
		}
		f.Status.EndDetail(true, fmt.Sprintf("%d nodes, %.1fs", len(cp.Nodes), time.Since(start).Seconds()))
	case "restore":
		f.Status.Start("Restoring checkpoint %s of lab %s", opts.Name, spec.Name)
		cp, err := l.Restore(ctx, opts.Name, lab.RestoreOptions{})
		if err != nil {
			f.Status.End(false)
			return err
		}
		f.Status.EndDetail(true, fmt.Sprintf("%d nodes, %.1fs", len(cp.Nodes), time.Since(start).Seconds()))
	case "delete":
		f.Status.Start("Deleting checkpoint %s of lab %s", opts.Name, spec.Name)
		if err := l.DeleteCheckpoint(ctx, opts.Name); err != nil {
			f.Status.End(false)
			return err
		}
		f.Status.End(true)
	case "list":
		cps, err := l.Checkpoints(ctx)
		if err != nil {
			return err
		}
		if opts.Output == "json" {
			return cmdutil.WriteJSON(f.Streams.Out, "CheckpointList", CheckpointList{Lab: spec.Name, Checkpoints: cps})
		}
		return printCheckpoints(f.Streams.Out, cps)
	}
	return nil
}

// checkpointDryRun prints what checkpoint restore or delete would change,
// refusing what they refuse.
func checkpointDryRun(ctx context.Context, f *cmdutil.Factory, l *lab.Lab, spec *spec.Spec, opts *CheckpointOptions) error {
	var changes []lab.Change
	var err error
	if opts.Verb == "restore" {
		changes, err = l.PlanRestore(ctx, opts.Name, lab.RestoreOptions{})
	} else {
		changes, err = l.PlanDeleteCheckpoint(ctx, opts.Name)
	}
	if err != nil {
		return err
	}
	return cmdutil.WritePlan(f, "", "table", spec.Name, changes,
		fmt.Sprintf("nothing to change: lab checkpoint %s %s has nothing to do", opts.Verb, opts.Name),
		fmt.Sprintf("lab checkpoint %s %s would make these changes to lab %s (nothing was changed):", opts.Verb, opts.Name, spec.Name))
}

func printCheckpoints(out io.Writer, cps []lab.Checkpoint) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tCREATED\tNODES\tMISSING")
	for _, cp := range cps {
		var nodes []string
		for d, state := range cp.Nodes {
			nodes = append(nodes, d+"="+state)
		}
		sort.Strings(nodes)
		missing := strings.Join(cp.Missing, ",")
		if missing == "" {
			missing = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", cp.Name, cp.Created.Local().Format(time.DateTime), strings.Join(nodes, " "), missing)
	}
	return w.Flush()
}
