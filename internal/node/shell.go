package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// ShellProcess is a long-lived bash started on a node, its standard
// streams pipes: a Shell writes commands to Stdin and reads their output
// from Stdout and Stderr.
type ShellProcess struct {
	Stdin          io.WriteCloser
	Stdout, Stderr io.Reader
	// Close ends the process (and its session).
	Close func() error
}

// StartFunc starts cmd as a root bash on the node with piped streams.
type StartFunc func(ctx context.Context, cmd string) (*ShellProcess, error)

// maxShellStdin is the most standard input a command sends through the
// shell (it is read into memory first); a command with more runs apart.
const maxShellStdin = 16 << 20

// Shell is a node whose commands all run in one root bash: over SSH each
// command otherwise opens a session and starts a sudo and a bash on the
// node, 0.5 to 1.7 s on a TCG guest, and a stage run sends several. Each
// command runs in a subshell of that bash (eval, its own stdin, exit and
// exec end only the subshell), and its exit code and the end of its
// output come back after a per-shell random marker. The shell starts on
// the first command; a node where it cannot start (no sudo, no GNU head)
// runs each command apart, as before. A command cut off by its context or
// a shell that died ends that shell: the next command starts another.
type Shell struct {
	shellFiles
	name  string
	start StartFunc
	apart RunFunc

	mu     sync.Mutex
	proc   *ShellProcess
	out    *markedStream
	errs   *markedStream
	marker string
	// noShell: the shell could not start here; commands run apart.
	noShell bool
}

// NewShell returns a node named name that runs its commands in one shell
// started with start, or with apart where that shell cannot start or a
// command's stdin is too large to pass through it.
func NewShell(name string, start StartFunc, apart RunFunc) *Shell {
	s := &Shell{name: name, start: start, apart: apart}
	s.shellFiles = shellFiles{run: s.Run}
	return s
}

func (s *Shell) String() string { return s.name }

// Opener is a node with a connection worth opening before the first
// command, so its cost shows apart in a run's timing.
type Opener interface {
	Open(ctx context.Context) error
}

// Open starts the shell now rather than on the first command.
func (s *Shell) Open(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ensure(ctx)
}

// Run runs cmd in the shell, as Node.Run does.
func (s *Shell) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	in, ok, err := readStdin(stdin)
	if err != nil {
		return -1, fmt.Errorf("read the standard input of %s: %w", firstWord(cmd), err)
	}
	if !ok {
		return s.apart(ctx, cmd, io.MultiReader(bytes.NewReader(in), stdin), stdout, stderr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensure(ctx); err != nil {
		return -1, err
	}
	if s.noShell {
		var r io.Reader
		if stdin != nil {
			r = bytes.NewReader(in)
		}
		return s.apart(ctx, cmd, r, stdout, stderr)
	}
	return s.exchange(ctx, cmd, stdin != nil, in, stdout, stderr)
}

// readStdin reads stdin whole when it fits through the shell; ok is false
// (with what was read) when it does not.
func readStdin(stdin io.Reader) ([]byte, bool, error) {
	if stdin == nil {
		return nil, true, nil
	}
	in, err := io.ReadAll(io.LimitReader(stdin, maxShellStdin+1))
	if err != nil {
		return nil, false, err
	}
	return in, len(in) <= maxShellStdin, nil
}

// shellLoop is the shell: it reads a header (the command's length in
// bytes, its stdin's length or -1 for none), the command, its stdin into
// a private temporary file, runs the command in a subshell and prints the
// marker, with the exit code on stdout. LC_ALL=C makes read -N count bytes.
const shellLoop = `__bl_in=$(mktemp) || exit 1
trap 'rm -f -- "$__bl_in"' EXIT
printf '%[1]s ready\n'
while IFS=' ' read -r __bl_n __bl_len; do
  IFS= LC_ALL=C read -r -N "$__bl_n" __bl_cmd || exit 1
  if [ "$__bl_len" -ge 0 ]; then
    head -c "$__bl_len" >"$__bl_in" || exit 1
    ( eval "$__bl_cmd" ) <"$__bl_in"
  else
    ( eval "$__bl_cmd" ) </dev/null
  fi
  __bl_rc=$?
  printf '%[1]s %%d\n' "$__bl_rc"
  printf '%[1]s\n' >&2
done
`

// ensure starts the shell if none runs: it is up once it says ready. A
// shell that cannot start marks the node as one that runs commands apart;
// a node that cannot be reached is an error.
func (s *Shell) ensure(ctx context.Context) error {
	if s.proc != nil || s.noShell {
		return nil
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("shell marker: %w", err)
	}
	s.marker = "@@bootlab-shell-" + hex.EncodeToString(b)
	p, err := s.start(ctx, fmt.Sprintf(shellLoop, s.marker))
	if err != nil {
		return err
	}
	out, errs := newMarkedStream(p.Stdout), newMarkedStream(p.Stderr)
	ready := make(chan string, 1)
	go func() {
		rest, err := out.copyUntil(io.Discard, s.marker)
		if err != nil {
			rest = ""
		}
		ready <- rest
	}()
	select {
	case <-ctx.Done():
		_ = p.Close()
		<-ready
		return ctx.Err()
	case rest := <-ready:
		if rest != " ready" {
			// sudo refused, or the node lacks what the loop needs.
			_ = p.Close()
			s.noShell = true
			return nil
		}
	}
	s.proc, s.out, s.errs = p, out, errs
	return nil
}

// exchange sends one command and reads its output and exit code.
func (s *Shell) exchange(ctx context.Context, cmd string, hasStdin bool, in []byte, stdout, stderr io.Writer) (int, error) {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	inLen := -1
	if hasStdin {
		inLen = len(in)
	}
	msg := append([]byte(fmt.Sprintf("%d %d\n%s", len(cmd), inLen, cmd)), in...)
	p, out, errs := s.proc, s.out, s.errs
	wrote := make(chan error, 1)
	go func() { _, err := p.Stdin.Write(msg); wrote <- err }()
	type ended struct {
		rest string
		err  error
	}
	outDone, errDone := make(chan ended, 1), make(chan ended, 1)
	go func() { r, err := out.copyUntil(stdout, s.marker); outDone <- ended{r, err} }()
	go func() { r, err := errs.copyUntil(stderr, s.marker); errDone <- ended{r, err} }()
	var o, e ended
	select {
	case <-ctx.Done():
		s.drop()
		<-outDone
		<-errDone
		<-wrote
		return -1, ctx.Err()
	case o = <-outDone:
	}
	e = <-errDone
	werr := <-wrote
	if err := errors.Join(werr, o.err, e.err); err != nil {
		s.drop()
		return -1, fmt.Errorf("%s: the root shell ended during %s (connection lost?): %w", s.name, firstWord(cmd), err)
	}
	code, err := strconv.Atoi(strings.TrimSpace(o.rest))
	if err != nil {
		s.drop()
		return -1, fmt.Errorf("%s: the root shell gave %q, not an exit code, after %s", s.name, o.rest, firstWord(cmd))
	}
	return code, nil
}

// drop ends the shell; the next command starts another.
func (s *Shell) drop() {
	if s.proc != nil {
		_ = s.proc.Close()
	}
	s.proc, s.out, s.errs = nil, nil, nil
}

// Close ends the shell.
func (s *Shell) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop()
	return nil
}

// markedStream is one of the shell's output streams: what comes before
// the marker is the command's, the rest of the marker's line is the
// shell's.
type markedStream struct {
	r       io.Reader
	pending []byte
	buf     []byte
}

func newMarkedStream(r io.Reader) *markedStream {
	return &markedStream{r: r, buf: make([]byte, 32<<10)}
}

// copyUntil copies to w what comes before the next marker line and
// returns the rest of that line; it holds back only an end of the output
// that is the start of the marker, so output streams as it comes, its
// last line too. (It held back the marker's length, whatever the bytes:
// a progress line printed before a long wait, stage 13's "Waiting for the
// masters", reached the user only with the next line, minutes later.) A writer that fails
// gets nothing more, but the stream is still read to its marker (the
// next command's output starts there).
func (m *markedStream) copyUntil(w io.Writer, marker string) (string, error) {
	mk := []byte(marker)
	write := func(p []byte) {
		if _, err := w.Write(p); err != nil {
			w = io.Discard
		}
	}
	for {
		if i := bytes.Index(m.pending, mk); i >= 0 {
			if j := bytes.IndexByte(m.pending[i:], '\n'); j >= 0 {
				write(m.pending[:i])
				rest := string(m.pending[i+len(mk) : i+j])
				m.pending = append(m.pending[:0], m.pending[i+j+1:]...)
				return rest, nil
			}
		} else if n := len(m.pending) - markerStart(m.pending, mk); n > 0 {
			write(m.pending[:n])
			m.pending = append(m.pending[:0], m.pending[n:]...)
		}
		n, err := m.r.Read(m.buf)
		m.pending = append(m.pending, m.buf[:n]...)
		if err != nil && n == 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
}

// markerStart is the length of the longest end of p that is the start of
// mk (shorter than mk): what copyUntil holds back until more comes.
func markerStart(p, mk []byte) int {
	for k := min(len(p), len(mk)-1); k > 0; k-- {
		if bytes.HasSuffix(p, mk[:k]) {
			return k
		}
	}
	return 0
}
