package labcmd

import (
	"context"
	"errors"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// ConsoleOptions are the options of `lab console`.
type ConsoleOptions struct {
	Spec     cmdutil.SpecFlags
	Node     string
	NoFollow bool
	// Raw prints probe reports as the node wrote them (JSON lines).
	Raw bool
}

// NewCmdConsole builds `lab console NODE`: print a node's serial console log
// and follow it like tail -f.
func NewCmdConsole(f *cmdutil.Factory, runF func(*ConsoleOptions) error) *cobra.Command {
	opts := &ConsoleOptions{}
	cmd := &cobra.Command{
		Use:   "console NODE",
		Short: "Print a node's serial console log and follow it (Ctrl-C to stop)",
		Example: `  bootlab lab console bootstrap
  bootlab lab console master-0 --name demo --no-follow
  bootlab lab console worker-0 --raw`,
		Long: `Print the serial console log of NODE (what the VM writes to ttyS0, kept by
virtlogd in the lab directory, or on the hypervisor's machine for a remote
lab) and follow it like tail -f until Ctrl-C.
For an interactive console use ` + "`virsh console bootlab-<lab>-NODE`" + `.`,
		Args: cmdutil.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Node = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runConsole(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.ValidArgsFunction = opts.Spec.CompleteNodes
	cmd.Flags().BoolVar(&opts.NoFollow, "no-follow", false, "print the log and exit")
	cmd.Flags().BoolVar(&opts.Raw, "raw", false, "print probe reports as the JSON lines the node wrote (default: a readable summary)")
	return cmd
}

func runConsole(ctx context.Context, f *cmdutil.Factory, opts *ConsoleOptions) error {
	l, spec, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	n, ok := spec.Node(opts.Node)
	if !ok {
		return cmdutil.UsageErrorf("no node %q in lab %s (nodes: %s)", opts.Node, spec.Name, nodeNames(spec))
	}
	err = l.Console(ctx, n, f.Streams.Out, lab.ConsoleOptions{Follow: !opts.NoFollow, Raw: opts.Raw})
	if errors.Is(err, context.Canceled) {
		// Ctrl-C is how following ends: 130, as for any interrupted command,
		// but with nothing to resume or clean up there is nothing to say.
		return cmdutil.WithCode(cmdutil.ExitInterrupted, cmdutil.ErrSilent)
	}
	return err
}

func nodeNames(s *labspec.Spec) string {
	out := ""
	for i, n := range s.Nodes {
		if i > 0 {
			out += ", "
		}
		out += n.Name
	}
	return out
}
