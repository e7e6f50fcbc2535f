//go:build e2e

package e2e

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The watcher reports a mark once, with this goroutine's stack among the
// others, and not at all when there is none.
func TestFailWatchReportsTheMarkOnce(t *testing.T) {
	var failed atomic.Bool
	var calls atomic.Int32
	var stacks atomic.Value
	w := newFailWatch(failed.Load, func(_ time.Time, s string) {
		calls.Add(1)
		stacks.Store(s)
	})
	go w.run(time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	assert.Zero(t, calls.Load(), "no mark, no report")
	failed.Store(true)
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 10*time.Second, time.Millisecond)
	w.stop()
	assert.EqualValues(t, 1, calls.Load(), "reported once, stop included")
	assert.Contains(t, stacks.Load().(string), "TestFailWatchReportsTheMarkOnce", "every goroutine's stack, the test's own among them")
}

// A mark made after the last poll is reported by stop, and nothing after.
func TestFailWatchStopReportsALateMark(t *testing.T) {
	var failed atomic.Bool
	var calls atomic.Int32
	w := newFailWatch(failed.Load, func(time.Time, string) { calls.Add(1) })
	go w.run(time.Hour)
	time.Sleep(10 * time.Millisecond)
	failed.Store(true)
	w.stop()
	assert.EqualValues(t, 1, calls.Load(), "stop looks one last time")
	w.stop()
	assert.EqualValues(t, 1, calls.Load(), "a second stop reports nothing again")
	assert.True(t, strings.HasPrefix(allStacks(), "goroutine "), "runtime.Stack's format")
}

// waitPortClosed sees a port close once a dial is refused, and gives up
// on one that keeps listening.
func TestWaitPortClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	took, ok := waitPortClosed(addr, 600*time.Millisecond)
	assert.False(t, ok, "a port still listening after the deadline")
	assert.GreaterOrEqual(t, took, 600*time.Millisecond)
	go func() { time.Sleep(700 * time.Millisecond); ln.Close() }()
	took, ok = waitPortClosed(addr, time.Minute)
	assert.True(t, ok, "the port closed")
	assert.Less(t, took, 30*time.Second)
}
