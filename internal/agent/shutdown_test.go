package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The processes a shutdown waits for are the live user-space ones but the
// agent: kernel threads (no command line) and zombies do not count.
func TestOtherProcessesCountsLiveUserProcesses(t *testing.T) {
	t.Parallel()
	proc := t.TempDir()
	for pid, p := range map[string]struct{ cmdline, stat string }{
		"1":    {"/init\x00", "1 (init) S"},
		"2":    {"", "2 (kthreadd) S"},
		"300":  {"etcd\x00--data-dir\x00", "300 (etcd) S"},
		"301":  {"bash\x00", "301 (a) b) R"},
		"302":  {"sleep\x00", "302 (sleep) Z"},
		"self": {"x", "x"},
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(proc, pid), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(proc, pid, "cmdline"), []byte(p.cmdline), 0o444))
		// The rest of a real stat line: ppid .. cstime and on.
		stat := p.stat + " 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0"
		require.NoError(t, os.WriteFile(filepath.Join(proc, pid, "stat"), []byte(stat), 0o444))
	}
	assert.Equal(t, 2, otherProcesses(proc, 1), "etcd and bash")
	assert.Equal(t, 3, otherProcesses(proc, 999), "and init, seen from elsewhere")
}
