// Package status prints kind-style step lines for people: a spinner and
// ✓/✗ on a terminal, plain "step ... ok" lines otherwise. It writes to the
// stream it is given (stderr by convention) and never to stdout.
package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
)

// Status reports the progress of one step at a time. The zero value and a nil
// *Status discard everything, so library code can call it unconditionally.
type Status struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	msg     string
	started time.Time
	stop    chan struct{}
	done    chan struct{}
	json    bool
	// progress is what Update last said of the running step.
	progress string
	// rewrite adjusts every info line (the CLI adds the lab's -f/--name to
	// the commands a line suggests).
	rewrite func(string) string
}

// SetRewrite makes every Infof line pass through f first.
func (s *Status) SetRewrite(f func(string) string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.rewrite = f
	s.mu.Unlock()
}

// New returns a Status writing to w. tty selects the spinner form.
func New(w io.Writer, tty bool) *Status { return &Status{w: w, tty: tty} }

// NewJSON returns a Status writing one JSON object a line (--log-format
// json): a step when it ends, with ok and its duration, and info lines.
func NewJSON(w io.Writer) *Status { return &Status{w: w, json: true} }

// JSONLine writes one JSON log line in the shape every bootlab JSON line
// has (time in RFC 3339, level, msg) plus extra fields.
func JSONLine(w io.Writer, level, msg string, extra map[string]any) {
	// time, level and msg first, as the logger writes them; then the rest.
	var b bytes.Buffer
	field := func(k string, v any) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v)
		if err != nil {
			vb, _ = json.Marshal(fmt.Sprint(v))
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	field("time", time.Now().UTC().Format(time.RFC3339))
	field("level", level)
	field("msg", msg)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field(k, extra[k])
	}
	_, _ = w.Write([]byte("{" + b.String() + "}\n"))
}

// Discard returns a Status that prints nothing.
func Discard() *Status { return &Status{} }

var frames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Start begins a step. A step still running is ended as successful first.
func (s *Status) Start(format string, args ...any) {
	if s == nil || s.w == nil {
		return
	}
	s.End(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msg = fmt.Sprintf(format, args...)
	s.started = time.Now()
	if s.json {
		return // one line when it ends
	}
	if !s.tty {
		fmt.Fprintf(s.w, " • %s ...\n", s.msg)
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.spin(s.stop, s.done)
}

// Update changes what the running step's spinner says (progress such as
// "42/104 checks pass"). Only a terminal shows it: plain and JSON output
// keep one line a step.
func (s *Status) Update(format string, args ...any) {
	if s == nil || s.w == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty && s.stop != nil {
		s.progress = fmt.Sprintf(format, args...)
	}
}

func (s *Status) spin(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		s.mu.Lock()
		line := s.msg
		if s.progress != "" {
			line += ": " + s.progress
		}
		fmt.Fprintf(s.w, "\r\x1b[K %s %s", frames[i%len(frames)], line)
		s.mu.Unlock()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// End finishes the running step, marking it ✓ or ✗. It does nothing when no
// step is running.
func (s *Status) End(ok bool) { s.EndDetail(ok, "") }

// EndDetail is End with what the step changed, said on the same line.
func (s *Status) EndDetail(ok bool, detail string) {
	if s == nil || s.w == nil {
		return
	}
	s.mu.Lock()
	msg, stop, done := s.msg, s.stop, s.done
	s.msg, s.stop, s.done, s.progress = "", nil, nil, ""
	elapsed := time.Since(s.started).Round(10 * time.Millisecond)
	s.mu.Unlock()
	if msg == "" {
		return
	}
	if stop != nil {
		close(stop)
		<-done
	}
	mark := "✓"
	if !ok {
		mark = "✗"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.json {
		level := "info"
		if !ok {
			level = "error"
		}
		extra := map[string]any{"step": msg, "ok": ok, "elapsedMs": elapsed.Milliseconds()}
		if detail != "" {
			extra["detail"] = detail
		}
		JSONLine(s.w, level, msg, extra)
		return
	}
	if detail != "" {
		msg += ": " + detail
	}
	if s.tty {
		fmt.Fprintf(s.w, "\r\x1b[K %s %s (%s)\n", mark, msg, elapsed)
		return
	}
	fmt.Fprintf(s.w, " %s %s (%s)\n", mark, msg, elapsed)
}

// Infof prints a line outside any step (a step in progress is not ended).
func (s *Status) Infof(format string, args ...any) {
	if s == nil || s.w == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty && s.stop != nil {
		fmt.Fprint(s.w, "\r\x1b[K")
	}
	line := fmt.Sprintf(format, args...)
	if s.rewrite != nil {
		line = s.rewrite(line)
	}
	if s.json {
		JSONLine(s.w, "info", line, nil)
		return
	}
	fmt.Fprintf(s.w, "   %s\n", line)
}

// Discarding reports whether s prints nothing (Discard, -q): a caller that
// makes per-task Status values for parallel work keeps them quiet too.
func (s *Status) Discarding() bool { return s == nil || s.w == nil }
