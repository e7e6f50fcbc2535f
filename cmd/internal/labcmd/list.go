package labcmd

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// ListOptions are the options of `lab list`.
type ListOptions struct {
	Output string
	// Home is the bootlab home whose labs/ directory is read.
	Home string
	// URIs are libvirt daemons searched for orphaned labs (beyond the ones
	// the labs name).
	URIs []string
}

// NewCmdList builds `lab list`: every lab on the host.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every lab on the host: profile, nodes up, network, last verify",
		Example: `  bootlab lab list
  bootlab lab list -o json`,
		Long: `List every lab on the host: each lab directory under the bootlab home
($BOOTLAB_HOME, else /var/lib/bootlab as root) holding a state.json, and each
lab whose libvirt domains point at a lab directory elsewhere (labDir: in its
spec), with its profile, running nodes, network and the last ` + "`lab verify`" + `
result. A lab whose libvirt network or domains remain without any lab
directory is listed as "orphaned, found in libvirt", with how to remove it.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runList(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	cmd.Flags().StringVar(&opts.Home, "home", "", "bootlab home to list (default $BOOTLAB_HOME, else /var/lib/bootlab as root)")
	cmd.Flags().StringSliceVar(&opts.URIs, "uri", []string{"qemu:///system"}, "libvirt URIs to search for orphaned labs (the labs' own URIs are always searched)")
	return cmd
}

// ListOutput is what `lab list -o json` prints.
type ListOutput struct {
	Labs []lab.Summary `json:"labs"`
}

func runList(ctx context.Context, f *cmdutil.Factory, opts *ListOptions) error {
	labs, err := lab.List(ctx, lab.ListOptions{Home: opts.Home, URIs: opts.URIs, Connect: f.Connector(), Log: f.Log})
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		return cmdutil.WriteJSON(f.Streams.Out, "LabList", ListOutput{Labs: labs})
	}
	if len(labs) == 0 {
		home := opts.Home
		if home == "" {
			home = spec.DefaultHome()
		}
		f.Status.Infof("no labs in %s: `bootlab lab up -f SPEC` builds one", home)
		return nil
	}
	if err := printList(f.Streams.Out, labs); err != nil {
		return err
	}
	for _, l := range labs {
		if h := l.OrphanHint(); h != "" {
			f.Status.Infof("%s", h)
		} else if l.Error != "" {
			f.Status.Infof("lab %s: %s", l.Name, l.Error)
		}
	}
	return nil
}

func printList(out io.Writer, labs []lab.Summary) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tPROFILE\tNODES UP\tNETWORK\tURI\tLAST VERIFY")
	for _, l := range labs {
		verify := l.Verify.Summary()
		switch {
		case l.Orphaned:
			verify = "orphaned, found in libvirt"
		case l.Error != "":
			verify = "unreadable (see below)"
		case l.Verify != nil:
			verify += " at " + l.Verify.Time.Local().Format("2006-01-02 15:04")
		}
		net := l.CIDR
		if l.Orphaned {
			net = l.Network
		}
		fmt.Fprintf(w, "%s\t%s\t%d/%d\t%s\t%s\t%s\n", l.Name, orDash(string(l.Profile)), l.NodesUp, l.NodesTotal, orDash(net), orDash(l.URI), verify)
	}
	return w.Flush()
}
