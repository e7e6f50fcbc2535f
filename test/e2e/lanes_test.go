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
// (nineteenth round). Once its real control plane has moved to the
// masters it lends all lanes but one (lendLanes): the rest of it waits.
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
	// held is how many lanes each running test holds, by its top-level
	// name: what its end gives back, less what it lent (lendLanes).
	held map[string]int
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
// cleanups have run (its lab is down), and watches for t's failure mark
// (watchFailure). Every parallel e2e test calls
// this instead of t.Parallel (TestEveryParallelTestTakesALane).
//
// Go times a parallel test from its release, so its reported duration
// includes the wait for a lane: the test logs that wait.
func parallel(t *testing.T) {
	t.Parallel()
	// First registered, so the last cleanup to run: it sees every other.
	t.Cleanup(watchFailure(t))
	start := time.Now()
	n := lanes.acquire(t.Name())
	t.Logf("lane: waited %s for %d of %d", time.Since(start).Round(time.Second), n, lanes.size)
	t.Cleanup(func() { lanes.release(t.Name()) })
}

// lendLanes gives back every lane but one that the test t (or the test
// it is a subtest of) holds, for the rest of that test. A long test calls
// it once its heavy part is done and what is left of it mostly waits:
// TestClass after the hand-off, when its cores are two thirds idle (then
// while a master's controller manager waited out the bootstrap's 137 s
// lease to sign a CSR: docs/benchmarks.md, twenty-fourth round). The short tests
// then start in the lanes it lent; it never takes them back.
func lendLanes(t *testing.T) {
	t.Helper()
	if n := lanes.lend(t.Name()); n > 0 {
		t.Logf("lane: lent %d of %d to the short tests", n, lanes.size)
	}
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
	if l.held == nil {
		l.held = map[string]int{}
	}
	l.held[name] += n
	return n
}

// release gives back the lanes the test called name still holds.
func (l *laneSet) release(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.free += l.held[name]
	delete(l.held, name)
	l.cond.Broadcast()
}

// lend gives back all but one of the lanes held by the test called name
// or by the test it is a subtest of, and returns how many.
func (l *laneSet) lend(name string) int {
	top, _, _ := strings.Cut(name, "/")
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.held[top] - 1
	if n <= 0 {
		return 0
	}
	l.held[top] = 1
	l.free += n
	l.cond.Broadcast()
	return n
}

// A long test waits for every lane and runs alone; a short test waits
// while a long test is pending or running, then shares the lanes.
func TestLongTestsRunAlone(t *testing.T) {
	t.Parallel()
	l := testLanes(2, 1)
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
	l.release("TestClass") // the long test ended
	if l.free != 2 {
		t.Fatalf("the long test's end left %d lanes free, want 2", l.free)
	}
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

// testLanes is a lane set of size lanes, all free, with pending long
// tests still to come.
func testLanes(size, pending int) *laneSet {
	l := &laneSet{size: size, free: size, pending: pending}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// A long test that lends its lanes keeps one: short tests start in the
// lanes it lent, one more waits, and the long test's end gives back only
// the lane it kept. A short test has nothing to lend.
func TestALongTestLendsAllButOneLane(t *testing.T) {
	t.Parallel()
	l := testLanes(3, 1)
	l.take("TestClass")
	if n := l.lend("TestClass/rehearsal"); n != 2 || l.free != 2 {
		t.Fatalf("a subtest of the long test lent %d lanes (free %d), want 2 (2)", n, l.free)
	}
	if n := l.lend("TestClass"); n != 0 || l.free != 2 {
		t.Fatalf("lending again gave %d lanes (free %d), want 0 (2)", n, l.free)
	}
	for _, name := range []string{"TestShort", "TestOther"} {
		if !l.admits(name) {
			t.Fatalf("%s waited with a lent lane free", name)
		}
		l.take(name)
	}
	if l.admits("TestThird") {
		t.Error("a third short test started: the long test kept no lane")
	}
	if n := l.lend("TestShort"); n != 0 {
		t.Errorf("a short test lent %d lanes, want 0", n)
	}
	l.release("TestClass")
	if l.free != 1 {
		t.Fatalf("the long test's end left %d lanes free, want 1 (the one it kept)", l.free)
	}
	l.release("TestShort")
	l.release("TestOther")
	if l.free != 3 || len(l.held) != 0 {
		t.Errorf("every test ended: %d lanes free, %d holders, want 3, 0", l.free, len(l.held))
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
