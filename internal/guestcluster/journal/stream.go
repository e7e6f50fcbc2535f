package journal

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// Stream is an io.Writer whose complete lines become entries of priority
// pri, as journald reads a unit's stdout and stderr (StandardOutput=journal).
// Flush writes a last line that has no newline.
type Stream struct {
	w   *Writer
	pri int
	mu  sync.Mutex
	buf bytes.Buffer
}

// Stream returns a stream of w's entries of priority pri.
func (w *Writer) Stream(pri int) *Stream { return &Stream{w: w, pri: pri} }

// maxLine is journald's LineMax (48 KiB): a longer line is split there.
const maxLine = 48 << 10

func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	for {
		b := s.buf.Bytes()
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(b) >= maxLine {
				s.w.Print(s.pri, string(b[:maxLine]))
				s.buf.Next(maxLine)
				continue
			}
			return len(p), nil
		}
		s.w.Print(s.pri, string(b[:i]))
		s.buf.Next(i + 1)
	}
}

// Flush writes what is left of a line without its newline.
func (s *Stream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buf.Len() > 0 {
		s.w.Print(s.pri, s.buf.String())
		s.buf.Reset()
	}
}

// Tee returns a logger that logs to next and also writes each record to
// w's journal, in klog's text form as the Kubernetes components log
// (k8s.io/klog/v2's header: severity, date, time, pid, then the message
// and its key=value pairs).
func Tee(next *slog.Logger, w *Writer) *slog.Logger {
	return slog.New(&teeHandler{next: next.Handler(), w: w, klog: true})
}

// TeePlain is Tee for a unit that is a script: the message and its
// key=value pairs, as its echo lines would be.
func TeePlain(next *slog.Logger, w *Writer) *slog.Logger {
	return slog.New(&teeHandler{next: next.Handler(), w: w})
}

type teeHandler struct {
	next  slog.Handler
	w     *Writer
	attrs []slog.Attr
	klog  bool
}

func (h *teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo {
		h.w.Print(priority(r.Level), logLine(r, h.attrs, h.klog))
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &teeHandler{next: h.next.WithAttrs(as), w: h.w, attrs: append(append([]slog.Attr(nil), h.attrs...), as...), klog: h.klog}
}

func (h *teeHandler) WithGroup(name string) slog.Handler {
	return &teeHandler{next: h.next.WithGroup(name), w: h.w, attrs: h.attrs, klog: h.klog}
}

func priority(l slog.Level) int {
	switch {
	case l >= slog.LevelError:
		return PriErr
	case l >= slog.LevelWarn:
		return PriWarning
	}
	return PriInfo
}

// logLine is r as klog writes a structured line,
// `I0514 10:07:01.000000    1234 stand-in] "message" key="value"`, or
// plain: `message key="value"`.
func logLine(r slog.Record, attrs []slog.Attr, klog bool) string {
	sev := "I"
	switch {
	case r.Level >= slog.LevelError:
		sev = "E"
	case r.Level >= slog.LevelWarn:
		sev = "W"
	}
	var b strings.Builder
	if klog {
		fmt.Fprintf(&b, "%s%s %7d stand-in] %q", sev, r.Time.UTC().Format("0102 15:04:05.000000"), os.Getpid(), r.Message)
	} else {
		b.WriteString(r.Message)
	}
	add := func(a slog.Attr) bool {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindString {
			fmt.Fprintf(&b, " %s=%q", a.Key, v.String())
		} else {
			fmt.Fprintf(&b, " %s=%v", a.Key, v.Any())
		}
		return true
	}
	for _, a := range attrs {
		add(a)
	}
	r.Attrs(add)
	return b.String()
}
