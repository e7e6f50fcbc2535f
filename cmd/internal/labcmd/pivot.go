package labcmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// PivotOptions are the options of `lab pivot`.
type PivotOptions struct {
	Spec   cmdutil.SpecFlags
	Output string
	// Yes skips the question asked when the lab was found, not named.
	Yes bool
	// DryRun prints what pivot would change and changes nothing.
	DryRun bool
}

// NewCmdPivot builds `lab pivot`: take the bootstrap out of the load balancer.
func NewCmdPivot(f *cmdutil.Factory, runF func(*PivotOptions) error) *cobra.Command {
	opts := &PivotOptions{}
	cmd := &cobra.Command{
		Use:   "pivot",
		Short: "Remove the bootstrap from the load balancer (and, on an OpenShift lab, its VM and disk)",
		Example: `  bootlab lab pivot --dry-run
  bootlab lab pivot
  bootlab lab pivot --name demo -o json`,
		Long: `The end of the bootstrap: after bootstrap-complete (see
` + "`bootlab lab wait bootstrap-complete`" + `) the docs require removing the
bootstrap from the 6443 and 22623 backends. pivot shows the backends before,
reloads haproxy without the bootstrap (connections in flight finish), records
it in the lab state so a later ` + "`lab up`" + ` does not add it back, and shows
the backends after. On the openshift profile it then destroys the bootstrap
VM and deletes its disk; a probe lab keeps its bootstrap VM, so
` + "`bootlab lab verify`" + ` can show the API still served by the masters.
Everything else stays. Running it again changes nothing. --dry-run takes
the same steps, reading the load balancer and libvirt, and prints what
they would change: nothing is reloaded, recorded or removed.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runPivot(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what pivot would change, and change nothing")
	cmdutil.AddYesFlag(cmd, &opts.Spec, "lab pivot", &opts.Yes, &opts.DryRun)
	return cmd
}

func runPivot(ctx context.Context, f *cmdutil.Factory, opts *PivotOptions) error {
	l, _, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	if opts.DryRun {
		res, err := l.PlanPivot(ctx)
		if err != nil {
			return err
		}
		return cmdutil.WritePlan(f, "PivotPlan", opts.Output, res.Lab, res.Changes,
			fmt.Sprintf("nothing to change: the bootstrap of lab %s is already out", res.Lab),
			fmt.Sprintf("lab pivot would make these changes to lab %s (nothing was changed):", res.Lab))
	}
	res, err := l.Pivot(ctx)
	if err != nil {
		return err
	}
	return printPivot(f, res, opts.Output)
}

func printPivot(f *cmdutil.Factory, res *lab.PivotResult, output string) error {
	if output == "json" {
		return cmdutil.WriteJSON(f.Streams.Out, "PivotResult", res)
	}
	out := f.Streams.Out
	fmt.Fprintln(out, "Load balancer before:")
	if err := printBackends(out, res.Before); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nLoad balancer after:")
	if err := printBackends(out, res.After); err != nil {
		return err
	}
	if !res.Changed {
		f.Status.Infof("the bootstrap was already out of the load balancer: nothing changed")
	} else {
		f.Status.Infof("bootstrap removed from the load balancer")
	}
	if len(res.RemovedNodes) > 0 {
		f.Status.Infof("removed VM and disk of %s", strings.Join(res.RemovedNodes, ", "))
	}
	if up := upServers(res.After, "api"); up == 0 {
		f.Status.Infof("no master passes the /readyz check yet: the API is not served through the load balancer (watch `bootlab lab status`)")
	} else {
		f.Status.Infof("the API is served by %d master(s) through the load balancer", up)
	}
	return nil
}

// printBackends prints the load balancer's servers, one line each.
func printBackends(w io.Writer, backends []lab.BackendStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  FRONTEND\tSERVER\tADDRESS\tSTATUS\tLAST CHECK")
	for _, b := range backends {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", b.Frontend, b.Server, b.Address, b.Status, b.LastCheck)
	}
	return tw.Flush()
}

// upServers counts the servers of frontend that haproxy sends traffic to.
func upServers(backends []lab.BackendStatus, frontend string) int {
	n := 0
	for _, b := range backends {
		if b.Frontend == frontend && b.Up() {
			n++
		}
	}
	return n
}
