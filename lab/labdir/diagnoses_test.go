package labdir

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The history is the lab's (another lab's of the same name is not shown
// and is replaced), keeps the newest MaxDiagnoses, and is 0600.
func TestDiagnosesHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := LoadDiagnoses(dir, "lab-1")
	require.NoError(t, err)
	assert.Nil(t, d, "never diagnosed")
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for i := 0; i < MaxDiagnoses+3; i++ {
		require.NoError(t, AddDiagnosis(dir, "lab-1", Diagnosis{Time: t0.Add(time.Duration(i) * time.Minute), FailedAt: "api.dns"}))
	}
	d, err = LoadDiagnoses(dir, "lab-1")
	require.NoError(t, err)
	require.Len(t, d.Runs, MaxDiagnoses)
	assert.True(t, d.Runs[0].Time.Equal(t0.Add(3*time.Minute)), "the oldest went first")
	fi, err := os.Stat(DiagnosesPath(dir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	d, err = LoadDiagnoses(dir, "lab-2")
	require.NoError(t, err)
	assert.Nil(t, d, "another lab's history is not this lab's")
	require.NoError(t, AddDiagnosis(dir, "lab-2", Diagnosis{Time: t0, Complete: true}))
	d, err = LoadDiagnoses(dir, "lab-2")
	require.NoError(t, err)
	require.Len(t, d.Runs, 1, "a new lab starts its own history")

	require.NoError(t, os.WriteFile(DiagnosesPath(dir), []byte("{"), 0o600))
	_, err = LoadDiagnoses(dir, "lab-2")
	assert.ErrorContains(t, err, "delete it; the next `bootlab lab diagnose` writes it again")
}
