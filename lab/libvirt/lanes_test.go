package libvirt

import (
	"errors"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingDial opens distinct (unconnected) clients and counts the dials;
// fail makes it refuse.
type countingDial struct {
	n    int
	fail bool
}

func (d *countingDial) dial() (*golibvirt.Libvirt, error) {
	d.n++
	if d.fail {
		return nil, errors.New("refused")
	}
	return golibvirt.NewWithDialer(nil), nil
}

// Long calls fill the connection's slots first, then further lanes opened
// one at a time, up to maxLanes; past that they share the least busy.
func TestLanesOpenOnlyWhenEveryLaneIsFull(t *testing.T) {
	t.Parallel()
	d := &countingDial{}
	own := golibvirt.NewWithDialer(nil)
	ls := newLanes(own, d.dial)
	var held []*lane
	for i := 0; i < laneCalls; i++ {
		held = append(held, ls.acquire())
	}
	for _, ln := range held {
		assert.Same(t, own, ln.l, "the first %d long calls use the connection itself", laneCalls)
	}
	assert.Equal(t, 0, d.n)
	next := ls.acquire()
	assert.NotSame(t, own, next.l, "a call past the slots goes over a new connection")
	assert.Equal(t, 1, d.n)
	assert.Equal(t, 2, ls.count())
	held = append(held, next)
	for len(held) < laneCalls*maxLanes {
		held = append(held, ls.acquire())
	}
	assert.Equal(t, maxLanes, ls.count())
	assert.Equal(t, maxLanes-1, d.n)
	extra := ls.acquire()
	assert.Equal(t, maxLanes-1, d.n, "no lane beyond maxLanes")
	assert.Equal(t, laneCalls+1, extra.busy, "the overflow queues on a full lane")
	ls.release(extra)
	ls.release(held[laneCalls+1]) // a call on the second lane returns
	again := ls.acquire()
	assert.Same(t, held[laneCalls+1].l, again.l, "the freed slot is taken next")
	for _, ln := range ls.conns {
		assert.LessOrEqual(t, ln.busy, laneCalls)
	}
}

// A daemon that refuses another connection costs one try: the calls
// queue on the open connection, as before lanes.
func TestLanesStopDialingAfterAFailure(t *testing.T) {
	t.Parallel()
	d := &countingDial{fail: true}
	own := golibvirt.NewWithDialer(nil)
	ls := newLanes(own, d.dial)
	for i := 0; i < 3*laneCalls; i++ {
		require.Same(t, own, ls.acquire().l)
	}
	assert.Equal(t, 1, d.n, "one failed dial, no more")
	assert.Equal(t, 1, ls.count())
}

// Without a dial (the test driver) every call uses the one connection.
func TestLanesWithoutDialUseTheConnection(t *testing.T) {
	t.Parallel()
	own := golibvirt.NewWithDialer(nil)
	ls := newLanes(own, nil)
	for i := 0; i < 2*laneCalls; i++ {
		require.Same(t, own, ls.acquire().l)
	}
	assert.Equal(t, 1, ls.count())
}
