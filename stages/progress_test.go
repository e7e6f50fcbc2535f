package stages

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The last record of a stage decides its state; unknown stage numbers are
// ignored; a stage without records is pending.
func TestFoldRecords(t *testing.T) {
	t.Parallel()
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

// A later `stage run --all` skips the stages already done (their markers
// exist) and runs the unmarked ones again: the skips leave those stages
// done, so the stage reached stays the last one (class status, the
// dashboard), and a skip for another reason is still a skip.
func TestFoldRecordsKeepsDoneThroughAnAlreadyDoneSkip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	cat := Default()
	var recs []Record
	for _, s := range cat {
		recs = append(recs, Record{Timestamp: at, Phase: PhaseStart, Number: s.Number},
			Record{Timestamp: at, Phase: PhaseEnd, Number: s.Number, Result: ResultSuccess})
	}
	last := cat[len(cat)-1]
	require.Equal(t, "15 check-api-url", Reached(FoldRecords(recs)))
	// The second --all: stage 02 has no marker and runs, the rest skip.
	for _, s := range cat {
		if s.Number == 2 {
			recs = append(recs, Record{Timestamp: at, Phase: PhaseStart, Number: s.Number},
				Record{Timestamp: at, Phase: PhaseEnd, Number: s.Number, Result: ResultSuccess})
			continue
		}
		recs = append(recs, Record{Timestamp: at, Phase: PhaseSkip, Number: s.Number, Result: ResultSkipped, Reason: skippedDone + "its markers exist (--force reruns)"})
	}
	got := FoldRecords(recs)
	for _, p := range got {
		assert.Equal(t, ProgressDone, p.State, "%02d %s", p.Number, p.Slug)
		assert.Empty(t, p.Message)
	}
	assert.Equal(t, fmt.Sprintf("%02d %s", last.Number, last.Slug), Reached(got))
	// Skipped for another reason (the release has no such stage): skipped.
	recs = append(recs, Record{Timestamp: at, Phase: PhaseSkip, Number: last.Number, Result: ResultSkipped, Reason: "not in release 4.16"})
	got = FoldRecords(recs)
	assert.Equal(t, ProgressSkipped, got[len(got)-1].State)
	assert.Equal(t, "not in release 4.16", got[len(got)-1].Message)
}
