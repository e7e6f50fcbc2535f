package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bootlab/bootlab/internal/agent/standin"
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
func (a *Agent) reportEtcdMembers(ctx context.Context, self probe.NodeExpect) {
	local := standin.MasterEtcdctl("https://" + self.IP + ":2379")
	boot := standin.MasterEtcdctl("https://" + a.etcd.BootstrapIP + ":2379")
	a.rep.watchEtcd(ctx, etcdEvery, func(ctx context.Context) probe.EtcdMembers {
		return standin.ReadMembers(ctx, local, boot)
	})
}

// watchEtcd records read's member list now and every `every` until ctx
// ends.
func (r *reporter) watchEtcd(ctx context.Context, every time.Duration, read func(context.Context) probe.EtcdMembers) {
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
func (r *reporter) etcdMembers(m probe.EtcdMembers) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.rep.Etcd
	r.rep.Etcd = &m
	if old != nil && old.Error == m.Error && old.Endpoint == m.Endpoint && slices.Equal(old.Members, m.Members) {
		return
	}
	r.emitLocked()
}
