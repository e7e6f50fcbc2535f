package node_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/node"
)

// localShells starts shells with the real bash on this machine and
// counts them, as SSH.Start would on a node.
type localShells struct {
	mu      sync.Mutex
	started int
	// prefix runs before the loop (a node where it cannot start).
	prefix string
}

func (l *localShells) start(ctx context.Context, cmd string) (*node.ShellProcess, error) {
	l.mu.Lock()
	l.started++
	l.mu.Unlock()
	c := exec.Command("bash", "-c", l.prefix+cmd)
	// A UTF-8 locale, as on a node: the loop must still count bytes.
	c.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := c.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return &node.ShellProcess{Stdin: stdin, Stdout: stdout, Stderr: stderr, Close: func() error {
		_ = stdin.Close()
		_ = c.Process.Kill()
		_ = c.Wait()
		return nil
	}}, nil
}

func (l *localShells) count() int { l.mu.Lock(); defer l.mu.Unlock(); return l.started }

// newLocalShell is a Shell over local bash (its starts counted), with the
// commands that run apart on a local bash node too; closed when t ends.
func newLocalShell(t *testing.T) (*node.Shell, *localShells, *bashNode) {
	ls, apart := &localShells{}, &bashNode{}
	sh := node.NewShell("local", ls.start, apart.run)
	t.Cleanup(func() { sh.Close() })
	return sh, ls, apart
}

func TestShellRunsEveryCommandInOneShell(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sh, ls, apart := newLocalShell(t)
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB, more than any pipe buffer
	tests := []struct {
		name     string
		cmd      string
		stdin    *string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"stdout, stderr and the exit code", "echo out; echo err >&2; exit 3", nil, 3, "out\n", "err\n"},
		{"output without a final newline", "printf 'no eol'; printf 'e' >&2", nil, 0, "no eol", "e"},
		{"no stdin reads as empty", "cat; echo end", nil, 0, "end\n", ""},
		{"stdin whole, with NULs and newlines", "od -An -c | tr -s ' '", ptr("a\x00b\n\n"), 0, " a \\0 b \\n \\n\n", ""},
		{"stdin a command leaves unread does not reach the next", "exit 0", ptr("echo INJECTED\n"), 0, "", ""},
		{"after unread stdin the shell still answers", "echo next", nil, 0, "next\n", ""},
		{"exec ends only the command", "exec bash -c 'echo execed; exit 4'", nil, 4, "execed\n", ""},
		{"a syntax error fails the command, not the shell", "if then fi (", nil, 2, "", "syntax error"},
		{"non-ASCII commands are read whole", "echo 'déjà vu ✓'", nil, 0, "déjà vu ✓\n", ""},
		{"... and the next command starts where it should", "echo ok", nil, 0, "ok\n", ""},
		{"variables do not outlive a command", "x=1; echo ${x}", nil, 0, "1\n", ""},
		{"... as the next one sees", "echo \"[${x:-unset}]\"", nil, 0, "[unset]\n", ""},
		{"large output streams through", "printf '%s' \"$(cat)\"", &big, 0, big, ""},
		{"output that starts like the marker is output", "printf '@@bootlab-shell-'; sleep 0.2; echo x; printf '@@'", nil, 0, "@@bootlab-shell-x\n@@", ""},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		var in *strings.Reader
		if tt.stdin != nil {
			in = strings.NewReader(*tt.stdin)
		}
		var code int
		var err error
		if in != nil {
			code, err = sh.Run(ctx, tt.cmd, in, &out, &errb)
		} else {
			code, err = sh.Run(ctx, tt.cmd, nil, &out, &errb)
		}
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.wantCode, code, tt.name)
		assert.Equal(t, tt.wantOut, out.String(), tt.name)
		assert.Contains(t, errb.String(), tt.wantErr, tt.name)
	}
	assert.Equal(t, 1, ls.count(), "one shell for every command")
	assert.Equal(t, 0, apart.count(), "nothing ran apart")
}

func ptr(s string) *string { return &s }

// lineWriter records what it is given and says when it has seen want.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.want)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

// A command's output reaches the writer as it comes, its last line too,
// while the command still runs: a stage's progress line before a long
// wait is seen then, not with the next line. The command waits for the
// test to see its line; a shell that holds the line back fails the test
// at its deadline.
func TestShellStreamsTheLastLineWhileTheCommandRuns(t *testing.T) {
	t.Parallel()
	sh, _, _ := newLocalShell(t)
	gate := filepath.Join(t.TempDir(), "go")
	line := "Waiting for the masters: 0 of 3 joined; waiting for 2 of 3\n"
	out := &lineWriter{want: line, seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := sh.Run(context.Background(), "printf '"+strings.TrimSuffix(line, "\n")+"\\n'; until [ -e "+gate+" ]; do sleep 0.05; done; echo after", nil, out, nil)
		done <- err
	}()
	select {
	case <-out.seen:
	case <-time.After(30 * time.Second):
		out.mu.Lock()
		t.Errorf("the line never reached the writer while the command ran; it had %q", out.buf.String())
		out.mu.Unlock()
	}
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	require.NoError(t, <-done)
	assert.Equal(t, line+"after\n", out.buf.String())
}

func TestShellFilesAndScripts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sh, ls, apart := newLocalShell(t)
	require.NoError(t, sh.Open(ctx))
	assert.Equal(t, 1, ls.count(), "Open starts the shell")
	dir := t.TempDir()
	p := filepath.Join(dir, "with space", "s.sh")
	require.NoError(t, sh.WriteFile(ctx, p, []byte("secret"), 0o600))
	data, err := sh.ReadFile(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, "secret", string(data))
	info, err := sh.Stat(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, node.FileInfo{Mode: 0o600, Size: 6}, info)
	var out bytes.Buffer
	code, err := node.RunScript(ctx, sh, p, []byte("echo from script; read -r x || echo stdin-empty; exit 5\n"), &out, nil)
	require.NoError(t, err)
	assert.Equal(t, 5, code)
	assert.Equal(t, "from script\nstdin-empty\n", out.String())
	assert.Equal(t, 1, ls.count())
	assert.Equal(t, 0, apart.count())
}

// A node where the shell cannot start (sudo refuses, no GNU head) runs
// each command apart, with the same answers.
func TestShellThatCannotStartRunsCommandsApart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ls, apart := &localShells{prefix: "echo 'sudo: a password is required' >&2; exit 1\n"}, &bashNode{}
	sh := node.NewShell("local", ls.start, apart.run)
	defer sh.Close()
	for i := 0; i < 2; i++ {
		var out bytes.Buffer
		code, err := sh.Run(ctx, "cat; echo done", strings.NewReader("in\n"), &out, nil)
		require.NoError(t, err)
		assert.Equal(t, 0, code)
		assert.Equal(t, "in\ndone\n", out.String())
	}
	assert.Equal(t, 1, ls.count(), "tried once")
	assert.Equal(t, 2, apart.count())
}

// A command cut off by its context ends the shell; the next command gets
// a new one.
func TestShellCommandCutOffByItsContext(t *testing.T) {
	t.Parallel()
	sh, ls, _ := newLocalShell(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := sh.Run(ctx, "sleep 60", nil, nil, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	var out bytes.Buffer
	code, err := sh.Run(ctx2, "echo again", nil, &out, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, "again\n", out.String())
	assert.Equal(t, 2, ls.count())
}

// A shell that dies during a command is an error for that command (it is
// not rerun: it may have done part of its work), and the next starts anew.
func TestShellThatDiesIsAnError(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sh, ls, apart := newLocalShell(t)
	_, err := sh.Run(ctx, "kill -9 $$", nil, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "root shell ended")
	var out bytes.Buffer
	_, err = sh.Run(ctx, "echo back", nil, &out, nil)
	require.NoError(t, err)
	assert.Equal(t, "back\n", out.String())
	assert.Equal(t, 0, apart.count())
	assert.Equal(t, 2, ls.count())
}
