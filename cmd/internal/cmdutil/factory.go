// Package cmdutil holds what every bootlab command shares: the I/O streams,
// the logger and the status line writer, filled in once flags are parsed.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab"
)

// Streams are the process's standard streams. stdout is data, stderr is people.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrTTY is true when ErrOut is a terminal (spinners, colour).
	ErrTTY bool
	// OutTTY is true when Out is a terminal (tables rather than plain lines).
	OutTTY bool
	// InTTY is true when In is a terminal (a person can answer a prompt).
	InTTY bool
}

// SystemStreams returns the process's stdin, stdout and stderr.
func SystemStreams() Streams {
	return Streams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		InTTY:  term.IsTerminal(int(os.Stdin.Fd())),
	}
}

// Factory is handed to every command constructor. Log and Status are set by
// the root command before any RunE runs.
type Factory struct {
	Streams Streams
	Log     *slog.Logger
	Status  *status.Status
	// JSONLogs is set by --log-format json: every line on stderr is JSON.
	JSONLogs bool
	// Connect opens a hypervisor: the one way a command reaches libvirt.
	// app sets lab.ConnectLibvirt; command tests set
	// hypervisor.Shared(fake). Nil is the real one (Connector).
	Connect lab.Connector
}

// Connector is Connect, or lab.ConnectLibvirt when none was set.
func (f *Factory) Connector() lab.Connector {
	if f.Connect == nil {
		return lab.ConnectLibvirt
	}
	return f.Connect
}

// OpenLab opens the lab of spec with the Factory's connector, log and
// status: the handle every lab verb is a method of. Close it.
func (f *Factory) OpenLab(ctx context.Context, spec *spec.Spec) (*lab.Lab, error) {
	return lab.Open(ctx, spec, lab.Options{Connect: f.Connector(), Log: f.Log, Status: f.Status})
}

// Say prints a line for people on stderr (a summary, a warning): as is, or
// as a JSON line of the given level with --log-format json.
func (f *Factory) Say(level, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if f.JSONLogs {
		status.JSONLine(f.Streams.ErrOut, level, msg, nil)
		return
	}
	if level == "warn" {
		msg = "warning: " + msg
	}
	fmt.Fprintln(f.Streams.ErrOut, msg)
}

// Exit codes. Anything not listed is 1.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2 // bad flags or arguments
	ExitInvalid     = 3 // the lab spec or another input failed validation, or preflight failed
	ExitCheckFailed = 4 // verify/validate ran and reported failed checks
	ExitNoLab       = 5 // the named lab does not exist (was never brought up)
	ExitInterrupted = 130
)

// ExitCoder is implemented by errors that choose the process exit code.
type ExitCoder interface{ ExitCode() int }

// CodeError attaches an exit code to an error.
type CodeError struct {
	Code int
	Err  error
}

func (e *CodeError) Error() string { return e.Err.Error() }
func (e *CodeError) Unwrap() error { return e.Err }
func (e *CodeError) ExitCode() int { return e.Code }

// WithCode wraps err so the process exits with code.
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &CodeError{Code: code, Err: err}
}

// ErrSilent is returned by commands that already printed their failure (a
// table of failed checks, say) and want only the exit code.
var ErrSilent = errors.New("")

// UsageErrorf returns a usage error (exit 2).
func UsageErrorf(format string, args ...any) error {
	return WithCode(ExitUsage, fmt.Errorf(format, args...))
}

// OutputFlag validates an -o value against the formats a command prints.
func OutputFlag(val string, allowed ...string) error {
	for _, a := range allowed {
		if val == a {
			return nil
		}
	}
	return UsageErrorf("-o must be one of %v, not %q", allowed, val)
}

// ExactArgs is cobra.ExactArgs with a usage exit code.
func ExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return withUsage(cmd, err)
		}
		return nil
	}
}

// MaximumNArgs is cobra.MaximumNArgs with a usage exit code.
func MaximumNArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MaximumNArgs(n)(cmd, args); err != nil {
			return withUsage(cmd, err)
		}
		return nil
	}
}

// withUsage is a usage error that shows the command's usage line.
func withUsage(cmd *cobra.Command, err error) error {
	return WithCode(ExitUsage, fmt.Errorf("%s %w\nUsage: %s", cmd.CommandPath()+":", err, cmd.UseLine()))
}

// UnknownSubcommand is the RunE of a command group (`lab`, `stage`): with no
// argument it shows the help; with one it names the unknown subcommand, the
// ones it resembles, and exits 2 (cobra alone prints the help and exits 0).
func UnknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default for the root
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return UsageErrorf("%s (see `%s --help`)", msg, cmd.CommandPath())
}

// NoArgs is cobra.NoArgs with a usage exit code.
func NoArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		if hint := fileHint(cmd, args); hint != "" {
			err = fmt.Errorf("%w; %s", err, hint)
		}
		return withUsage(cmd, err)
	}
	return nil
}

// suggested matches a bootlab command suggested in backticks.
var suggested = regexp.MustCompile("`bootlab (lab|stage) ([a-z-]+)([^`]*)`")

// noSpecVerbs are suggested commands that take no lab spec flags.
var noSpecVerbs = map[string]bool{"probe-image": true, "list": true, "explain": true}

// Retarget adds target (the -f/--name flags the user named the lab with) to
// every bootlab command suggested in msg, so a pasted hint acts on the same
// lab; kind does the same with --name. Commands that already name a lab, or
// take no spec, are left as they are.
func Retarget(msg, target string) string {
	if target == "" {
		return msg
	}
	return suggested.ReplaceAllStringFunc(msg, func(m string) string {
		// `bootlab lab down && bootlab lab up`: each command gets the target.
		parts := strings.Split(strings.Trim(m, "`"), " && ")
		for i, p := range parts {
			sub := suggested.FindStringSubmatch("`" + p + "`")
			if sub == nil {
				continue
			}
			rest := sub[3]
			if noSpecVerbs[sub[2]] || strings.Contains(rest, " -f ") || strings.Contains(rest, "--name ") {
				continue
			}
			parts[i] = "bootlab " + sub[1] + " " + sub[2] + strings.TrimRight(rest, " ") + " " + target
		}
		return "`" + strings.Join(parts, " && ") + "`"
	})
}

// fileHint is the likely fix when a command that reads a spec with -f was
// given the spec as an argument (`lab config mylab.yaml`): kubectl users
// expect -f.
func fileHint(cmd *cobra.Command, args []string) string {
	fl := cmd.Flags().Lookup("file")
	if fl == nil || fl.Shorthand != "f" || len(args) != 1 {
		return ""
	}
	a := args[0]
	switch strings.ToLower(filepath.Ext(a)) {
	case ".yaml", ".yml", ".json":
		return fmt.Sprintf("did you mean -f %s?", a)
	}
	if fi, err := os.Stat(a); err == nil && !fi.IsDir() {
		return fmt.Sprintf("did you mean -f %s?", a)
	}
	return ""
}
