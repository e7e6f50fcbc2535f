package engine

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/stages"
)

// Everything bootlab writes for a lab goes with `lab down`, the stage logs
// included (issue 27): the lab directory is gone, and a lab of the same
// name built next has a new identity and none of the earlier lab's stage
// records or verify result.
func TestDownRemovesStageLogsAndTheNextLabStartsClean(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	hv := fake.New()
	s := listSpec(t, home, "demo", "10.90.6.0/24")
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	first, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	log, err := stages.OpenLog(labdir.Stages(s), first.UUID)
	require.NoError(t, err)
	require.NoError(t, log.Records.Record(stages.Record{Phase: stages.PhaseEnd, Number: 15, Result: stages.ResultSuccess}))
	_, err = log.Output.Write([]byte("[15 check-api-url] done\n"))
	require.NoError(t, err)
	require.NoError(t, log.Close())
	require.NoError(t, labdir.SaveVerifyRecord(s.LabDir, &labdir.VerifyRecord{Time: time.Now(), OK: true, Total: 1, Passed: 1, LabUUID: first.UUID}))

	steps, err := Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	assert.NoDirExists(t, labdir.Stages(s), "the stage logs go with the lab")
	assert.NoDirExists(t, s.LabDir, "nothing of the lab is left in its directory")
	assert.Contains(t, steps[len(steps)-1].Detail, "removed")

	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	again, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.NotEqual(t, first.UUID, again.UUID, "a new lab of the same name is a new identity")
	recs, err := stages.ReadRecords(labdir.Stages(s), again.UUID)
	require.NoError(t, err)
	assert.Empty(t, recs)
	_, err = os.Stat(labdir.VerifyRecordPath(s.LabDir))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
