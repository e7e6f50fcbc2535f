package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHasCmdlineFlag(t *testing.T) {
	t.Parallel()
	assert.True(t, hasCmdlineFlag("console=ttyS0 panic=-1 quiet bootlab.rehearsal\n", "bootlab.rehearsal"))
	assert.False(t, hasCmdlineFlag("console=ttyS0 bootlab.rehearsal=0", "bootlab.rehearsal"))
	assert.False(t, hasCmdlineFlag("console=ttyS0", "bootlab.rehearsal"))
}
