// Package cmdutil holds what every bootlab command shares: the I/O streams,
// the logger and the status line writer, filled in once flags are parsed.
package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bootlab/bootlab/internal/status"
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
}

// SystemStreams returns the process's stdin, stdout and stderr.
func SystemStreams() Streams {
	return Streams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
	}
}

// Factory is handed to every command constructor. Log and Status are set by
// the root command before any RunE runs.
type Factory struct {
	Streams Streams
	Log     *slog.Logger
	Status  *status.Status
}

// Exit codes. Anything not listed is 1.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2 // bad flags or arguments
	ExitInvalid     = 3 // the lab spec or another input failed validation, or preflight failed
	ExitCheckFailed = 4 // verify/validate ran and reported failed checks
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

// ExactArgs is cobra.ExactArgs with a usage exit code.
func ExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return WithCode(ExitUsage, err)
		}
		return nil
	}
}

// NoArgs is cobra.NoArgs with a usage exit code.
func NoArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return WithCode(ExitUsage, err)
	}
	return nil
}
