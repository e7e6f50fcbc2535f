package cmdutil

import (
	"errors"

	"github.com/bootlab/bootlab/lab"
)

// ExitBug is a panic: a bootlab bug, whatever the input (sysexits
// EX_SOFTWARE). app.Run prints how to report it.
const ExitBug = 70

// ExitCodeOf is the exit code a command's error maps to: the code an
// ExitCoder chose, 3 for the library's invalid-input errors, 5 for a lab
// that does not exist, and 1 for anything else. The library's errors say
// what went wrong; only here is that turned into an exit code.
func ExitCodeOf(err error) int {
	var ec ExitCoder
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return ec.ExitCode()
	case lab.InvalidInput(err):
		return ExitInvalid
	case lab.NotUp(err):
		return ExitNoLab
	}
	return ExitError
}
