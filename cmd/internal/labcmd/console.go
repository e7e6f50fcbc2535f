package labcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/probe"
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
	spec, _, err := cmdutil.BuiltSpec(&opts.Spec)
	if err != nil {
		return err
	}
	n, ok := spec.Node(opts.Node)
	if !ok {
		return cmdutil.UsageErrorf("no node %q in lab %s (nodes: %s)", opts.Node, spec.Name, nodeNames(spec))
	}
	path := labdir.ConsoleLog(spec, n)
	out := f.Streams.Out
	if spec.Profile == labspec.ProfileProbe && !opts.Raw {
		// Probe reports are one JSON line each: show them as a person reads.
		out = &probe.ReadableConsole{W: out}
	}
	where := ""
	if spec.Remote() {
		// virtlogd writes the log on the hypervisor's machine: read it there.
		conn, cerr := f.Connector()(ctx, spec.Libvirt.URI, f.Log)
		if cerr != nil {
			return cerr
		}
		defer conn.Close()
		where = " on " + conn.Host().Name()
		err = followHostFile(ctx, conn.Host(), path, out, !opts.NoFollow)
	} else {
		err = followFile(ctx, path, out, !opts.NoFollow, 250*time.Millisecond)
	}
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no console log for %s at %s%s: the node has not started yet (`bootlab lab up`)", n.Name, path, where)
	}
	if errors.Is(err, context.Canceled) {
		// Ctrl-C is how following ends: 130, as for any interrupted command,
		// but with nothing to resume or clean up there is nothing to say.
		return cmdutil.WithCode(cmdutil.ExitInterrupted, cmdutil.ErrSilent)
	}
	return err
}

// followHostFile is followFile for a file on a (remote) host: read once,
// or followed with tail -F until ctx ends.
func followHostFile(ctx context.Context, h host.Host, path string, out io.Writer, follow bool) error {
	if !follow {
		data, err := h.ReadFile(ctx, path)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	}
	q := sshc.Quote(path)
	var errb strings.Builder
	code, err := h.Run(ctx, "[ -e "+q+" ] || exit 66; exec tail -c +1 -F -- "+q+" 2>/dev/null", nil, out, &errb)
	switch {
	case err != nil:
		return err
	case code == 66:
		return &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	case code != 0:
		return fmt.Errorf("follow %s on %s: exit status %d %s", path, h.Name(), code, strings.TrimSpace(errb.String()))
	}
	return nil
}

// followFile copies path to out and, when follow is set, keeps copying what
// is appended (starting over if the file is truncated) until ctx ends.
func followFile(ctx context.Context, path string, out io.Writer, follow bool, every time.Duration) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	var off int64
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := io.Copy(out, fh)
		off += n
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if fi, err := os.Stat(path); err == nil && fi.Size() < off {
			if _, err := fh.Seek(0, io.SeekStart); err != nil {
				return err
			}
			off = 0
		}
	}
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
