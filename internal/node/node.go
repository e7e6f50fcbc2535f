package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/bootlab/bootlab/internal/sshc"
)

// Node is the machine a stage runs on (the bootstrap node). Commands run as
// root through bash.
type Node interface {
	// Run runs a bash command line as root, streaming its output. The exit
	// code is returned with a nil error; err is for failures to run at all.
	Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	// ReadFile returns a file's content (fs.ErrNotExist when absent).
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile writes a file with mode, creating parent directories.
	WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	// Stat describes a file (fs.ErrNotExist when absent).
	Stat(ctx context.Context, path string) (FileInfo, error)
	// String names the node in messages ("core@192.168.126.10").
	String() string
}

// FileInfo is what Stat reports.
type FileInfo struct {
	Mode  fs.FileMode // permission bits only
	Size  int64
	IsDir bool
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Cmd    string
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s exited %d", e.Cmd, e.Code)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// Output runs cmd and returns its stdout; a non-zero exit is an *ExitError.
func Output(ctx context.Context, n Node, cmd string) ([]byte, error) {
	var out, errb bytes.Buffer
	code, err := n.Run(ctx, cmd, nil, &out, &errb)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return out.Bytes(), &ExitError{Cmd: firstWord(cmd), Code: code, Stderr: errb.String()}
	}
	return out.Bytes(), nil
}

// Lister is a node that lists directories itself (a Prefetched answers
// from what it read).
type Lister interface {
	List(ctx context.Context, dir string) ([]string, error)
}

// List returns the names in directory dir on n, dot files too, as `ls -A`
// lists them: from n when it is a Lister, else with ls. A Lister's error
// for a missing dir wraps fs.ErrNotExist (syscall.ENOTDIR for a file);
// ls's is its exit.
func List(ctx context.Context, n Node, dir string) ([]string, error) {
	if l, ok := n.(Lister); ok {
		return l.List(ctx, dir)
	}
	out, err := Output(ctx, n, "ls -A1 -- "+ShellQuote(dir))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" {
			names = append(names, l)
		}
	}
	return names, nil
}

func firstWord(cmd string) string {
	if f := strings.Fields(cmd); len(f) > 0 {
		return f[0]
	}
	return cmd
}

// ShellQuote quotes s for bash.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RunFunc runs a bash command line as root, as Node.Run does.
type RunFunc func(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error)

// shellFiles implements the file half of Node with commands, so a
// transport only has to run commands (and sudo covers every file).
type shellFiles struct{ run RunFunc }

// commandNode is a Node made of a RunFunc.
type commandNode struct {
	shellFiles
	name string
}

func (n commandNode) String() string { return n.name }

func (n commandNode) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return n.run(ctx, cmd, stdin, stdout, stderr)
}

// Command makes a Node of any way to run commands as root (a
// container, a namespace, a serial console): files are read, written and
// described with cat, mv and stat.
func Command(name string, run RunFunc) Node {
	return commandNode{shellFiles: shellFiles{run: run}, name: name}
}

const missingCode = 66

func (s shellFiles) ReadFile(ctx context.Context, path string) ([]byte, error) {
	var out, errb bytes.Buffer
	code, err := s.run(ctx, fmt.Sprintf("[ -e %[1]s ] || exit %[2]d; cat -- %[1]s", ShellQuote(path), missingCode), nil, &out, &errb)
	if err != nil {
		return nil, err
	}
	switch code {
	case 0:
		return out.Bytes(), nil
	case missingCode:
		return nil, &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	}
	return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New(strings.TrimSpace(errb.String()))}
}

func (s shellFiles) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	var errb bytes.Buffer
	code, err := s.run(ctx, sshc.WriteFileCommand(path, mode), bytes.NewReader(data), io.Discard, &errb)
	if err != nil {
		return err
	}
	if code != 0 {
		return &fs.PathError{Op: "write", Path: path, Err: errors.New(strings.TrimSpace(errb.String()))}
	}
	return nil
}

func (s shellFiles) Stat(ctx context.Context, path string) (FileInfo, error) {
	var out, errb bytes.Buffer
	code, err := s.run(ctx, fmt.Sprintf("[ -e %[1]s ] || exit %[2]d; stat -L -c '%%a %%s %%F' -- %[1]s", ShellQuote(path), missingCode), nil, &out, &errb)
	if err != nil {
		return FileInfo{}, err
	}
	if code == missingCode {
		return FileInfo{}, &fs.PathError{Op: "stat", Path: path, Err: fs.ErrNotExist}
	}
	if code != 0 {
		return FileInfo{}, &fs.PathError{Op: "stat", Path: path, Err: errors.New(strings.TrimSpace(errb.String()))}
	}
	return parseStat(path, out.String())
}

func parseStat(path, out string) (FileInfo, error) {
	f := strings.SplitN(strings.TrimSpace(out), " ", 3)
	if len(f) != 3 {
		return FileInfo{}, fmt.Errorf("stat %s: unexpected output %q", path, out)
	}
	mode, err1 := strconv.ParseUint(f[0], 8, 32)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return FileInfo{}, fmt.Errorf("stat %s: unexpected output %q", path, out)
	}
	return FileInfo{Mode: fs.FileMode(mode).Perm(), Size: size, IsDir: f[2] == "directory"}, nil
}

// Local runs on this machine, for when bootlab runs on the bootstrap
// node itself. Commands go through bash, with `sudo -n` unless already root.
type Local struct {
	shellFiles
	sudo bool
}

// NewLocal returns the local machine as a Node.
func NewLocal() *Local {
	n := &Local{sudo: os.Geteuid() != 0}
	n.shellFiles = shellFiles{run: n.Run}
	return n
}

func (n *Local) String() string { return "localhost" }

// Run runs cmd with bash (as root).
func (n *Local) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	argv := []string{"bash", "-c", cmd}
	if n.sudo {
		argv = append([]string{"sudo", "-n", "--"}, argv...)
	}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return ee.ExitCode(), nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		return -1, fmt.Errorf("run on localhost: %w", err)
	}
	return 0, nil
}
