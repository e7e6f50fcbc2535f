package fake

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"sort"
	"strings"
	"sync"

	"github.com/bootlab/bootlab/lab/host"
)

// Machine is an in-memory hypervisor host (a host.Host): files in a map,
// commands recorded and answered by Respond. Without Respond, the few
// commands lab sends are understood (test -d, mkdir -p, ls -A, cat > FILE) and
// others exit 127. It opens no connections.
type Machine struct {
	mu     sync.Mutex
	remote bool
	// Files are the machine's files by path; WriteFile and "cat > FILE"
	// write here, ReadFile reads here.
	Files map[string][]byte
	// Commands are the commands run, in order.
	Commands []string
	// Reads are the paths ReadFile was asked for, in order: where a
	// caller looked for a file (the hypervisor's machine, not this one).
	Reads []string
	// Respond, when set, answers every command: it writes the command's
	// stdout and returns its exit status.
	Respond func(cmd string, stdout io.Writer) int
}

// NewMachine returns an empty machine; remote says whether it stands for a
// hypervisor reached over SSH (Name and Remote answer accordingly).
func NewMachine(remote bool) *Machine {
	return &Machine{remote: remote, Files: map[string][]byte{}}
}

var _ host.Host = (*Machine)(nil)

// Name is "root@hypervisor:22" for a remote machine, else "localhost".
func (h *Machine) Name() string {
	if h.remote {
		return "root@hypervisor:22"
	}
	return "localhost"
}

// Remote is what NewMachine was told.
func (h *Machine) Remote() bool { return h.remote }

// Close does nothing.
func (h *Machine) Close() error { return nil }

// Run records cmd and answers it (see Machine).
func (h *Machine) Run(_ context.Context, cmd string, stdin io.Reader, stdout, _ io.Writer) (int, error) {
	h.mu.Lock()
	h.Commands = append(h.Commands, cmd)
	respond := h.Respond
	h.mu.Unlock()
	if stdout == nil {
		stdout = io.Discard
	}
	if respond != nil {
		return respond(cmd, stdout), nil
	}
	switch {
	case strings.HasPrefix(cmd, "test -d "):
		_, _ = io.WriteString(stdout, "present\n")
		return 0, nil
	case strings.HasPrefix(cmd, "mkdir -p "):
		return 0, nil
	case strings.HasPrefix(cmd, "ls -A -- "):
		return h.list(strings.Trim(strings.TrimPrefix(cmd, "ls -A -- "), "'"), stdout), nil
	case strings.HasPrefix(cmd, "cat > "):
		data, err := io.ReadAll(stdin)
		if err != nil {
			return -1, err
		}
		path := strings.Trim(strings.TrimPrefix(cmd, "cat > "), "'")
		h.mu.Lock()
		h.Files[path] = data
		h.mu.Unlock()
		return 0, nil
	}
	return 127, nil
}

// list writes the names directly under dir, as ls -A does; a directory
// holding no file does not exist (exit 2).
func (h *Machine) list(dir string, stdout io.Writer) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	var names []string
	for p := range h.Files {
		rest, ok := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/")
		if name, _, _ := strings.Cut(rest, "/"); ok && name != "" && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return 2
	}
	sort.Strings(names)
	_, _ = io.WriteString(stdout, strings.Join(names, "\n")+"\n")
	return 0
}

// ReadFile returns a copy of Files[path], or an fs.ErrNotExist error.
func (h *Machine) ReadFile(_ context.Context, path string) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Reads = append(h.Reads, path)
	b, ok := h.Files[path]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	}
	return bytes.Clone(b), nil
}

// WriteFile stores a copy of data in Files[path] (the mode is ignored).
func (h *Machine) WriteFile(_ context.Context, path string, data []byte, _ fs.FileMode) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Files[path] = bytes.Clone(data)
	return nil
}

// Dial fails: the fake machine has no network.
func (h *Machine) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("fake host: no network")
}
