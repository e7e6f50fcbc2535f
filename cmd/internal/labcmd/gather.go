package labcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// GatherOptions are the options of `lab gather`.
type GatherOptions struct {
	Spec cmdutil.SpecFlags
	// Dir is where the bundle goes ("": the lab directory's gather/).
	Dir string
}

// NewCmdGather builds `lab gather`.
func NewCmdGather(f *cmdutil.Factory, runF func(*GatherOptions) error) *cobra.Command {
	opts := &GatherOptions{}
	cmd := &cobra.Command{
		Use:   "gather",
		Short: "Collect the bootstrap's logs into a log bundle that lab diagnose reads",
		Example: `  bootlab lab gather -f lab.yaml
  bootlab lab gather -f lab.yaml --dir /tmp`,
		Long: `Collects a log bundle, log-bundle-<id>.tar.gz (<id> the UTC time), in the
installer's layout, and prints its path on stdout; a line per node on stderr.

On an OpenShift lab it runs openshift-install gather bootstrap --dir <assets>
--bootstrap <ip> --master <ip>... --key <lab key>, which writes the bundle in
<assets> and names the failing stage when it can.

On a probe or rehearsal lab bootlab gathers it itself, over the lab's SSH path
as core: each node's journals and crictl's container logs (where the node has
journalctl and crictl), network, clock and static pods; the bootstrap's
service records and /opt/openshift (rendered-assets/); bootkube.service's
journal and records as bootlab plays them (the stages' output and records on
this machine) where the node keeps none; the API's objects where it answers
(resources/); and bootlab's own files: bootlab/lab.json, loadbalancer.json
(haproxy's state), clocks.json, verify.json (the last lab verify) and
missing.json (what could not be seen, or was left out, and why).

Private keys, pull secrets, kubeconfigs, tokens, passwords and Secret objects
are never put in the bundle: such files are left out by name and by content,
and a log keeps its lines with the credential cut out. A file keeps at most
32 MiB (a log its tail), the bundle 512 MiB. The bundle goes to the lab
directory, or --dir.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runGather(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "the directory the bundle goes to (default: the lab directory's gather/, removed by lab down)")
	_ = cmd.MarkFlagDirname("dir")
	return cmd
}

func runGather(ctx context.Context, f *cmdutil.Factory, opts *GatherOptions) error {
	l, _, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	bundle, err := l.Gather(ctx, lab.GatherOptions{Dir: opts.Dir})
	if err != nil {
		return err
	}
	f.Status.Infof("log bundle: %s (unpack with tar xzf; bootlab lab diagnose --bundle reads it)", bundle)
	_, err = fmt.Fprintln(f.Streams.Out, bundle)
	return err
}
