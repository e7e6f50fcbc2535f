//go:build e2e

package e2e

import (
	"flag"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// longTests are the e2e tests that take most of a run (TestClass: its
// rehearsal learner's fifteen stages with a real control plane under TCG,
// 10 to 20 minutes here).
// They take a lane before any other test: Go's own -parallel admits the
// released tests in no set order, and a long test admitted last adds its
// whole length to the run after everything else.
var longTests = map[string]bool{"TestClass": true}

// lanes admits the e2e tests that run side by side, E2E_PARALLEL (1) at a
// time, long tests first. The Makefile gives Go a -parallel above the
// number of tests, so this is the one gate.
var lanes = newLaneSet()

type laneSet struct {
	mu   sync.Mutex
	cond *sync.Cond
	size int
	free int
	// pending counts the long tests this run selected that have not
	// taken a lane; a short test leaves them that many lanes.
	pending int
	timer   *time.Timer
}

func newLaneSet() *laneSet {
	n := 1
	if v, err := strconv.Atoi(os.Getenv("E2E_PARALLEL")); err == nil && v > 0 {
		n = v
	}
	l := &laneSet{size: n, free: n}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// parallel marks t parallel (it waits for the serial tests, as
// t.Parallel does), then waits for a lane and holds it until t's
// cleanups have run (its lab is down). Every parallel e2e test calls
// this instead of t.Parallel (TestEveryParallelTestTakesALane).
//
// Go times a parallel test from its release, so its reported duration
// includes the wait for a lane: the test logs that wait.
func parallel(t *testing.T) {
	t.Parallel()
	start := time.Now()
	lanes.acquire(t.Name())
	t.Logf("lane: waited %s for one of %d", time.Since(start).Round(time.Second), lanes.size)
	t.Cleanup(lanes.release)
}

func (l *laneSet) acquire(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer == nil {
		// The first test released from the serial phase: count the long
		// tests this run selected. All parallel tests are released at
		// once, so a selected long test asks within moments; after 10 s
		// nobody waits for one any longer (a -run or -skip this count
		// misread, a long test that failed before asking).
		l.pending = selectedLongTests()
		l.timer = time.AfterFunc(10*time.Second, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.pending = 0
			l.cond.Broadcast()
		})
	}
	long := longTests[name]
	for l.free == 0 || (!long && l.free <= l.pending) {
		l.cond.Wait()
	}
	l.free--
	if long && l.pending > 0 {
		l.pending--
	}
}

func (l *laneSet) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.free++
	l.cond.Broadcast()
}

// selectedLongTests counts the long tests -test.run selects and
// -test.skip does not skip (their top-level patterns).
func selectedLongTests() int {
	match := func(name, flagName string, empty bool) bool {
		f := flag.Lookup(flagName)
		if f == nil || f.Value.String() == "" {
			return empty
		}
		top, _, _ := strings.Cut(f.Value.String(), "/")
		re, err := regexp.Compile(top)
		return err != nil || re.MatchString(name)
	}
	n := 0
	for name := range longTests {
		if match(name, "test.run", true) && !match(name, "test.skip", false) {
			n++
		}
	}
	return n
}

// Every e2e test that runs side by side goes through the lanes: a bare
// t.Parallel() would run beside them uncounted.
func TestEveryParallelTestTakesALane(t *testing.T) {
	t.Parallel()
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	bare := regexp.MustCompile(`(?m)^\s*t\.Parallel\(\)`)
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), "_test.go") || f.Name() == "lanes_test.go" {
			continue
		}
		data, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range bare.FindAllIndex(data, -1) {
			line := 1 + strings.Count(string(data[:m[0]]), "\n")
			t.Errorf("%s:%d: an e2e test calls t.Parallel(); call parallel(t), which takes one of the E2E_PARALLEL lanes", f.Name(), line)
		}
	}
}
