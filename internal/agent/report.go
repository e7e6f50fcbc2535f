package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
	"github.com/bootlab/bootlab/internal/wire"
)

// emitGap is the least time between two report lines. The checks change
// in bursts (a node's DNS checks, its servers, end within milliseconds of
// each other) and each line is the whole report, about 2 KB by then, which
// the emulated UART takes a byte at a time: under TCG the lines were a
// fifth of the agent's CPU, 18 lines a node from restore to all checks
// passed, twelve of them within 130 ms (docs/benchmarks.md, twenty-eighth
// round). The first change after a quiet spell is written at once, the
// rest of a burst at most emitGap later, in one line.
const emitGap = 100 * time.Millisecond

// reporter keeps the checks and writes the report line whenever they change
// (at most one line per emitGap, the last state always written), and every
// 15 s so a torn console line is soon followed by a whole one.
type reporter struct {
	mu     sync.Mutex
	out    *Console
	rep    wire.Report
	boot   time.Time
	starts map[string]time.Time
	// gap is emitGap; 0 writes every change at once. now and after are
	// time.Now and time.AfterFunc (tests pace the lines themselves).
	gap   time.Duration
	now   func() time.Time
	after func(time.Duration, func())
	// last is when the last line was written; dirty says a change since
	// then is not written yet, held says a flush is due to write it.
	last  time.Time
	dirty bool
	held  bool
}

func newReporter(out *Console) *reporter {
	now := time.Now().UTC()
	return &reporter{out: out, boot: now, rep: wire.Report{Boot: now}, starts: map[string]time.Time{},
		gap: emitGap, now: time.Now, after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
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
		r.rep.Checks = append(r.rep.Checks, wire.Check{Name: n, Pending: true, Detail: detail, Start: now})
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
		r.rep.Checks = append(r.rep.Checks, wire.Check{Name: name, Start: r.starts[name]})
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

// emitLocked writes the report now if the last line is at least gap old,
// else once it is (r.mu held).
func (r *reporter) emitLocked() {
	r.dirty = true
	wait := r.gap - r.now().Sub(r.last)
	if wait <= 0 {
		r.writeLocked()
		return
	}
	if !r.held {
		r.held = true
		r.after(wait, r.flush)
	}
}

// flush writes the report held back by emitLocked, if still unwritten.
func (r *reporter) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = false
	if r.dirty {
		r.writeLocked()
	}
}

// writeLocked writes the report line (r.mu held).
func (r *reporter) writeLocked() {
	r.dirty = false
	r.last = r.now()
	r.rep.Seq++
	r.rep.UptimeMS = time.Since(r.boot).Milliseconds()
	_, _ = r.out.Write(r.rep.Line())
}

// shutdown writes the report at once, saying the node is going down for
// action (`lab status` shows it rebooting until the next boot reports).
func (r *reporter) shutdown(action string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Shutdown = action
	r.writeLocked()
}

// heartbeat writes the report every 15 s, with the node's CPU by program
// read afresh.
func (r *reporter) heartbeat() {
	for {
		time.Sleep(15 * time.Second)
		cpu := programCPU("/proc", cpuTop)
		r.mu.Lock()
		r.rep.CPU = cpu
		r.emitLocked()
		r.mu.Unlock()
	}
}

// etcdEvery is how often a rehearsal master lists the etcd members for its
// report: two reads of etcd's API on a kept connection, cheap next to a
// stage, frequent enough to see each learner join and be promoted.
const etcdEvery = 15 * time.Second

// reportEtcdMembers puts the etcd member list in this master's report
// until ctx ends, read with the node's own client certificate (the host
// keeps none): from its own member once it votes, from the bootstrap's
// before.
func (a *Agent) reportEtcdMembers(ctx context.Context, self wire.NodeExpect) {
	local := etcd.MasterEtcdctl("https://" + self.IP + ":2379")
	boot := etcd.MasterEtcdctl("https://" + a.etcd.BootstrapIP + ":2379")
	a.rep.watchEtcd(ctx, etcdEvery, func(ctx context.Context) wire.EtcdMembers {
		return etcd.ReadMembers(ctx, local, boot)
	})
}

// watchEtcd records read's member list now and every `every` until ctx
// ends.
func (r *reporter) watchEtcd(ctx context.Context, every time.Duration, read func(context.Context) wire.EtcdMembers) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r.etcdMembers(read(ctx))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// etcdMembers records a member list; a report line is written when the
// members or the error changed (the heartbeat carries the newer time).
func (r *reporter) etcdMembers(m wire.EtcdMembers) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.rep.Etcd
	r.rep.Etcd = &m
	if old != nil && old.Error == m.Error && old.Endpoint == m.Endpoint && slices.Equal(old.Members, m.Members) {
		return
	}
	r.emitLocked()
}
