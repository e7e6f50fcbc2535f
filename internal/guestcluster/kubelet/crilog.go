package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// A container's log is kept as the CRI runtimes keep it for the kubelet
// (kubernetes pkg/kubelet/kuberuntime/logs/logs.go reads it): one line per
// line the container wrote, "<RFC 3339 nano time> <stream> <tag> <text>",
// the stream stdout or stderr, the tag F for a full line or P for the part
// of a line longer than the runtime's buffer, the next part following.
const (
	tagFull    = "F"
	tagPartial = "P"
	// maxLogLine is where a line is cut into partial lines: containerd's
	// and CRI-O's default (16 KiB).
	maxLogLine = 16 << 10
)

// criLog writes a container's stdout and stderr to one file in the CRI
// log format.
type criLog struct {
	mu  sync.Mutex
	f   io.WriteCloser
	now func() time.Time
}

// newCRILog returns the log writing to f.
func newCRILog(f io.WriteCloser) *criLog { return &criLog{f: f, now: time.Now} }

// stream is one of the container's streams; it buffers a line until its
// newline.
func (l *criLog) stream(name string) *criStream { return &criStream{l: l, name: name} }

func (l *criLog) line(stream, tag string, text []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.f, "%s %s %s %s\n", l.now().UTC().Format(time.RFC3339Nano), stream, tag, text)
}

// Close ends the log.
func (l *criLog) Close() error { return l.f.Close() }

type criStream struct {
	l    *criLog
	name string
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (s *criStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	for {
		b := s.buf.Bytes()
		i := bytes.IndexByte(b, '\n')
		switch {
		case i >= 0 && i <= maxLogLine:
			s.l.line(s.name, tagFull, b[:i])
			s.buf.Next(i + 1)
		case len(b) > maxLogLine:
			s.l.line(s.name, tagPartial, b[:maxLogLine])
			s.buf.Next(maxLogLine)
		default:
			return len(p), nil
		}
	}
}

// flush writes a last line without newline as a full one, as the runtimes
// do when the container's stream ends.
func (s *criStream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buf.Len() > 0 {
		s.l.line(s.name, tagFull, s.buf.Bytes())
		s.buf.Reset()
	}
}

// LogLine is one line of a CRI log.
type LogLine struct {
	Time   time.Time
	Stream string
	// Partial is set on a part of a longer line (tag P).
	Partial bool
	Text    []byte
}

// errNotCRI is a line that is not in the CRI log format.
var errNotCRI = errors.New("not a CRI log line (want: TIME STREAM TAG TEXT)")

// ParseLogLine reads one line of a CRI log (without its newline).
func ParseLogLine(line []byte) (LogLine, error) {
	f := bytes.SplitN(line, []byte(" "), 4)
	if len(f) < 3 {
		return LogLine{}, errNotCRI
	}
	t, err := time.Parse(time.RFC3339Nano, string(f[0]))
	if err != nil {
		return LogLine{}, errNotCRI
	}
	l := LogLine{Time: t, Stream: string(f[1])}
	if l.Stream != "stdout" && l.Stream != "stderr" {
		return LogLine{}, errNotCRI
	}
	switch tags := strings.Split(string(f[2]), ":"); tags[0] {
	case tagFull:
	case tagPartial:
		l.Partial = true
	default:
		return LogLine{}, errNotCRI
	}
	if len(f) == 4 {
		l.Text = f[3]
	}
	return l, nil
}

// LogOptions are crictl logs' options.
type LogOptions struct {
	// Tail is the number of lines from the end (-1: all).
	Tail int
	// Follow keeps reading as the log grows, until Running says the
	// container stopped or ctx ends.
	Follow bool
	// Timestamps puts each line's time before it.
	Timestamps bool
	// Running says whether the container still runs (Follow).
	Running func() bool
}

// followEvery is how often a followed log is read again.
const followEvery = 250 * time.Millisecond

// ReadLog writes the container log at path as crictl logs does: each line's
// text to stdout or stderr as the container wrote it, the parts of a long
// line joined. A line not in the CRI format is skipped.
func ReadLog(ctx context.Context, path string, o LogOptions, stdout, stderr io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lines, err := readLines(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if o.Tail >= 0 && len(lines) > o.Tail {
		lines = lines[len(lines)-o.Tail:]
	}
	w := logWriter{stdout: stdout, stderr: stderr, ts: o.Timestamps}
	for _, l := range lines {
		w.write(l)
	}
	if !o.Follow {
		return nil
	}
	rd := bufio.NewReader(f)
	st := &partialState{}
	var pending []byte
	for {
		chunk, err := rd.ReadBytes('\n')
		pending = append(pending, chunk...)
		if err == nil {
			if ls := assemble([][]byte{bytes.TrimSuffix(pending, []byte("\n"))}, st); len(ls) > 0 {
				w.write(ls[0])
			}
			pending = pending[:0]
			continue
		}
		if !errors.Is(err, io.EOF) {
			return err
		}
		if o.Running != nil && !o.Running() {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followEvery):
		}
	}
}

// readLines reads the whole lines of a CRI log, partial ones joined.
func readLines(r io.Reader) ([]LogLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var raw [][]byte
	for sc.Scan() {
		raw = append(raw, append([]byte(nil), sc.Bytes()...))
	}
	return assemble(raw, &partialState{}), sc.Err()
}

// partialState holds the parts of a line not yet ended, by stream.
type partialState struct{ parts map[string][]byte }

// assemble joins partial lines into whole ones.
func assemble(raw [][]byte, st *partialState) []LogLine {
	if st.parts == nil {
		st.parts = map[string][]byte{}
	}
	var out []LogLine
	for _, r := range raw {
		l, err := ParseLogLine(r)
		if err != nil {
			continue
		}
		if l.Partial {
			st.parts[l.Stream] = append(st.parts[l.Stream], l.Text...)
			continue
		}
		if p := st.parts[l.Stream]; len(p) > 0 {
			l.Text = append(p, l.Text...)
			delete(st.parts, l.Stream)
		}
		out = append(out, l)
	}
	return out
}

type logWriter struct {
	stdout, stderr io.Writer
	ts             bool
}

func (w logWriter) write(l LogLine) {
	out := w.stdout
	if l.Stream == "stderr" {
		out = w.stderr
	}
	if w.ts {
		fmt.Fprintf(out, "%s ", l.Time.Format(time.RFC3339Nano))
	}
	fmt.Fprintf(out, "%s\n", l.Text)
}
