package labcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// RebootOptions are the options of `lab reboot`.
type RebootOptions struct {
	Spec cmdutil.SpecFlags
	Node string
	Hard bool
	Yes  bool
}

// NewCmdReboot builds `lab reboot NODE [--hard]`.
func NewCmdReboot(f *cmdutil.Factory, runF func(*RebootOptions) error) *cobra.Command {
	opts := &RebootOptions{}
	cmd := &cobra.Command{
		Use:   "reboot NODE",
		Short: "Reboot a node: gracefully through its agent, or with a power reset (--hard)",
		Example: `  bootlab lab reboot bootstrap --name demo
  bootlab lab reboot master-0 --hard --name demo`,
		Long: `Reboot NODE. Without --hard it runs, on a rehearsal lab's bootstrap:

  ` + lab.GracefulRebootCommand + `

as a person would: the agent stops the static pods as the kubelet's graceful
node shutdown does, syncs and unmounts the node disk and reboots. With --hard
the node's VM is reset, as a power cut or a crashed host would: nothing is
synced. A rehearsal node keeps /etc, /var and /opt/openshift on its disk
either way (docs/rehearsal-lab.md): its static pods start again and stage
status shows what was done. ` + "`bootlab lab status`" + ` shows the node rebooting,
gracefully or after --hard, until its next boot reports.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErrorf("lab reboot needs one NODE (see `bootlab lab status`)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Node = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runReboot(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmdutil.AddYesFlag(cmd, &opts.Spec, "lab reboot", &opts.Yes, nil)
	cmd.Flags().BoolVar(&opts.Hard, "hard", false, "reset the node's VM (a power cut: nothing synced) instead of asking its agent")
	cmd.ValidArgsFunction = opts.Spec.CompleteNodes
	return cmd
}

func runReboot(ctx context.Context, f *cmdutil.Factory, opts *RebootOptions) error {
	l, spec, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	if _, ok := spec.Node(opts.Node); !ok {
		return cmdutil.UsageErrorf("no node %q in lab %s (nodes: %s)", opts.Node, spec.Name, nodeNames(spec))
	}
	if err := l.Reboot(ctx, opts.Node, opts.Hard); err != nil {
		return err
	}
	how := "asked its agent to reboot (it stops its static pods, syncs its disk and reboots)"
	if opts.Hard {
		how = "reset its VM (nothing synced)"
	}
	fmt.Fprintf(f.Streams.ErrOut, "%s: %s; it boots again on its own: `bootlab lab status --name %s`\n", opts.Node, how, spec.Name)
	return nil
}
