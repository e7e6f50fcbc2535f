package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/labdir"
)

// A later `lab up` sets host DNS up again even though the state records it:
// systemd-resolved forgets per-link settings when the bridge is recreated
// (host reboot), and the lab's names would silently stop resolving.
func TestUpSetsHostDNSAgain(t *testing.T) {
	// Not parallel: t.Setenv (PATH) changes the whole process's environment.
	s := &spec.Spec{Name: "dns", Profile: spec.ProfileOpenShift, LabDir: t.TempDir()}
	s.Defaults()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	logFile := filepath.Join(dir, "resolvectl.log")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "resolvectl"), []byte("#!/bin/sh\n# TEST DOUBLE of resolvectl\necho \"$*\" >>"+logFile+"\n"), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	require.NoError(t, os.MkdirAll(s.LabDir, 0o755))
	require.NoError(t, (&labdir.State{Spec: s, HostDNS: labdir.HostDNS{Via: labdir.HostDNSResolved, Target: s.Network.Bridge}}).Save(s.LabDir))

	var errOut bytes.Buffer
	require.NoError(t, setUpHostDNS(context.Background(), s, nil, BuildOptions{Status: status.New(&errOut, false)}), errOut.String())
	got, err := os.ReadFile(logFile)
	require.NoError(t, err, "resolvectl was not run again")
	assert.Contains(t, string(got), "dns "+s.Network.Bridge+" "+s.Network.Gateway+"\n")
	assert.Contains(t, string(got), "domain "+s.Network.Bridge+" ~"+s.Cluster.Domain()+"\n")
	assert.NotContains(t, string(got), "revert", "same record: nothing to undo")
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, "resolved:"+s.Network.Bridge, st.HostDNS.String())
}
