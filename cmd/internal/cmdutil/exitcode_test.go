package cmdutil

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"

	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/openshift"
	"github.com/bootlab/bootlab/lab/preflight"
)

// The library's invalid-input errors carry no exit code of their own:
// ExitCodeOf maps them to 3, however deeply they are wrapped.
func TestExitCodeOfMapsLibraryErrors(t *testing.T) {
	for _, err := range []error{
		&spec.ValidationError{},
		fmt.Errorf("lab up: %w", &preflight.Error{}),
		fmt.Errorf("prepare: %w", fmt.Errorf("read: %w", &openshift.PullSecretError{Path: "ps.json", Msg: "not JSON"})),
		&labdir.IdentityError{},
		fmt.Errorf("cache archive: %w", &userfile.Error{Path: "/tmp/fifo", Msg: "is a FIFO (named pipe), not a regular file"}),
	} {
		assert.Equal(t, ExitInvalid, ExitCodeOf(err), "%#v", err)
	}
	assert.Equal(t, ExitUsage, ExitCodeOf(fmt.Errorf("export file %w", userfile.ExistsError("c.tar"))), "kept for want of --force: a usage error")
	assert.Equal(t, ExitNoLab, ExitCodeOf(fmt.Errorf("status: %w", labdir.ErrNoState)))
	assert.Equal(t, ExitCheckFailed, ExitCodeOf(WithCode(ExitCheckFailed, &spec.ValidationError{})), "an explicit code wins")
	assert.Equal(t, ExitError, ExitCodeOf(errors.New("connect to libvirt: refused")))
	assert.Equal(t, 0, ExitCodeOf(nil))
}
