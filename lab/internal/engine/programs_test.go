package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
)

// `cache build` names a program and a release: each error says which of
// the two is wrong, and a known pair is the release's pinned version.
func TestLookupProgram(t *testing.T) {
	t.Parallel()
	_, err := LookupProgram("kubelet", "4.19")
	var unknown *UnknownProgramError
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, "kubelet", unknown.Name)

	_, err = LookupProgram("etcd", "3.11")
	var release *UnknownReleaseError
	require.ErrorAs(t, err, &release)
	assert.ErrorContains(t, err, "no pinned etcd and Kubernetes versions")

	p, err := LookupProgram("etcd", "4.19")
	require.NoError(t, err)
	assert.Equal(t, "etcd", p.Name)
	assert.Equal(t, "4.19", p.OpenShift)
	assert.Equal(t, "3.5.26", p.Version, "the etcd OpenShift ships is the one downloaded")
	assert.Equal(t, "3.5.21", p.BuildVersion, "the nearest the module proxy serves is the one built")
}

// A lab whose state cannot be read stops a prune (its images may be in
// use); a lab without state is no lab, and the home itself is always kept
// out of an export.
func TestLabDirsAndImages(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dirs, err := LabDirs(home)
	require.NoError(t, err)
	assert.Equal(t, []string{home}, dirs)

	bad := filepath.Join(home, "labs", "bad")
	require.NoError(t, os.MkdirAll(bad, 0o755))
	require.NoError(t, os.WriteFile(labdir.StatePath(bad), []byte("{not json"), 0o600))
	dirs, err = LabDirs(home)
	require.NoError(t, err)
	assert.Equal(t, []string{home, bad}, dirs)
	_, err = LabImages(home)
	assert.ErrorContains(t, err, "nothing is pruned")
}
