package cmdutil

import (
	"errors"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/openshift"
	"github.com/bootlab/bootlab/lab/preflight"
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
	case invalidInput(err):
		return ExitInvalid
	case errors.Is(err, labdir.ErrNoState):
		return ExitNoLab
	}
	return ExitError
}

// invalidInput reports whether err is one of the library's invalid-input
// errors: a spec, a preflight, a pull secret, a spec naming another lab, or
// a directory the spec names that holds files bootlab did not make.
func invalidInput(err error) bool {
	var (
		idErr     *labdir.IdentityError
		notOurs   *labdir.NotOursError
		specErr   *spec.ValidationError
		flightErr *preflight.Error
		secretErr *openshift.PullSecretError
		inputErr  *lab.InputError
	)
	return errors.As(err, &idErr) || errors.As(err, &notOurs) || errors.As(err, &specErr) || errors.As(err, &flightErr) || errors.As(err, &secretErr) || errors.As(err, &inputErr)
}
