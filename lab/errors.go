package lab

import (
	"errors"

	"github.com/bootlab/bootlab/lab/diagnose"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/openshift"
	"github.com/bootlab/bootlab/lab/preflight"
	"github.com/bootlab/bootlab/lab/spec"
)

// InvalidInput reports whether err is one of the verbs' invalid-input
// errors: a spec, a preflight, a pull secret, a spec naming another lab, a
// directory the spec names that holds files bootlab did not make, an
// input the engine refused, or a file given as a log bundle that is none. The commands map it to one exit code without
// knowing which package each error comes from.
func InvalidInput(err error) bool {
	var (
		idErr     *labdir.IdentityError
		notOurs   *labdir.NotOursError
		specErr   *spec.ValidationError
		flightErr *preflight.Error
		secretErr *openshift.PullSecretError
		inputErr  *InputError
		bundleErr *diagnose.BundleError
	)
	return errors.As(err, &idErr) || errors.As(err, &notOurs) || errors.As(err, &specErr) ||
		errors.As(err, &flightErr) || errors.As(err, &secretErr) || errors.As(err, &inputErr) || errors.As(err, &bundleErr)
}
