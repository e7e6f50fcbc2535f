package labdir_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
)

// The last verify result is the lab's whose identity it carries: a lab of
// the same name built later (another UUID) reads "never verified".
func TestLoadVerifyRecordOfTheLab(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		written   string // the UUID the record carries ("": written before records carried one)
		labUUID   string // the UUID of the lab state that reads it
		wantFound bool
	}{
		{"this lab's result", "uuid-a", "uuid-a", true},
		{"an earlier lab of the same name", "uuid-a", "uuid-b", false},
		{"a result without a UUID, for a lab with one", "", "uuid-b", false},
		{"a result without a UUID, for a lab without one", "", "", true},
		{"a lab without a UUID never takes a result that names one", "uuid-a", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, labdir.SaveVerifyRecord(dir, &labdir.VerifyRecord{Time: time.Now(), OK: true, Total: 3, Passed: 3, LabUUID: tt.written}))
			rec, err := labdir.LoadVerifyRecord(dir, tt.labUUID)
			require.NoError(t, err)
			if !tt.wantFound {
				assert.Nil(t, rec)
				assert.Equal(t, "never verified", rec.Summary())
				return
			}
			require.NotNil(t, rec)
			assert.Equal(t, "3/3 ok", rec.Summary())
		})
	}
}

func TestLoadVerifyRecordAbsentOrBroken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec, err := labdir.LoadVerifyRecord(dir, "uuid-a")
	require.NoError(t, err)
	assert.Nil(t, rec, "never verified")
	require.NoError(t, os.WriteFile(labdir.VerifyRecordPath(dir), []byte("{"), 0o600))
	_, err = labdir.LoadVerifyRecord(dir, "uuid-a")
	assert.ErrorContains(t, err, "delete it; the next `bootlab lab verify` writes it again")
}

// A record written before pending checks were counted apart lists them
// as failed; its summary says what it said then.
func TestVerifyRecordSummary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rec  labdir.VerifyRecord
		want string
	}{
		{labdir.VerifyRecord{OK: true, Total: 3, Passed: 3}, "3/3 ok"},
		{labdir.VerifyRecord{OK: true, Total: 5, Passed: 3, Pending: 2}, "3/5 ok, 2 pending"},
		{labdir.VerifyRecord{OK: false, Total: 5, Passed: 2, Pending: 2}, "1 of 5 failed, 2 pending"},
		{labdir.VerifyRecord{OK: false, Total: 5, Passed: 3, Skipped: 1}, "1 of 5 failed"},
		{labdir.VerifyRecord{OK: false, Total: 5, Passed: 2}, "3 of 5 failed"},
	} {
		assert.Equal(t, c.want, c.rec.Summary(), "%+v", c.rec)
	}
}
