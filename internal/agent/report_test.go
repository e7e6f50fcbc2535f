package agent

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/agent/standin"
	"github.com/bootlab/bootlab/lab/probe"
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
	r.set("d", etcdCheckState(standin.Joined), "joined")
	r.set("e", etcdCheckState(standin.Waiting), "adding")
	r.set("f", etcdCheckState(standin.Failed), "gave up")
	want := map[string][2]bool{"a": {true, false}, "b": {false, false}, "c": {false, true}, "d": {true, false}, "e": {false, true}, "f": {false, false}}
	require.Len(t, r.rep.Checks, len(want))
	for _, c := range r.rep.Checks {
		assert.Equal(t, want[c.Name], [2]bool{c.OK, c.Pending}, "check %s", c.Name)
	}
	assert.Equal(t, "waiting on x", r.rep.Checks[2].Detail)
	assert.Contains(t, out.String(), probe.ReportPrefix, "every change is written to the console")
}

// A master's etcd member list lands in its report: a line is written when
// the members change, not when the same list is read again, and the line
// parses back with the list.
func TestReportCarriesEtcdMembers(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := newReporter(&Console{w: &out})
	one := probe.EtcdMembers{Endpoint: "https://10.0.0.10:2379", Members: []probe.EtcdMember{{ID: "ff", Name: "etcd-bootstrap", PeerURL: "https://10.0.0.10:2380", Leader: true}}}
	two := one
	two.Members = append(slices.Clone(one.Members), probe.EtcdMember{ID: "11", PeerURL: "https://10.0.0.11:2380", Learner: true})
	lists := []probe.EtcdMembers{one, one, two}
	ctx, cancel := context.WithCancel(t.Context())
	i := 0
	r.watchEtcd(ctx, time.Millisecond, func(context.Context) probe.EtcdMembers {
		m := lists[i]
		m.Time = time.Now().UTC()
		if i++; i == len(lists) {
			cancel()
		}
		return m
	})
	assert.Equal(t, 2, strings.Count(out.String(), probe.ReportPrefix), "one line for the first list, one for the learner; none for the same list again")
	rep, err := probe.ParseConsole(&out)
	require.NoError(t, err)
	require.NotNil(t, rep)
	require.NotNil(t, rep.Etcd)
	assert.Equal(t, two.Members, rep.Etcd.Members)
	assert.Equal(t, "https://10.0.0.10:2379", rep.Etcd.Endpoint)
}
