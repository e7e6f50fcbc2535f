package stages

import (
	"bytes"
	"io"
	"sync"
)

// lineSink receives whole prefixed lines from one or more streams and
// keeps the last few for error messages.
type lineSink struct {
	mu     sync.Mutex
	prefix []byte
	outs   []io.Writer
	tail   []string
	keep   int
}

func newLineSink(prefix string, keep int, outs ...io.Writer) *lineSink {
	var ws []io.Writer
	for _, w := range outs {
		if w != nil {
			ws = append(ws, w)
		}
	}
	return &lineSink{prefix: []byte(prefix), outs: ws, keep: keep}
}

func (s *lineSink) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	out := make([]byte, 0, len(s.prefix)+len(line)+1)
	out = append(append(append(out, s.prefix...), line...), '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.outs {
		_, _ = w.Write(out)
	}
	s.tail = append(s.tail, string(line))
	if len(s.tail) > s.keep {
		s.tail = s.tail[len(s.tail)-s.keep:]
	}
}

// Tail returns the last lines written.
func (s *lineSink) Tail() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tail...)
}

// Stream returns a writer for one stream (stdout or stderr): it buffers
// its own partial line, so two streams never mix inside a line.
func (s *lineSink) Stream() *lineWriter { return &lineWriter{sink: s} }

type lineWriter struct {
	mu   sync.Mutex
	sink *lineSink
	buf  []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.sink.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	return len(b), nil
}

// Flush emits a last line without a newline.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.sink.emit(w.buf)
		w.buf = nil
	}
}
