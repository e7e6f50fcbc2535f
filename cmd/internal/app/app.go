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
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	charmlog "github.com/charmbracelet/log"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cachecmd"
	"github.com/bootlab/bootlab/cmd/internal/classcmd"
	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/cmd/internal/dashcmd"
	"github.com/bootlab/bootlab/cmd/internal/labcmd"
	"github.com/bootlab/bootlab/cmd/internal/stagecmd"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/internal/version"
	"github.com/bootlab/bootlab/lab"
)

// Main runs bootlab with the process's arguments and streams and returns the
// exit code; the programs it starts inherit none of its descriptors but
// the standard three. The first Ctrl-C cancels the context; steps clean up and return.
// A second Ctrl-C (or SIGTERM) ends the process at once, should a step
// not return.
func Main() int {
	closeOnExecInherited()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	return Run(ctx, cmdutil.SystemStreams(), os.Args[1:])
}

// Run executes bootlab with args and returns the exit code. Errors are printed
// once, here; a panic is a bootlab bug, reported as one (see recoverBug).
func Run(ctx context.Context, streams cmdutil.Streams, args []string) int {
	return execute(ctx, streams, args, NewCmdRoot, lab.ConnectLibvirt)
}

// issuesURL is where a bootlab bug is reported.
const issuesURL = "https://github.com/bootlab/bootlab/issues"

// execute is Run with the command tree newRoot builds (tests add a
// command that panics) and the hypervisors connect opens (tests pass the
// shared fake, hypervisor.Shared).
func execute(ctx context.Context, streams cmdutil.Streams, args []string, newRoot func(*cmdutil.Factory) *cobra.Command, connect lab.Connector) (exit int) {
	defer func() {
		if r := recover(); r != nil {
			exit = reportBug(streams.ErrOut, r, debug.Stack())
		}
	}()
	f := &cmdutil.Factory{Streams: streams, Connect: connect}
	root := newRoot(f)
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	jsonLogs := false
	if fl := root.PersistentFlags().Lookup("log-format"); fl != nil {
		jsonLogs = fl.Value.String() == "json"
	}
	if f.Status != nil {
		f.Status.End(false)
	}
	code := cmdutil.ExitCodeOf(err)
	switch {
	case code != cmdutil.ExitError:
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		code = cmdutil.ExitInterrupted
	case isFlagError(err), strings.HasPrefix(err.Error(), "unknown command "):
		// Flag errors and cobra's unknown top-level command are usage errors.
		code = cmdutil.ExitUsage
	}
	if code == cmdutil.ExitInterrupted && !errors.Is(err, cmdutil.ErrSilent) {
		// "context canceled" says nothing the user does not know: they pressed Ctrl-C.
		target := ""
		if cmd != nil {
			target = labTarget(cmd)
		}
		printError(streams.ErrOut, jsonLogs, code, interrupted(cmd, target))
		return code

	}
	if msg := err.Error(); msg != "" && !errors.Is(err, cmdutil.ErrSilent) {
		if cmd != nil {
			msg = cmdutil.Retarget(msg, labTarget(cmd))
		}
		printError(streams.ErrOut, jsonLogs, code, cmdutil.CutLong(msg))
	}
	return code
}

// reportBug prints a panic as what it is, a bootlab bug: one line saying
// so and where to report it (with the version), then the stack, on stderr.
// The exit code is its own (sysexits EX_SOFTWARE), never usage's 2.
func reportBug(w io.Writer, r any, stack []byte) int {
	v := version.Get()
	fmt.Fprintf(w, "BUG: bootlab %s (commit %s) crashed: %v. This is a bug in bootlab, not in what you gave it: please report it at %s with the command you ran and the stack below.\n", v.Version, v.Commit, r, issuesURL)
	w.Write(stack)
	return cmdutil.ExitBug
}

// labTarget is how the user named the lab (-f, --name), repeated in the
// lab commands we suggest. A class command's -f and --name name a class,
// not a lab: the lab commands its messages suggest already name their lab.
func labTarget(cmd *cobra.Command) string {
	if isClassCmd(cmd) {
		return ""
	}
	return cmdutil.TargetArgsOf(cmd.Flags())
}

func isClassCmd(cmd *cobra.Command) bool {
	return strings.HasPrefix(cmd.CommandPath()+" ", "bootlab class ")
}

// printError prints the command's one error line: "ERROR: msg", or with
// --log-format json a JSON line like every other line on stderr.
func printError(w io.Writer, jsonLogs bool, code int, msg string) {
	if jsonLogs {
		status.JSONLine(w, "error", msg, map[string]any{"exitCode": code})
		return
	}
	if code == cmdutil.ExitInterrupted {
		fmt.Fprintln(w, msg)
		return
	}
	fmt.Fprintf(w, "ERROR: %s\n", msg)
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
		Example: `  sudo make demo                    # from the clone: a rehearsal lab, up and verified
  sudo bootlab stage run 07
  sudo bootlab lab ssh bootstrap
  bootlab stage explain 07`,
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
			f.JSONLogs = logFormat == "json"
			switch {
			case quiet:
				f.Status = status.Discard()
			case f.JSONLogs:
				// All of stderr is JSON then: step lines too.
				f.Status = status.NewJSON(f.Streams.ErrOut)
			default:
				// TERM=dumb gets plain lines: no spinner, no escape codes.
				f.Status = status.New(f.Streams.ErrOut, f.Streams.ErrTTY && os.Getenv("TERM") != "dumb")
			}
			// Hints repeat how the user named the lab (-f, --name).
			if target := labTarget(cmd); target != "" {
				f.Status.SetRewrite(func(s string) string { return cmdutil.Retarget(s, target) })
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError{err} })
	root.PersistentFlags().CountVarP(&verbosity, "verbose", "v", "more log output (-v debug, -vv also libvirt XML)")
	root.PersistentFlags().BoolVarP(&quiet, "quiet", "q", false, "only errors and command output")
	root.PersistentFlags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	// --version prints what `bootlab version` prints (kubectl and gh have
	// both). The flag is bootlab's own: cobra's would take -v, which is
	// --verbose.
	root.Version = version.Get().Version
	root.SetVersionTemplate(versionText(version.Get()))
	root.Flags().Bool("version", false, "print the version, commit, Go version and platform (as bootlab version does)")

	root.AddGroup(&cobra.Group{ID: "main", Title: "Commands:"})
	for _, c := range []*cobra.Command{labcmd.NewCmdLab(f), stagecmd.NewCmdStage(f), classcmd.NewCmdClass(f), cachecmd.NewCmdCache(f, nil), dashcmd.NewCmdDashboard(f, nil)} {
		c.GroupID = "main"
		root.AddCommand(c)
	}
	root.AddCommand(newCmdVersion(f))
	root.SetHelpCommand(newCmdHelp())
	// Added here, not when cobra executes, so it is a group like the others.
	root.InitDefaultCompletionCmd()
	refuseUnknownSubcommands(root)
	cmdutil.RegisterCompletions(root)
	return root
}

// newCmdHelp is `bootlab help [command]`: cobra's own prints "Unknown help
// topic" and exits 0, so a script cannot tell a typo from help.
func newCmdHelp() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return cmdutil.UsageErrorf("no help topic %q: `bootlab --help` lists the commands", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
	}
}

// refuseUnknownSubcommands makes every command group that runs nothing
// itself (lab probe-image, completion) refuse an unknown subcommand with a
// usage error, as the groups with cmdutil.UnknownSubcommand do: cobra
// alone prints the group's help and exits 0.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		if sub.HasSubCommands() && !sub.Runnable() {
			sub.Args = cobra.ArbitraryArgs
			sub.RunE = cmdutil.UnknownSubcommand
		}
		refuseUnknownSubcommands(sub)
	}
}

func newLogger(s cmdutil.Streams, verbosity int, quiet bool, format string) *slog.Logger {
	level := charmlog.InfoLevel
	switch {
	case quiet:
		level = charmlog.ErrorLevel
	case verbosity > 1:
		level = charmlog.Level(lab.LevelXML) // -vv: also the XML sent to libvirt
	case verbosity > 0:
		level = charmlog.DebugLevel
	}
	opts := charmlog.Options{Level: level, ReportTimestamp: format == "json" || verbosity > 0, TimeFormat: time.RFC3339}
	if format == "json" {
		opts.Formatter = charmlog.JSONFormatter
	}
	// The writer is wrapped so the logger's renderer does not query the
	// terminal for its colours at start-up (escape sequences a user sees);
	// the colour profile is set from what we already know instead.
	l := charmlog.NewWithOptions(plainWriter{s.ErrOut}, opts)
	if s.ErrTTY && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && format == "text" {
		l.SetColorProfile(termenv.ANSI256)
	}
	return slog.New(l)
}

// plainWriter hides the file behind an io.Writer from terminal detection.
type plainWriter struct{ w io.Writer }

func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

func newCmdVersion(f *cmdutil.Factory) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print bootlab's version, commit, Go version and platform",
		Example: `  bootlab version
  bootlab version -o json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(output, "text", "json"); err != nil {
				return err
			}
			in := version.Get()
			if output == "json" {
				return cmdutil.WriteJSON(f.Streams.Out, "Version", in)
			}
			fmt.Fprint(f.Streams.Out, versionText(in))
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// interrupted is the line an interrupted command ends with: only a command
// that builds a lab or a class (up) suggests the down that removes what it
// made; one that changes a lab otherwise is run again, and one that only
// reads changed nothing.
func interrupted(cmd *cobra.Command, target string) string {
	path := ""
	if cmd != nil {
		path = cmd.CommandPath()
	}
	switch path {
	case "bootlab lab up":
		return fmt.Sprintf("interrupted: run the same command again to resume, or `%s` to remove what was made", strings.TrimSpace("bootlab lab down "+target))
	case "bootlab class up":
		return fmt.Sprintf("interrupted: run the same command again to resume, or `%s` to remove what was made", strings.TrimSpace("bootlab class down "+cmdutil.TargetArgsOf(cmd.Flags())))
	}
	if cmd != nil && readOnly[strings.TrimPrefix(path, "bootlab ")] {
		return "interrupted: this command only reads, so nothing was changed"
	}
	return "interrupted: run the same command again to resume"
}

// readOnly are the commands that change nothing on a lab, a class or the
// host (what they print or write for the user aside).
var readOnly = map[string]bool{
	"lab status": true, "lab verify": true, "lab config": true, "lab list": true, "lab wait": true,
	"lab console": true, "lab graph": true, "lab preflight": true, "lab gather": true,
	"stage status": true, "stage validate": true, "stage list": true, "stage explain": true, "stage diff": true,
	"class status": true, "class config": true, "class verify": true, "cache list": true, "version": true,
}

// versionText is what `bootlab version` and `bootlab --version` print.
func versionText(in version.Info) string {
	return fmt.Sprintf("bootlab %s\ncommit %s\n%s %s\n", in.Version, in.Commit, in.GoVersion, in.Platform)
}
