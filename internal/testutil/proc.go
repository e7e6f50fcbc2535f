package testutil

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The helpers of tests that run real servers (etcd, kube-apiserver) on
// loopback: a free port, a started process whose log is shown when the
// test fails, a poll that gives up as soon as the process exits, a clean
// stop, and the process's resident memory. They are lab/gobuild's
// integration test's, with the same names as internal/testutil/kubetest's
// (branch h22create), which replaces this file when it lands.

// FreePort is a TCP port free on 127.0.0.1 right now.
func FreePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// Server is a started process; Exited is closed once it has exited, and
// Err is then its Wait error.
type Server struct {
	Name   string
	Cmd    *exec.Cmd
	Exited chan struct{}
	Err    error
}

// Start runs a server with its output in logPath, shown if the test
// fails; cleanup kills it if the test did not stop it.
func Start(t testing.TB, logPath, path string, args ...string) *Server {
	t.Helper()
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	s := &Server{Name: filepath.Base(path), Cmd: exec.Command(path, args...), Exited: make(chan struct{})}
	s.Cmd.Stdout, s.Cmd.Stderr = logFile, logFile
	require.NoError(t, s.Cmd.Start())
	go func() { s.Err = s.Cmd.Wait(); close(s.Exited) }()
	t.Cleanup(func() {
		select {
		case <-s.Exited:
		default:
			_ = s.Cmd.Process.Kill()
			<-s.Exited
		}
		logFile.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("%s (last lines):\n%s", filepath.Base(logPath), lastLines(string(data), 30))
		}
	})
	return s
}

// WaitFor polls ok every second until it holds, failing with its last
// output after limit or as soon as s exits.
func WaitFor(t testing.TB, limit time.Duration, what string, s *Server, ok func() (string, bool)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		out, done := ok()
		if done {
			return
		}
		last = out
		select {
		case <-s.Exited:
			require.FailNow(t, what, "%s exited (%v): %s", s.Name, s.Err, last)
		case <-time.After(time.Second):
		}
	}
	require.FailNow(t, what, "not done after %s: %s", limit, strings.TrimSpace(last))
}

// Stop sends SIGTERM and waits for a clean exit: status 0, or, as etcd
// does once it has closed (it re-raises the signal it handled), death by
// that SIGTERM. Any other status or signal fails.
func Stop(t testing.TB, s *Server) {
	t.Helper()
	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.Exited:
		if ws, ok := s.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return
		}
		assert.NoError(t, s.Err, "%s exits cleanly on SIGTERM", s.Name)
	case <-time.After(90 * time.Second):
		assert.Fail(t, "no exit", "%s still runs 90 s after SIGTERM", s.Name)
	}
}

// RSS is the resident memory of a process, from /proc ("283456 kB").
func RSS(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		if bytes.HasPrefix(l, []byte("VmRSS:")) {
			return strings.Join(strings.Fields(string(l[6:])), " ")
		}
	}
	return "unknown"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
