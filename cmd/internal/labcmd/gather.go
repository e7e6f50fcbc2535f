package labcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// GatherOptions are the options of `lab gather`.
type GatherOptions struct {
	Spec cmdutil.SpecFlags
}

// NewCmdGather builds `lab gather`.
func NewCmdGather(f *cmdutil.Factory, runF func(*GatherOptions) error) *cobra.Command {
	opts := &GatherOptions{}
	cmd := &cobra.Command{
		Use:     "gather",
		Short:   "Collect the bootstrap's logs with openshift-install gather bootstrap",
		Example: `  bootlab lab gather -f lab.yaml`,
		Long: `Runs openshift-install gather bootstrap --dir <assets> --bootstrap <ip>
--master <ip>... --key <lab key>: over SSH as core it collects the bootstrap's
journals, containers, service records (/var/log/openshift/*.json) and rendered
assets, and the masters' logs, into <assets>/log-bundle-<id>.tar.gz, then names
the failing stage when it can. Prints the bundle's path on stdout.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runGather(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	return cmd
}

func runGather(ctx context.Context, f *cmdutil.Factory, opts *GatherOptions) error {
	l, _, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	bundle, err := l.Gather(ctx)
	if err != nil {
		return err
	}
	f.Status.Infof("bootstrap logs: %s (unpack with tar xzf; bootstrap/services/*.json name the failing stage)", bundle)
	_, err = fmt.Fprintln(f.Streams.Out, bundle)
	return err
}
