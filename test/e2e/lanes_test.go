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
// about 10 minutes here). Each takes every lane, so it runs alone, and
// before any other test: Go's own -parallel admits the released tests in
// no set order, and a long test admitted last adds its whole length to the
// run after everything else. Alone because its real control plane beside
// another lab's guests took three times as long on two emulated cores
// (docs/benchmarks.md, eighteenth round), while the short tests, which
// keep two cores half idle one at a time, gain from running two abreast
// (nineteenth round).
var longTests = map[string]bool{"TestClass": true}

// lanes admits the e2e tests that run side by side, E2E_PARALLEL (2) at a
// time, long tests first and alone. The Makefile gives Go a -parallel
// above the number of tests, so this is the one gate.
var lanes = newLaneSet()

type laneSet struct {
	mu   sync.Mutex
	cond *sync.Cond
	size int
	free int
	// pending counts the long tests this run selected that have not
	// taken their lanes; no short test starts while one is pending.
	pending int
	timer   *time.Timer
}

func newLaneSet() *laneSet {
	n := 2
	if v, err := strconv.Atoi(os.Getenv("E2E_PARALLEL")); err == nil && v > 0 {
		n = v
	}
	l := &laneSet{size: n, free: n}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// parallel marks t parallel (it waits for the serial tests, as
// t.Parallel does), then waits for its lanes and holds them until t's
// cleanups have run (its lab is down). Every parallel e2e test calls
// this instead of t.Parallel (TestEveryParallelTestTakesALane).
//
// Go times a parallel test from its release, so its reported duration
// includes the wait for a lane: the test logs that wait.
func parallel(t *testing.T) {
	t.Parallel()
	start := time.Now()
	n := lanes.acquire(t.Name())
	t.Logf("lane: waited %s for %d of %d", time.Since(start).Round(time.Second), n, lanes.size)
	t.Cleanup(func() { lanes.release(n) })
}

// acquire waits until the test called name may start and takes its lanes:
// how many it took is what release gives back.
func (l *laneSet) acquire(name string) int {
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
	for !l.admits(name) {
		l.cond.Wait()
	}
	return l.take(name)
}

// lanesOf is how many lanes the test called name takes: every one for a
// long test, else one.
func (l *laneSet) lanesOf(name string) int {
	if longTests[name] {
		return l.size
	}
	return 1
}

// admits reports whether the test called name may start now (l.mu held).
func (l *laneSet) admits(name string) bool {
	if longTests[name] {
		return l.free == l.size
	}
	return l.free > 0 && l.pending == 0
}

// take takes the lanes of the test called name (l.mu held, admitted).
func (l *laneSet) take(name string) int {
	n := l.lanesOf(name)
	l.free -= n
	if longTests[name] && l.pending > 0 {
		l.pending--
	}
	return n
}

func (l *laneSet) release(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.free += n
	l.cond.Broadcast()
}

// A long test waits for every lane and runs alone; a short test waits
// while a long test is pending or running, then shares the lanes.
func TestLongTestsRunAlone(t *testing.T) {
	t.Parallel()
	l := &laneSet{size: 2, free: 2, pending: 1}
	if l.admits("TestShort") {
		t.Error("a short test started while the long test was still to come")
	}
	if !l.admits("TestClass") {
		t.Fatal("the long test did not start with every lane free")
	}
	if n := l.take("TestClass"); n != 2 || l.free != 0 || l.pending != 0 {
		t.Fatalf("the long test took %d lanes (free %d, pending %d), want 2 (0, 0)", n, l.free, l.pending)
	}
	if l.admits("TestShort") {
		t.Error("a short test started beside the long test")
	}
	l.free += 2 // the long test ended
	if !l.admits("TestShort") {
		t.Fatal("a short test waited with every lane free")
	}
	l.take("TestShort")
	if !l.admits("TestOther") {
		t.Error("a second short test waited with a lane free")
	}
	if l.admits("TestClass") {
		t.Error("a long test started beside a short one")
	}
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
			t.Errorf("%s:%d: an e2e test calls t.Parallel(); call parallel(t), which takes its E2E_PARALLEL lanes", f.Name(), line)
		}
	}
}
