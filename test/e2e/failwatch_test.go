//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// failWatchEvery is how often watchFailure looks at whether its test has
// been marked failed.
const failWatchEvery = 250 * time.Millisecond

// watchFailure records the moment the test t is first marked failed. A
// long test's output is hundreds of lines, and a failure whose message
// reads like a finding is easy to miss among them: TestClass ended
// `--- FAIL` twice with no failure found in its output, until this watch
// put its line right after the one that failed it (an Errorf that said
// "the bootstrap MCS still answers 22623 ..."; docs/benchmarks.md,
// twenty-eighth round). When the mark appears it logs when and how far
// into the test, and writes every goroutine's stack at that moment to the
// e2e artifacts (the code that failed it may still be on one). It stops,
// and reports a mark it had not seen yet, when the returned function runs:
// parallel registers that as the test's last cleanup.
func watchFailure(t *testing.T) (stop func()) {
	start := time.Now()
	dir := artifactsPath("failures") // made only for a failure
	name := strings.ReplaceAll(t.Name(), "/", "_")
	w := newFailWatch(t.Failed, func(at time.Time, stacks string) {
		f := filepath.Join(dir, name+".goroutines.txt")
		werr := os.MkdirAll(dir, 0o755)
		if werr == nil {
			werr = os.WriteFile(f, []byte(stacks), 0o644)
		}
		t.Logf("harness: %s was marked failed at %s, %s into the test; every goroutine's stack then: %s (write error: %v)",
			t.Name(), at.Format("15:04:05.000"), at.Sub(start).Round(time.Millisecond), f, werr)
	})
	go w.run(failWatchEvery)
	return w.stop
}

// failWatch polls failed until it turns true (then calls seen once with
// the time and every goroutine's stack) or until stop.
type failWatch struct {
	failed func() bool
	seen   func(at time.Time, stacks string)
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	fired  bool
}

func newFailWatch(failed func() bool, seen func(time.Time, string)) *failWatch {
	return &failWatch{failed: failed, seen: seen, quit: make(chan struct{}), done: make(chan struct{})}
}

func (w *failWatch) run(every time.Duration) {
	defer close(w.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if w.check() {
			return
		}
		select {
		case <-w.quit:
			return
		case <-tick.C:
		}
	}
}

// check calls seen if failed has turned true and seen has not been called
// yet; it reports whether it has been.
func (w *failWatch) check() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired {
		return true
	}
	if !w.failed() {
		return false
	}
	w.fired = true
	w.seen(time.Now(), allStacks())
	return true
}

// stop ends the polling and looks one last time, so a mark made after the
// last poll is reported too; seen is never called after stop returns.
func (w *failWatch) stop() {
	w.once.Do(func() { close(w.quit) })
	<-w.done
	w.check()
}

// allStacks is every goroutine's stack, grown until it fits.
func allStacks() string {
	for n := 1 << 16; ; n *= 2 {
		buf := make([]byte, n)
		if m := runtime.Stack(buf, true); m < n {
			return fmt.Sprintf("%s\n", buf[:m])
		}
	}
}
