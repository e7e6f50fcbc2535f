package verify

import (
	"context"
	"os"
	"time"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// Between two passes verify waits Options.Interval, or, on a probe lab
// whose console logs are on this machine, until a node writes to its
// console: a probe node's agent prints its report when a check changes
// (a burst of changes in one line, at most one line per 100 ms) and every
// 15 s, so a new line there is what can turn a failed check into a passed
// one. A lab turns green on its last node's last report; without the
// watch, verify saw it up to a whole interval later.
const (
	// watchTick is how often the console logs are stat'ed while waiting.
	watchTick = 100 * time.Millisecond
	// watchGap is the least time between the end of a pass and the next
	// one that a console write starts: while a lab comes up its nodes
	// report many times a second, and each pass dials DNS and every
	// frontend.
	watchGap = 500 * time.Millisecond
)

// wake says why a wait between passes ended.
type wake int

const (
	wakeInterval wake = iota // the interval passed
	wakeConsole              // a node wrote to its console
)

// consoleWatch notices writes to a lab's console logs by their size and
// modification time. The zero of it (no paths) never notices anything.
type consoleWatch struct {
	paths []string
	last  map[string]fileStamp
}

type fileStamp struct {
	size int64
	mod  time.Time
}

// watchConsoles watches the console logs of s's nodes (but a removed
// bootstrap's) when they are files on this machine: a probe lab on a local
// hypervisor. Elsewhere it watches nothing and verify keeps its interval.
func watchConsoles(s *spec.Spec, pivoted bool, opts Options) *consoleWatch {
	w := &consoleWatch{last: map[string]fileStamp{}}
	if s.Profile != spec.ProfileProbe || opts.host().Remote() {
		return w
	}
	for _, n := range s.Nodes {
		if pivoted && n.Role == spec.RoleBootstrap {
			continue
		}
		w.paths = append(w.paths, labdir.ConsoleLog(s, n))
	}
	return w
}

func (w *consoleWatch) stamps() map[string]fileStamp {
	out := make(map[string]fileStamp, len(w.paths))
	for _, p := range w.paths {
		if fi, err := os.Stat(p); err == nil {
			out[p] = fileStamp{size: fi.Size(), mod: fi.ModTime()}
		}
	}
	return out
}

// mark takes the logs as they are now as the baseline: called as a pass
// starts, so a line written while the pass reads the logs still counts.
func (w *consoleWatch) mark() { w.last = w.stamps() }

// changed says whether a log was written (made, grown, truncated or
// touched) since mark.
func (w *consoleWatch) changed() bool {
	now := w.stamps()
	if len(now) != len(w.last) {
		return true
	}
	for p, st := range now {
		if was, ok := w.last[p]; !ok || was != st {
			return true
		}
	}
	return false
}

// wait blocks until interval has passed, or, after watchGap, until a
// watched log changed since mark; ctx ending returns its error.
func (w *consoleWatch) wait(ctx context.Context, interval time.Duration) (wake, error) {
	timer := time.NewTimer(interval)
	defer timer.Stop()
	var tick <-chan time.Time
	if len(w.paths) > 0 && interval > watchGap {
		gap := time.NewTimer(watchGap)
		defer gap.Stop()
		select {
		case <-ctx.Done():
			return wakeInterval, ctx.Err()
		case <-timer.C:
			return wakeInterval, nil
		case <-gap.C:
		}
		t := time.NewTicker(watchTick)
		defer t.Stop()
		tick = t.C
		if w.changed() {
			return wakeConsole, nil
		}
	}
	for {
		select {
		case <-ctx.Done():
			return wakeInterval, ctx.Err()
		case <-timer.C:
			return wakeInterval, nil
		case <-tick:
			if w.changed() {
				return wakeConsole, nil
			}
		}
	}
}
