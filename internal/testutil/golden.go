package testutil

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// update is the one -update flag of every test binary that compares
// goldens: go test parses its flags before any test runs, so the flag is
// registered when this package is imported (a package variable for that
// reason alone).
var update = flag.Bool("update", false, "rewrite the golden files from what the code produces instead of comparing (go test ./PKG -update)")

// Updating reports whether the test binary runs with -update: a test whose
// expected files are not plain goldens (pinned go.sum files, say)
// regenerates them when it is true.
func Updating() bool { return *update }

// Golden compares got with the golden file at path, byte for byte. With
// -update it writes got there first (making its directory), so the
// comparison then passes and `git diff` shows what changed. A missing or
// different golden fails the test with the command that rewrites it.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755), "golden directory for %s", path)
		require.NoError(t, os.WriteFile(path, got, 0o644), "rewrite golden %s", path)
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden %s is missing: %s", path, RerunUpdate(t))
	assert.Equal(t, string(want), string(got), "differs from the golden %s: %s if the change is intended", path, RerunUpdate(t))
}

// RerunUpdate is the command that rewrites the goldens of the running
// test: go test on its package directory (relative to the module root, as
// a user types it there), -run on its top-level test, -update.
func RerunUpdate(t testing.TB) string {
	top, _, _ := strings.Cut(t.Name(), "/")
	return "run `go test ./" + packageDir() + " -run '^" + top + "$' -update`"
}

// packageDir is the test's working directory (go test runs a test in its
// package directory) relative to the nearest directory with a go.mod.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "PKG"
	}
	for root := wd; ; root = filepath.Dir(root) {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, wd)
			if err != nil || rel == "." {
				return ""
			}
			return filepath.ToSlash(rel)
		}
		if filepath.Dir(root) == root {
			return "PKG"
		}
	}
}
