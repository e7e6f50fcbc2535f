package labcmd

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// StatusOptions are the options of `lab status`.
type StatusOptions struct {
	Spec   cmdutil.SpecFlags
	Output string
}

// NewCmdStatus builds `lab status`.
func NewCmdStatus(f *cmdutil.Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the lab: network, DNS records, load balancer backends, each VM's state and IP",
		Example: `  bootlab lab status
  bootlab lab status --name demo -o json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runStatus(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runStatus(ctx context.Context, f *cmdutil.Factory, opts *StatusOptions) error {
	l, err := f.OpenTarget(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	st, err := l.Status(ctx)
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		if err := cmdutil.WriteJSON(f.Streams.Out, "LabStatus", st); err != nil {
			return err
		}
		if notUpHint(st) != "" {
			// The document says every object is absent; the exit code
			// says "no such lab", as the table form's does.
			return cmdutil.WithCode(cmdutil.ExitNoLab, cmdutil.ErrSilent)
		}
		return nil
	}
	if err := printStatus(f.Streams.Out, st); err != nil {
		return err
	}
	if hint := notUpHint(st); hint != "" {
		f.Status.Infof("%s", hint)
		// The table said it all; the exit code says "no such lab", as for
		// every other verb.
		return cmdutil.WithCode(cmdutil.ExitNoLab, cmdutil.ErrSilent)
	}
	return nil
}

// notUpHint tells a person reading the table that none of the lab exists
// (a mistyped --name, or a lab not built yet), rather than leaving a table of
// "absent" rows to puzzle over.
func notUpHint(st *lab.Status) string {
	if st.Network.Exists || (st.LoadBalancer != nil && st.LoadBalancer.Running) {
		return ""
	}
	for _, n := range st.Nodes {
		if n.State != "absent" {
			return ""
		}
	}
	return fmt.Sprintf("lab %s is not up on %s: `bootlab lab up` builds it (the addresses above are the ones it would use)", st.Name, st.URI)
}

func printStatus(out io.Writer, st *lab.Status) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	net := "absent"
	if st.Network.Exists {
		net = "inactive"
		if st.Network.Active {
			net = "active"
		}
	}
	fmt.Fprintf(w, "LAB\t%s\t%s\taccelerator %s\n", st.Name, st.URI, orDash(string(st.Accelerator)))
	fmt.Fprintf(w, "NETWORK\t%s\t%s\tbridge %s\tgateway %s\n", st.Network.Name, net, orDash(st.Network.Bridge), orDash(st.Network.Gateway))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "DNS NAME\tADDRESS")
	for _, r := range st.DNS {
		fmt.Fprintf(w, "%s\t%s\n", r.Name, r.IP)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "NODE\tROLE\tDOMAIN\tSTATE\tIP\tMAC")
	for _, n := range st.Nodes {
		ip := n.IP
		if ip == "" {
			ip = n.ReservedIP + " (no lease)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Role, n.Domain, n.State, ip, n.MAC)
	}
	fmt.Fprintln(w)
	switch {
	case st.LoadBalancer != nil:
		state := "stopped"
		if st.LoadBalancer.Running {
			state = fmt.Sprintf("running (pid %d)", st.LoadBalancer.PID)
		}
		fmt.Fprintf(w, "LOAD BALANCER\t%s\n", state)
		if len(st.LoadBalancer.Backends) > 0 {
			fmt.Fprintln(w, "FRONTEND\tSERVER\tADDRESS\tSTATUS\tLAST CHECK")
			for _, b := range st.LoadBalancer.Backends {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", b.Frontend, b.Server, b.Address, b.Status, orDash(b.LastCheck))
			}
		}
	case st.LoadBalancerError != "":
		fmt.Fprintf(w, "LOAD BALANCER\t%s\n", st.LoadBalancerError)
	default:
		fmt.Fprintln(w, "LOAD BALANCER\tnone (test driver)")
	}
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
