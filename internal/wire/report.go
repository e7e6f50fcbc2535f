package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// ReportPrefix starts every report line on a probe node's serial console.
const ReportPrefix = "BOOTLAB-PROBE-REPORT "

// Check is one thing a probe node checked.
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Pending is true while the check is still running or retrying; Detail
	// then says what it waits for or the last error.
	Pending    bool      `json:"pending,omitempty"`
	Detail     string    `json:"detail"`
	Start      time.Time `json:"start"`
	DurationMS int64     `json:"durationMs"`
}

// Duration is how long the check took (so far).
func (c Check) Duration() time.Duration { return time.Duration(c.DurationMS) * time.Millisecond }

// Report is a probe node's state: every check in order.
type Report struct {
	Node string `json:"node,omitempty"`
	Role string `json:"role,omitempty"`
	MAC  string `json:"mac"`
	IP   string `json:"ip,omitempty"`
	// Seq increases with every report a node writes in one boot.
	Seq int `json:"seq"`
	// Boot is when the agent started (node clock), UptimeMS since then.
	Boot     time.Time `json:"boot"`
	UptimeMS int64     `json:"uptimeMs"`
	Checks   []Check   `json:"checks"`
	// Etcd is the etcd member list a rehearsal master last read (nil on
	// other nodes).
	Etcd *EtcdMembers `json:"etcd,omitempty"`
	// CPU is the node's CPU time since boot by program, the most first, as
	// the agent last read /proc (every heartbeat): where an emulated node's
	// vCPU went. Each program's processes count with the children they
	// reaped; the agent, the node's init, reaps every orphan.
	CPU []ProgramCPU `json:"cpu,omitempty"`
	// Shutdown is set once the node is going down: reboot, poweroff or
	// halt (a reboot's next boot writes reports of its own).
	Shutdown string `json:"shutdown,omitempty"`
}

// ProgramCPU is the CPU time (user and system) one program's processes
// used on a node.
type ProgramCPU struct {
	Program string  `json:"program"`
	Seconds float64 `json:"seconds"`
}

// CPUSummary is the report's CPU line, "etcd 41.2 s, kube-apiserver 12.0
// s, ...", or "" when the agent sent none.
func (r *Report) CPUSummary() string {
	parts := make([]string, 0, len(r.CPU))
	for _, p := range r.CPU {
		parts = append(parts, fmt.Sprintf("%s %.1f s", p.Program, p.Seconds))
	}
	return strings.Join(parts, ", ")
}

// Uptime is how long the agent had run when it wrote the report (node clock).
func (r *Report) Uptime() time.Duration { return time.Duration(r.UptimeMS) * time.Millisecond }

// Complete is true when no check is pending.
func (r *Report) Complete() bool {
	for _, c := range r.Checks {
		if c.Pending {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Failed returns the checks that finished and failed.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.OK && !c.Pending {
			out = append(out, c)
		}
	}
	return out
}

// Line renders the report as one console line (with newline).
func (r *Report) Line() []byte {
	data, _ := json.Marshal(r)
	var b bytes.Buffer
	b.WriteString(ReportPrefix)
	b.Write(data)
	b.WriteString("\n")
	return b.Bytes()
}

// ParseConsole returns the last complete, well-formed report in a console
// log, or nil when there is none. Lines the kernel interleaved or cut are
// skipped, so a torn line never hides the previous good one.
func ParseConsole(r io.Reader) (*Report, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	var last *Report
	for sc.Scan() {
		line := sc.Bytes()
		i := bytes.Index(line, []byte(ReportPrefix))
		if i < 0 {
			continue
		}
		payload := bytes.TrimSpace(line[i+len(ReportPrefix):])
		var rep Report
		if err := json.Unmarshal(payload, &rep); err != nil {
			continue
		}
		if last != nil && rep.Boot.Equal(last.Boot) && rep.Seq < last.Seq {
			continue
		}
		last = &rep
	}
	return last, sc.Err()
}

// Summary is a report as a person reads it: one line of who and when, then
// one line a check with ✓, ✗ or … (pending).
func (r *Report) Summary() string {
	var b strings.Builder
	ok, pending := 0, 0
	for _, c := range r.Checks {
		switch {
		case c.Pending:
			pending++
		case c.OK:
			ok++
		}
	}
	fmt.Fprintf(&b, "── probe report #%d from %s (%s), %s after boot: %d/%d checks ok", r.Seq, r.Node, r.Role,
		r.Uptime().Round(time.Second), ok, len(r.Checks))
	if pending > 0 {
		fmt.Fprintf(&b, ", %d pending", pending)
	}
	b.WriteByte('\n')
	for _, c := range r.Checks {
		mark := "✓"
		switch {
		case c.Pending:
			mark = "…"
		case !c.OK:
			mark = "✗"
		}
		fmt.Fprintf(&b, "   %s %-24s %s\n", mark, c.Name, c.Detail)
	}
	return b.String()
}

// ReadableConsole copies a console log to w, each report line shown as its
// Summary: what `lab console` prints unless asked for the raw log. Other
// lines (the kernel's, the agent's log) pass as they are.
type ReadableConsole struct {
	W   io.Writer
	buf []byte
}

func (c *ReadableConsole) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for {
		i := bytes.IndexByte(c.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := c.buf[:i+1]
		if err := c.writeLine(line); err != nil {
			return len(p), err
		}
		c.buf = c.buf[i+1:]
	}
}

func (c *ReadableConsole) writeLine(line []byte) error {
	if j := bytes.Index(line, []byte(ReportPrefix)); j >= 0 {
		var rep Report
		if err := json.Unmarshal(bytes.TrimSpace(line[j+len(ReportPrefix):]), &rep); err == nil {
			_, err := io.WriteString(c.W, rep.Summary())
			return err
		}
	}
	_, err := c.W.Write(line)
	return err
}
