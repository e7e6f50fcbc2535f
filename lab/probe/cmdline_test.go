package probe

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bootlab/bootlab/lab/spec"
)

// The host puts lab/spec's flag on the kernel command line; the agent, which
// imports no lab, looks for this package's: they must be the same word.
func TestRehearsalCmdlineFlagIsTheHostsOne(t *testing.T) {
	t.Parallel()
	assert.Equal(t, spec.RehearsalCmdlineFlag, RehearsalCmdlineFlag)
}
