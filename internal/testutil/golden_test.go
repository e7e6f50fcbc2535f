package testutil

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that keeps the failures Golden reports instead
// of failing the test that checks them.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// FailNow stops the goroutine as testing.T does, so nothing after a
// failed require runs; the caller runs Golden in its own goroutine.
func (r *recorder) FailNow() {
	r.fatal = true
	runtime.Goexit()
}

// golden runs Golden against a recorder and returns what it reported.
func golden(t *testing.T, path string, got []byte) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Golden(r, path, got)
	}()
	<-done
	return r
}

func TestGoldenComparesByteForByte(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "want.txt")
	require.NoError(t, os.WriteFile(path, []byte("same\n"), 0o644))

	assert.Empty(t, golden(t, path, []byte("same\n")).errors, "equal content passes")

	r := golden(t, path, []byte("same"))
	require.Len(t, r.errors, 1, "a missing newline differs")
	assert.Contains(t, r.errors[0], "differs from the golden "+path)
	assert.Contains(t, r.errors[0], "run `go test ./internal/testutil -run '^TestGoldenComparesByteForByte$' -update` if the change is intended")
	assert.False(t, r.fatal, "a difference is reported, the test goes on")
}

func TestGoldenMissingNamesTheCommand(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "none", "want.txt")
	r := golden(t, path, []byte("x"))
	require.Len(t, r.errors, 1)
	assert.True(t, r.fatal, "no golden: nothing to compare with")
	assert.Contains(t, r.errors[0], "golden "+path+" is missing: run `go test ./internal/testutil -run '^TestGoldenMissingNamesTheCommand$' -update`")
}

// Not parallel: it sets the process's -update flag, which every Golden
// call of this binary reads.
func TestGoldenUpdateWritesThenPasses(t *testing.T) {
	require.NoError(t, flag.Set("update", "true"))
	t.Cleanup(func() { require.NoError(t, flag.Set("update", "false")) })
	require.True(t, Updating())

	path := filepath.Join(t.TempDir(), "new", "want.txt")
	assert.Empty(t, golden(t, path, []byte("fresh\n")).errors, "-update writes the golden, making its directory")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "fresh\n", string(data))

	assert.Empty(t, golden(t, path, []byte("changed\n")).errors, "-update rewrites a golden that differs")
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "changed\n", string(data))
}

func TestRerunUpdateNamesTheTopLevelTest(t *testing.T) {
	t.Parallel()
	t.Run("sub/case", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, "run `go test ./internal/testutil -run '^TestRerunUpdateNamesTheTopLevelTest$' -update`", RerunUpdate(t))
	})
}
