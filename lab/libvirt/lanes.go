package libvirt

import (
	"context"
	"sync"

	golibvirt "github.com/digitalocean/go-libvirt"
)

// libvirtd serves at most max_client_requests calls of one client
// connection at a time (5 unless libvirtd.conf says otherwise) and leaves
// the rest unread on the socket until one returns. A domain start, stop or
// snapshot, or a volume made by qemu-img, holds its slot for as long as it
// takes: libvirt's stop alone polls the QEMU process every 200 ms. Six
// nodes stopped in parallel over one connection took 0.44 s, the sixth
// waiting for a slot, against 0.25 s with the limit raised
// (docs/benchmarks.md, twenty-sixth round). So the long calls go over
// lanes: the connection itself and, when it has laneCalls long calls in
// flight, further connections to the same daemon, opened as needed (at
// most maxLanes in all) and closed with the Conn. A slot is always left on
// each connection for the short calls (look-ups, definitions) made
// meanwhile.
const (
	laneCalls = 4
	maxLanes  = 4
)

// lanes are the connections long calls are spread over; lanes[0] is the
// Conn's own. A lane that cannot be opened is not tried again: the calls
// queue on those open, as they did on one connection.
type lanes struct {
	mu    sync.Mutex
	dial  func() (*golibvirt.Libvirt, error) // nil: only lanes[0]
	conns []*lane
	// dialFailed: a dial failed once; no more are tried.
	dialFailed bool
}

type lane struct {
	l    *golibvirt.Libvirt
	busy int
}

func newLanes(l *golibvirt.Libvirt, dial func() (*golibvirt.Libvirt, error)) *lanes {
	return &lanes{dial: dial, conns: []*lane{{l: l}}}
}

// acquire returns the least busy lane, opening another when every open
// one has laneCalls long calls in flight, and marks one more call on it.
func (ls *lanes) acquire() *lane {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	best := ls.conns[0]
	for _, ln := range ls.conns[1:] {
		if ln.busy < best.busy {
			best = ln
		}
	}
	if best.busy >= laneCalls && len(ls.conns) < maxLanes && ls.dial != nil && !ls.dialFailed {
		// Opened under the lock: a local or SSH-channel connection takes
		// milliseconds, and at most maxLanes-1 are ever opened.
		if l, err := ls.dial(); err == nil {
			best = &lane{l: l}
			ls.conns = append(ls.conns, best)
		} else {
			ls.dialFailed = true
		}
	}
	best.busy++
	return best
}

func (ls *lanes) release(ln *lane) {
	ls.mu.Lock()
	ln.busy--
	ls.mu.Unlock()
}

// count is how many connections are open.
func (ls *lanes) count() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.conns)
}

// closeExtra disconnects every lane but the Conn's own.
func (ls *lanes) closeExtra() {
	ls.mu.Lock()
	extra := ls.conns[1:]
	ls.conns = ls.conns[:1]
	ls.mu.Unlock()
	for _, ln := range extra {
		_ = ln.l.Disconnect()
	}
}

// long runs f, a long call (a domain start or stop, a snapshot), on a
// lane with a slot free.
func (c *Conn) long(ctx context.Context, f func(l *golibvirt.Libvirt) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ln := c.lanes.acquire()
	defer c.lanes.release(ln)
	return f(ln.l)
}
