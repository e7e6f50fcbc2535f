// Package app is the bootlab command line: the root command, global flags,
// logging and the mapping of errors to exit codes.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	charmlog "github.com/charmbracelet/log"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/cmd/internal/dashcmd"
	"github.com/bootlab/bootlab/cmd/internal/labcmd"
	"github.com/bootlab/bootlab/cmd/internal/stagecmd"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/internal/version"
)

// Main runs bootlab with the process's arguments and streams and returns the
// exit code. The first Ctrl-C cancels the context; steps clean up and return.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, cmdutil.SystemStreams(), os.Args[1:])
}

// Run executes bootlab with args and returns the exit code. Errors are printed
// once, here.
func Run(ctx context.Context, streams cmdutil.Streams, args []string) int {
	f := &cmdutil.Factory{Streams: streams}
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	if f.Status != nil {
		f.Status.End(false)
	}
	code := cmdutil.ExitError
	var ec cmdutil.ExitCoder
	switch {
	case errors.As(err, &ec):
		code = ec.ExitCode()
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		code = cmdutil.ExitInterrupted
	case isFlagError(err):
		code = cmdutil.ExitUsage
	}
	if code == cmdutil.ExitInterrupted {
		// "context canceled" says nothing the user does not know: they pressed Ctrl-C.
		fmt.Fprintln(streams.ErrOut, "interrupted: run the same command again to resume, or `bootlab lab down` to remove what was made")
		return code
	}
	if msg := err.Error(); msg != "" && !errors.Is(err, cmdutil.ErrSilent) {
		fmt.Fprintf(streams.ErrOut, "ERROR: %s\n", msg)
	}
	return code
}

type flagError struct{ error }

func isFlagError(err error) bool {
	var fe flagError
	return errors.As(err, &fe)
}

// NewCmdRoot builds the bootlab command tree.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	var (
		verbosity int
		quiet     bool
		logFormat string
	)
	root := &cobra.Command{
		Use:   "bootlab",
		Short: "Build OpenShift UPI labs on libvirt and replay the bootstrap step by step",
		Long: `bootlab builds a user-provisioned OpenShift lab on libvirt (network, DNS, DHCP,
load balancer, storage, VMs with Ignition through fw_cfg), or a probe lab of tiny VMs
that rehearses the bootstrap handshake in seconds, and replays the bootstrap node's
bootkube.sh as numbered stages that explain, execute, validate and log.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if logFormat != "text" && logFormat != "json" {
				return cmdutil.UsageErrorf("--log-format must be text or json, not %q", logFormat)
			}
			f.Log = newLogger(f.Streams, verbosity, quiet, logFormat)
			if quiet {
				f.Status = status.Discard()
			} else {
				// JSON logs are for machines: no spinner in between them.
				f.Status = status.New(f.Streams.ErrOut, f.Streams.ErrTTY && logFormat == "text")
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError{err} })
	root.PersistentFlags().CountVarP(&verbosity, "verbose", "v", "more log output (-v debug, -vv also libvirt XML)")
	root.PersistentFlags().BoolVarP(&quiet, "quiet", "q", false, "only errors and command output")
	root.PersistentFlags().StringVar(&logFormat, "log-format", "text", "log format: text or json")

	root.AddGroup(&cobra.Group{ID: "main", Title: "Commands:"})
	for _, c := range []*cobra.Command{labcmd.NewCmdLab(f), stagecmd.NewCmdStage(f), dashcmd.NewCmdDashboard(f, nil)} {
		c.GroupID = "main"
		root.AddCommand(c)
	}
	root.AddCommand(newCmdVersion(f))
	return root
}

func newLogger(s cmdutil.Streams, verbosity int, quiet bool, format string) *slog.Logger {
	level := charmlog.InfoLevel
	switch {
	case quiet:
		level = charmlog.ErrorLevel
	case verbosity > 0:
		level = charmlog.DebugLevel
	}
	opts := charmlog.Options{Level: level, ReportTimestamp: format == "json" || verbosity > 0}
	if format == "json" {
		opts.Formatter = charmlog.JSONFormatter
	}
	// The writer is wrapped so the logger's renderer does not query the
	// terminal for its colours at start-up (escape sequences a user sees);
	// the colour profile is set from what we already know instead.
	l := charmlog.NewWithOptions(plainWriter{s.ErrOut}, opts)
	if s.ErrTTY && os.Getenv("NO_COLOR") == "" && format == "text" {
		l.SetColorProfile(termenv.ANSI256)
	}
	return slog.New(l)
}

// plainWriter hides the file behind an io.Writer from terminal detection.
type plainWriter struct{ w io.Writer }

func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

func newCmdVersion(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the bootlab version",
		Args:  cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(f.Streams.Out, "bootlab %s\n", version.String())
			return nil
		},
	}
}
