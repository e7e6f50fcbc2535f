package agent

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
	"github.com/bootlab/bootlab/internal/wire"
)

// A check's state becomes the report's OK and Pending: passed is done and
// OK, failed done and not OK, retrying still open; the etcd operator
// stand-in's progress maps onto the same three.
func TestCheckStates(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := newReporter(&Console{w: &out})
	r.set("a", passed, "ok")
	r.set("b", failed, "no")
	r.set("c", retrying, "waiting on %s", "x")
	r.set("d", etcdCheckState(etcd.Joined), "joined")
	r.set("e", etcdCheckState(etcd.Waiting), "adding")
	r.set("f", etcdCheckState(etcd.Failed), "gave up")
	want := map[string][2]bool{"a": {true, false}, "b": {false, false}, "c": {false, true}, "d": {true, false}, "e": {false, true}, "f": {false, false}}
	require.Len(t, r.rep.Checks, len(want))
	for _, c := range r.rep.Checks {
		assert.Equal(t, want[c.Name], [2]bool{c.OK, c.Pending}, "check %s", c.Name)
	}
	assert.Equal(t, "waiting on x", r.rep.Checks[2].Detail)
	assert.Contains(t, out.String(), wire.ReportPrefix, "every change is written to the console")
}

// A burst of changes is one line written at once and one with the last
// state when the gap has passed; a change after a quiet gap is written at
// once, and a flush with nothing new writes nothing.
func TestReportLinesArePaced(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	lines := func() (int, *wire.Report) {
		rep, err := wire.ParseConsole(bytes.NewReader(out.Bytes()))
		require.NoError(t, err)
		return strings.Count(out.String(), wire.ReportPrefix), rep
	}
	r := newReporter(&Console{w: &out})
	clock := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return clock }
	var due []time.Duration
	var flush func()
	r.after = func(d time.Duration, f func()) { due, flush = append(due, d), f }

	for i := range 10 {
		r.set(fmt.Sprintf("dns %d", i), passed, "ok")
		clock = clock.Add(time.Millisecond)
	}
	n, rep := lines()
	assert.Equal(t, 1, n, "the burst's first change at once, the rest held back")
	require.NotNil(t, rep)
	assert.Len(t, rep.Checks, 1)
	assert.Equal(t, []time.Duration{emitGap - time.Millisecond}, due, "one flush, due when the gap since the written line has passed")

	clock = clock.Add(emitGap)
	flush()
	n, rep = lines()
	assert.Equal(t, 2, n, "the rest in one line")
	assert.Len(t, rep.Checks, 10, "the held line carries the burst's last state")
	assert.Equal(t, 2, rep.Seq)
	flush()
	n, _ = lines()
	assert.Equal(t, 2, n, "a flush with nothing new writes nothing")

	clock = clock.Add(emitGap)
	r.set("dns 0", failed, "no answer")
	n, rep = lines()
	assert.Equal(t, 3, n, "a change after a quiet gap is written at once")
	assert.False(t, rep.Checks[0].OK)
	assert.Len(t, due, 1, "and schedules nothing")
}

// A master's etcd member list lands in its report: a line is written when
// the members change, not when the same list is read again, and the line
// parses back with the list.
func TestReportCarriesEtcdMembers(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := newReporter(&Console{w: &out})
	r.gap = 0 // a line for each change, not paced
	one := wire.EtcdMembers{Endpoint: "https://10.0.0.10:2379", Members: []wire.EtcdMember{{ID: "ff", Name: "etcd-bootstrap", PeerURL: "https://10.0.0.10:2380", Leader: true}}}
	two := one
	two.Members = append(slices.Clone(one.Members), wire.EtcdMember{ID: "11", PeerURL: "https://10.0.0.11:2380", Learner: true})
	lists := []wire.EtcdMembers{one, one, two}
	ctx, cancel := context.WithCancel(t.Context())
	i := 0
	r.watchEtcd(ctx, time.Millisecond, func(context.Context) wire.EtcdMembers {
		m := lists[i]
		m.Time = time.Now().UTC()
		if i++; i == len(lists) {
			cancel()
		}
		return m
	})
	assert.Equal(t, 2, strings.Count(out.String(), wire.ReportPrefix), "one line for the first list, one for the learner; none for the same list again")
	rep, err := wire.ParseConsole(&out)
	require.NoError(t, err)
	require.NotNil(t, rep)
	require.NotNil(t, rep.Etcd)
	assert.Equal(t, two.Members, rep.Etcd.Members)
	assert.Equal(t, "https://10.0.0.10:2379", rep.Etcd.Endpoint)
}
