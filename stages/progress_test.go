package stages

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The last record of a stage decides its state; unknown stage numbers are
// ignored; a stage without records is pending.
func TestFoldRecords(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cat := Default()
	first, second, third := cat[0], cat[1], cat[2]
	recs := []Record{
		{Timestamp: at, Phase: PhaseStart, Number: first.Number},
		{Timestamp: at.Add(time.Second), Phase: PhaseEnd, Number: first.Number, Result: ResultSuccess},
		{Timestamp: at, Phase: PhaseStart, Number: second.Number},
		{Timestamp: at.Add(2 * time.Second), Phase: PhaseEnd, Number: second.Number, Result: ResultFailure, ErrorLine: "line 7"},
		{Timestamp: at, Phase: PhaseSkip, Number: third.Number, Reason: "done already"},
		{Timestamp: at, Phase: PhaseStart, Number: 999},
	}
	got := FoldRecords(recs)
	require.Len(t, got, len(cat))
	cases := []struct {
		i       int
		state   ProgressState
		message string
	}{
		{0, ProgressDone, ""},
		{1, ProgressFailed, "line 7"},
		{2, ProgressSkipped, "done already"},
		{3, ProgressPending, ""},
	}
	for _, tc := range cases {
		assert.Equal(t, cat[tc.i].Number, got[tc.i].Number)
		assert.Equal(t, tc.state, got[tc.i].State, cat[tc.i].Slug)
		assert.Equal(t, tc.message, got[tc.i].Message, cat[tc.i].Slug)
	}
	assert.Equal(t, at.Add(time.Second), got[0].Time)
	require.Equal(t, "openshift-manifests", first.Slug)
	assert.Equal(t, "01 openshift-manifests", Reached(got), "the last stage done")
	assert.Equal(t, "", Reached(FoldRecords(nil)))
}
