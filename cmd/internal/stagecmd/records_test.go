package stagecmd

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/stages"
	"github.com/bootlab/bootlab/stages/stagestest"
)

// stage run on a built lab writes records that carry the lab's identity
// (its state's UUID), so a later lab of the same name never reads them.
func TestRunRecordsCarryLabUUID(t *testing.T) {
	e, _ := rehearsalEnv(t, "")
	node := stagestest.New(t.TempDir())
	node.Script = func(string, io.Writer) int { return 0 }
	require.NoError(t, node.FinishBefore(stages.Default(), 7))
	require.NoError(t, execute(runCmd(e, node, newFakeCheckpoints()), "-f", e.spec, "07"))

	logDir := filepath.Join(e.labDir, "stages")
	recs, err := stages.ReadRecords(logDir, rehearsalUUID)
	require.NoError(t, err)
	require.Len(t, recs, 2, "the start and end of 07")
	assert.Equal(t, stages.PhaseStart, recs[0].Phase)
	assert.Equal(t, stages.ResultSuccess, recs[1].Result)
	other, err := stages.ReadRecords(logDir, "")
	require.NoError(t, err)
	assert.Empty(t, other, "no record without the lab's UUID")
}
