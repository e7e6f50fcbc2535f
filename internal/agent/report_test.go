package agent

import (
	"bytes"
	"testing"

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
