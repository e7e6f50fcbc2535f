package labcmd

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// BreakOptions are the options of `lab break`.
type BreakOptions struct {
	Spec cmdutil.SpecFlags
	// Fault is the fault to set (or, with Undo, to undo: "" all).
	Fault string
	List  bool
	Undo  bool
	// Yes acts on a lab found rather than named without asking.
	Yes bool
}

// NewCmdBreak builds `lab break`.
func NewCmdBreak(f *cmdutil.Factory, runF func(*BreakOptions) error) *cobra.Command {
	opts := &BreakOptions{}
	cmd := &cobra.Command{
		Use:   "break FAULT | --list | --undo [FAULT]",
		Short: "For trainers: set a named, reversible fault on a probe or rehearsal lab",
		Example: `  bootlab lab break --list
  bootlab lab break lb-no-bootstrap-mcs -f lab.yaml
  bootlab lab break --undo -f lab.yaml`,
		Long: `Sets a fault a learner then finds with the troubleshooting tree
(docs/troubleshooting.md): each is a branch of it, named by the lab diagnose
check that finds it, and undone by --undo (or by the learner's own fix).

--list prints the faults: what each breaks, where it bites, the check that
names it and the fix, and which are set on the lab. The fault's name is the
trainer's: lab status, lab verify and the dashboard show its symptoms, never
its name. The record of what is set is the lab directory's faults.json (0600),
removed by lab down.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Fault = args[0]
			}
			switch {
			case opts.List && (opts.Undo || opts.Fault != ""):
				return cmdutil.UsageErrorf("--list takes no fault and no --undo")
			case !opts.List && !opts.Undo && opts.Fault == "":
				return cmdutil.UsageErrorf("name a fault (bootlab lab break --list lists them), or give --undo")
			}
			if runF != nil {
				return runF(opts)
			}
			return runBreak(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	// Setting or undoing a fault changes the lab's DNS, load balancer or bootstrap node:
	// a lab found rather than named is asked about first.
	cmdutil.AddYesFlag(cmd, &opts.Spec, "lab break", &opts.Yes, nil)
	cmd.Flags().BoolVar(&opts.List, "list", false, "list the faults, and those set on the lab when one is found")
	cmd.Flags().BoolVar(&opts.Undo, "undo", false, "undo FAULT, or every fault set on the lab")
	return cmd
}

func runBreak(ctx context.Context, f *cmdutil.Factory, opts *BreakOptions) error {
	if opts.List {
		// Reading what is set changes nothing: no question.
		opts.Spec.Destructive("", nil, nil)
		return listFaults(ctx, f, opts)
	}
	l, _, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	if opts.Undo {
		undone, err := l.Unbreak(ctx, opts.Fault)
		for _, u := range undone {
			f.Status.Infof("undid %s on lab %s", u, l.Spec().Name)
		}
		if err == nil && len(undone) == 0 {
			f.Status.Infof("no fault is set on lab %s", l.Spec().Name)
		}
		return err
	}
	if err := l.Break(ctx, opts.Fault); err != nil {
		return err
	}
	for _, flt := range lab.Faults() {
		if flt.Name == opts.Fault {
			f.Status.Infof("set %s on lab %s: %s; it bites at %s; lab diagnose names it %s; undo: bootlab lab break --undo %s", flt.Name, l.Spec().Name, flt.What, flt.Bites, flt.Check, flt.Name)
		}
	}
	return nil
}

// listFaults prints the catalogue, and the faults set on the lab when one
// is found.
func listFaults(ctx context.Context, f *cmdutil.Factory, opts *BreakOptions) error {
	set := map[string]string{}
	if l, _, err := f.OpenBuiltLab(ctx, &opts.Spec); err == nil {
		active, err := l.ActiveFaults()
		l.Close()
		if err != nil {
			return err
		}
		for _, a := range active {
			set[a.Name] = "set " + a.At.Format("2006-01-02 15:04:05Z")
		}
	}
	w := tabwriter.NewWriter(f.Streams.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FAULT\tCHECK\tON THE LAB\tWHAT IT BREAKS")
	for _, flt := range lab.Faults() {
		state := set[flt.Name]
		if state == "" {
			state = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", flt.Name, flt.Check, state, flt.What)
	}
	return w.Flush()
}
