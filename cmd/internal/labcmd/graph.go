package labcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/diagram"
	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/lab"
)

// GraphOptions are the options of `lab graph`.
type GraphOptions struct {
	Spec   cmdutil.SpecFlags
	Output string
	// Out is the file to write; empty writes stdout.
	Out string
}

// NewCmdGraph builds `lab graph`: the lab topology as a picture, in the
// spirit of `containerlab graph`. runF replaces the behaviour in tests.
func NewCmdGraph(f *cmdutil.Factory, runF func(*GraphOptions) error) *cobra.Command {
	opts := &GraphOptions{}
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Draw the lab topology (bridge, DNS names, haproxy frontends and backends, nodes) as SVG, DOT or Mermaid",
		Long: `Draw the lab: the host bridge and its address, the DNS names the lab's
dnsmasq answers (api, api-int, *.apps, every node), haproxy's frontends
6443, 22623, 80 and 443 with an arrow to each backend, and the bootstrap,
masters and workers with their addresses and MACs.

The picture comes from the spec and the load balancer configuration bootlab
writes, so it works without libvirt. For a lab that was built, it draws the
spec the lab was built with and marks which nodes run when libvirt answers.
SVG is laid out by bootlab itself (no graphviz needed); DOT is for
graphviz, Mermaid for Markdown that GitHub renders.`,
		Example: `  bootlab lab graph -f bootlab.yaml --out topology.svg
  bootlab lab graph --masters 3 --workers 0 -o mermaid
  bootlab lab graph --name demo -o dot | dot -Tpng -o topology.png`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "svg", "dot", "mermaid"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runGraph(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddSpecFlags(cmd, &opts.Spec)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "svg", "output format: svg, dot or mermaid")
	cmd.Flags().StringVar(&opts.Out, "out", "", "write the picture to this file instead of stdout")
	return cmd
}

func runGraph(ctx context.Context, f *cmdutil.Factory, opts *GraphOptions) error {
	// Without a named lab, graph draws the default lab, as config prints it.
	opts.Spec.Optional = true
	spec, err := opts.Spec.Load()
	if err != nil {
		return err
	}
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return err
	}
	defer l.Close()
	topo, err := l.Graph(ctx, lab.GraphOptions{})
	if err != nil {
		return err
	}
	data, err := topo.Render(diagram.Format(opts.Output))
	if err != nil {
		return err
	}
	f.Say("info", "%s", topo.Note)
	if opts.Out == "" {
		_, err = f.Streams.Out.Write(data)
		return err
	}
	// The picture replaces a regular file, never a FIFO or a device
	// (os.WriteFile waited on a FIFO for a reader, deaf to Ctrl-C).
	err = userfile.WriteNew(opts.Out, 0o644, true, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	var fe *userfile.Error
	if errors.As(err, &fe) {
		return fmt.Errorf("--out %w", err)
	}
	if err != nil {
		return fmt.Errorf("--out: %w (does %s exist?)", err, filepath.Dir(opts.Out))
	}
	f.Say("info", "wrote %s", opts.Out)
	return nil
}
