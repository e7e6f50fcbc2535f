package freeport

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A port is never handed out twice in a process, and always lies below
// the kernel's ephemeral range.
func TestTCPNeverTwiceAndBelowEphemeral(t *testing.T) {
	t.Parallel()
	_, hi := rangeBelowEphemeral()
	seen := map[int]bool{}
	for range 300 {
		p := TCP(t, "127.0.0.1")
		assert.False(t, seen[p], "port %d handed out twice", p)
		assert.Less(t, p, hi, "below the ephemeral range")
		seen[p] = true
	}
}

// A port another process holds the lock file of is skipped; so is one a
// listener has.
func TestTakeSkipsHeldAndBusyPorts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port
	// Another process holds busy+1's lock file (flock(1) from util-linux).
	held := busy + 1
	// It waits for the lock (no -n): the probe below may hold it a moment.
	lock := exec.Command("flock", filepath.Join(dir, strconv.Itoa(held)), "sleep", "30")
	require.NoError(t, lock.Start())
	defer func() { _ = lock.Process.Kill(); _ = lock.Wait() }()
	require.Eventually(t, func() bool {
		return exec.Command("flock", "-n", filepath.Join(dir, strconv.Itoa(held)), "true").Run() != nil
	}, 10*time.Second, 50*time.Millisecond, "the other process holds the lock")

	got, err := take("127.0.0.1", dir, busy, busy+3)
	require.NoError(t, err)
	assert.Equal(t, busy+2, got, "the busy port and the held one are skipped")
	_, err = take("127.0.0.1", dir, busy, busy+2)
	assert.ErrorContains(t, err, "no TCP port free on 127.0.0.1")
}
