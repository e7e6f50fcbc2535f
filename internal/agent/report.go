package agent

import (
	"fmt"
	"sync"
	"time"

	"github.com/bootlab/bootlab/lab/probe"
)

// reporter keeps the checks and writes the report line whenever they change,
// and every 15 s so a torn console line is soon followed by a whole one.
type reporter struct {
	mu     sync.Mutex
	out    *Console
	rep    probe.Report
	boot   time.Time
	starts map[string]time.Time
}

func newReporter(out *Console) *reporter {
	now := time.Now().UTC()
	return &reporter{out: out, boot: now, rep: probe.Report{Boot: now}, starts: map[string]time.Time{}}
}

// pending adds checks (if new) as pending with detail.
func (r *reporter) pending(detail string, names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if r.index(n) >= 0 {
			continue
		}
		now := time.Now().UTC()
		r.starts[n] = now
		r.rep.Checks = append(r.rep.Checks, probe.Check{Name: n, Pending: true, Detail: detail, Start: now})
	}
	r.emitLocked()
}

// start restarts a check's clock.
func (r *reporter) start(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts[name] = time.Now().UTC()
	if i := r.index(name); i >= 0 {
		r.rep.Checks[i].Start = r.starts[name]
	}
}

// checkState is where a check stands: the report's OK and Pending, which
// only three of their four combinations mean.
type checkState int

const (
	// failed is done and not OK.
	failed checkState = iota
	// passed is done and OK.
	passed
	// retrying is not done yet: the detail says what it waits on.
	retrying
)

// set records a check result; retrying keeps it open.
func (r *reporter) set(name string, st checkState, format string, args ...any) {
	ok, pending := st == passed, st == retrying
	r.mu.Lock()
	defer r.mu.Unlock()
	detail := fmt.Sprintf(format, args...)
	i := r.index(name)
	if i < 0 {
		r.starts[name] = time.Now().UTC()
		r.rep.Checks = append(r.rep.Checks, probe.Check{Name: name, Start: r.starts[name]})
		i = len(r.rep.Checks) - 1
	}
	c := &r.rep.Checks[i]
	if c.OK == ok && c.Pending == pending && c.Detail == detail {
		return
	}
	c.OK, c.Pending, c.Detail = ok, pending, detail
	c.DurationMS = time.Since(r.starts[name]).Milliseconds()
	r.emitLocked()
}

func (r *reporter) identity(node, role, mac, ip string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if node != "" {
		r.rep.Node = node
	}
	if role != "" {
		r.rep.Role = role
	}
	if mac != "" {
		r.rep.MAC = mac
	}
	if ip != "" {
		r.rep.IP = ip
	}
}

func (r *reporter) index(name string) int {
	for i, c := range r.rep.Checks {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func (r *reporter) emitLocked() {
	r.rep.Seq++
	r.rep.UptimeMS = time.Since(r.boot).Milliseconds()
	_, _ = r.out.Write(r.rep.Line())
}

func (r *reporter) heartbeat() {
	for {
		time.Sleep(15 * time.Second)
		r.mu.Lock()
		r.emitLocked()
		r.mu.Unlock()
	}
}
