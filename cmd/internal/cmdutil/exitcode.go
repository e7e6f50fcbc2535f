package cmdutil

import (
	"errors"
	"io/fs"

	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/lab"
)

// ExitBug is a panic: a bootlab bug, whatever the input (sysexits
// EX_SOFTWARE). app.Run prints how to report it.
const ExitBug = 70

// ExitCodeOf is the exit code a command's error maps to: the code an
// ExitCoder chose, 3 for the library's invalid-input errors and a file the
// user named that cannot be used (a FIFO, a device, a file too large), 2
// for an output file kept for want of --force, 5 for a lab that does not
// exist, and 1 for anything else. The library's errors say what went
// wrong; only here is that turned into an exit code.
func ExitCodeOf(err error) int {
	var (
		ec ExitCoder
		ue *userfile.Error
	)
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.As(err, &ue) && errors.Is(ue, fs.ErrExist):
		return ExitUsage
	case lab.InvalidInput(err), errors.As(err, &ue):
		return ExitInvalid
	case lab.NotUp(err):
		return ExitNoLab
	}
	return ExitError
}
