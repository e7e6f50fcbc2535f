package lab

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"strings"
	"sync"

	"github.com/bootlab/bootlab/lab/host"
)

// fakeMachine is an in-memory hypervisor machine: files in a map, commands
// recorded and answered by run; without run, the few commands lab sends
// are understood (test -d, mkdir -p, cat > FILE) and others exit 127. No
// connections.
type fakeMachine struct {
	mu       sync.Mutex
	remote   bool
	files    map[string][]byte
	commands []string
	run      func(cmd string, stdout io.Writer) int
}

func newFakeMachine(remote bool) *fakeMachine {
	return &fakeMachine{remote: remote, files: map[string][]byte{}}
}

var _ host.Host = (*fakeMachine)(nil)

func (h *fakeMachine) Name() string {
	if h.remote {
		return "root@hypervisor:22"
	}
	return "localhost"
}
func (h *fakeMachine) Remote() bool { return h.remote }
func (h *fakeMachine) Close() error { return nil }

func (h *fakeMachine) Run(_ context.Context, cmd string, stdin io.Reader, stdout, _ io.Writer) (int, error) {
	h.mu.Lock()
	h.commands = append(h.commands, cmd)
	run := h.run
	h.mu.Unlock()
	if stdout == nil {
		stdout = io.Discard
	}
	if run != nil {
		return run(cmd, stdout), nil
	}
	switch {
	case strings.HasPrefix(cmd, "test -d "):
		_, _ = io.WriteString(stdout, "present\n")
		return 0, nil
	case strings.HasPrefix(cmd, "mkdir -p "):
		return 0, nil
	case strings.HasPrefix(cmd, "cat > "):
		data, err := io.ReadAll(stdin)
		if err != nil {
			return -1, err
		}
		path := strings.Trim(strings.TrimPrefix(cmd, "cat > "), "'")
		h.mu.Lock()
		h.files[path] = data
		h.mu.Unlock()
		return 0, nil
	}
	return 127, nil
}

func (h *fakeMachine) ReadFile(_ context.Context, path string) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.files[path]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	}
	return bytes.Clone(b), nil
}

func (h *fakeMachine) WriteFile(_ context.Context, path string, data []byte, _ fs.FileMode) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.files[path] = bytes.Clone(data)
	return nil
}

func (h *fakeMachine) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("fake host: no network")
}
