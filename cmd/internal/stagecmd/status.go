package stagecmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/stages"
)

// StatusOptions are the options of `stage status`.
type StatusOptions struct {
	Target Target
	Output string
}

// NewCmdStatus builds `stage status`.
func NewCmdStatus(f *cmdutil.Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show which stages are done on the node (bootkube's .done markers) and which is next",
		Example: `  bootlab stage status
  bootlab stage status --name demo -o json
  bootlab stage status --host 192.168.126.10 --key ~/.ssh/id_ed25519`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runStatus(cmd, f, opts)
		},
	}
	addVersionFlags(cmd, &opts.Target)
	addNodeFlags(cmd, &opts.Target)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runStatus(cmd *cobra.Command, f *cmdutil.Factory, opts *StatusOptions) error {
	ctx := cmd.Context()
	r, node, closeNode, err := opts.Target.reach(ctx, f, false)
	if err != nil {
		return err
	}
	defer closeNode()
	st, err := stages.NodeStatus(ctx, node, stages.Default(), r.vars.Version)
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		return cmdutil.WriteJSON(f.Streams.Out, "StageStatus", st)
	}
	rs := make([]check.Result, 0, len(st.Stages))
	for _, ss := range st.Stages {
		rs = append(rs, ss.Result())
	}
	if err := check.Write(f.Streams.Out, rs, check.Options{NameTitle: "STAGE"}); err != nil {
		return err
	}
	fmt.Fprintf(f.Streams.Out, "\nbootkube.service on %s: %s\n", st.Node, st.Bootkube)
	if st.Next != "" {
		fmt.Fprintf(f.Streams.Out, "next: stage %s (bootlab stage run %s)\n", st.Next, st.Next[:2])
	} else {
		fmt.Fprintf(f.Streams.Out, "every stage is done on %s\n", st.Node)
	}
	return nil
}
