package stages_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/stages"
)

// A stage log opened for a lab stamps the lab's UUID on every record, and
// keeps one a caller already stamped.
func TestOpenLogStampsLabUUID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := stages.OpenLog(dir, "uuid-a")
	require.NoError(t, err)
	require.NoError(t, l.Records.Record(stages.Record{Phase: stages.PhaseStart, Number: 1}))
	require.NoError(t, l.Records.Record(stages.Record{Phase: stages.PhaseStart, Number: 2, LabUUID: "uuid-b"}))
	require.NoError(t, l.Close())

	data, err := os.ReadFile(filepath.Join(dir, stages.RecordsFile))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 2)
	var got []string
	for _, line := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		got = append(got, m["labUUID"].(string))
	}
	assert.Equal(t, []string{"uuid-a", "uuid-b"}, got)
	fi, err := os.Stat(filepath.Join(dir, stages.RecordsFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// ReadRecords returns only the records of the lab it is asked for: those of
// an earlier lab of the same name, and those that name no lab (written
// before records carried one), are another lab's unless the lab has no
// UUID itself.
func TestReadRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	lines := []string{
		`{"timestamp":"2026-11-26T09:00:00Z","phase":"stage end","number":15,"result":"success"}`,
		`{"timestamp":"2026-11-26T09:30:00Z","phase":"stage end","number":7,"result":"success","labUUID":"old"}`,
		`not a record: a line cut short`,
		`{"timestamp":"2026-11-26T10:00:00Z","phase":"stage start","number":1,"labUUID":"new"}`,
		`{"timestamp":"2026-11-26T10:01:00Z","phase":"stage end","number":1,"result":"success","labUUID":"new"}`,
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, stages.RecordsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o600))

	tests := []struct {
		name    string
		labUUID string
		want    []int // record numbers, oldest first
	}{
		{"the current lab's records only", "new", []int{1, 1}},
		{"an earlier lab of the same name", "old", []int{7}},
		{"a lab without a UUID takes the records without one", "", []int{15}},
		{"a lab that never ran a stage", "other", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := stages.ReadRecords(dir, tt.labUUID)
			require.NoError(t, err)
			var got []int
			for _, r := range recs {
				assert.Equal(t, tt.labUUID, r.LabUUID)
				got = append(got, r.Number)
			}
			assert.Equal(t, tt.want, got)
		})
	}
	recs, err := stages.ReadRecords(dir, "new")
	require.NoError(t, err)
	assert.Equal(t, t0, recs[0].Timestamp)
	assert.Equal(t, stages.ResultSuccess, recs[1].Result)

	none, err := stages.ReadRecords(t.TempDir(), "new")
	require.NoError(t, err)
	assert.Empty(t, none, "no stage log is no records")
}
