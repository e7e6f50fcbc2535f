package check

import (
	"fmt"
	"strings"
)

// State is where a check ended: one of five values. Only StateFailed makes
// a run fail. The zero State counts as failed, so a check that forgot to say
// how it went never passes a run.
type State string

const (
	// StatePassed: the check passed.
	StatePassed State = "passed"
	// StateWarning: passed with a caveat (TCG instead of KVM, say); the
	// result's Fix says what would remove it.
	StateWarning State = "warning"
	// StateFailed: the check failed; the result's Fix says what to do.
	StateFailed State = "failed"
	// StateSkipped: the check did not run (a stage this version lacks).
	StateSkipped State = "skipped"
	// StatePending: the subject is not there yet (a stage still to run).
	StatePending State = "pending"
)

// States are the five states in the order people read them.
func States() []State {
	return []State{StatePassed, StateWarning, StateFailed, StateSkipped, StatePending}
}

// PassIf is StatePassed when ok, else StateFailed: the state of a check
// that either holds or does not.
func PassIf(ok bool) State {
	if ok {
		return StatePassed
	}
	return StateFailed
}

// Known is false for the zero State and any string that is none of the five.
func (s State) Known() bool {
	for _, k := range States() {
		if s == k {
			return true
		}
	}
	return false
}

// Passed is true for passed and warning: the check held.
func (s State) Passed() bool { return s == StatePassed || s == StateWarning }

// Failed is true when the state makes its run fail: failed, or unknown.
func (s State) Failed() bool { return !s.Passed() && s != StateSkipped && s != StatePending }

// Mark is the one-character state people see: ✓ passed, ! passed with a
// caveat, ✗ failed, - skipped, … pending.
func (s State) Mark() string {
	switch s {
	case StatePassed:
		return "✓"
	case StateWarning:
		return "!"
	case StateSkipped:
		return "-"
	case StatePending:
		return "…"
	}
	return "✗"
}

// MarshalText writes the state's name; an unknown state is written as
// "failed", which is how it counts.
func (s State) MarshalText() ([]byte, error) {
	if !s.Known() {
		s = StateFailed
	}
	return []byte(s), nil
}

// UnmarshalText accepts the five names only.
func (s *State) UnmarshalText(b []byte) error {
	v := State(b)
	if !v.Known() {
		return fmt.Errorf("check state %q is none of passed, warning, failed, skipped, pending", b)
	}
	*s = v
	return nil
}

// Result is the outcome of one check.
type Result struct {
	// Group is where the check belongs: "host" or a node's name (verify),
	// "07 etcd-bootstrap" (stage validate). Empty when there is one group.
	Group string `json:"group,omitempty"`
	Name  string `json:"name"`
	// State is how the check ended.
	State State `json:"state"`
	// Detail is what was found: the reason of a failure, the value of a pass.
	Detail string `json:"detail"`
	// Fix says what to run or change when the check failed or warned, or
	// what to run next when it is pending.
	Fix string `json:"fix,omitempty"`
	// Host is the machine the check looked at when that is worth saying:
	// "localhost", or a remote hypervisor's user@host:port.
	Host string `json:"host,omitempty"`
	// DurationMS is how long the check took, when measured.
	DurationMS int64 `json:"durationMs,omitempty"`
}

// Failed is true when r makes its run fail.
func (r Result) Failed() bool { return r.State.Failed() }

// Passed is true when r passed, with or without a caveat.
func (r Result) Passed() bool { return r.State.Passed() }

// Mark is r's state as one character (see State.Mark).
func (r Result) Mark() string { return r.State.Mark() }

// Label is "group name", or the name alone when there is no group.
func (r Result) Label() string {
	if r.Group == "" {
		return r.Name
	}
	return r.Group + " " + r.Name
}

// Failed returns the failed results, in order.
func Failed(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.Failed() {
			out = append(out, r)
		}
	}
	return out
}

// OK is true when no result failed (warnings, skips and pendings pass).
func OK(rs []Result) bool {
	for _, r := range rs {
		if r.Failed() {
			return false
		}
	}
	return true
}

// Summary counts results by state.
type Summary struct {
	Total, Passed, Warned, Failed, Skipped, Pending int
}

// Summarize counts rs by state (a warning counts as passed and warned).
func Summarize(rs []Result) Summary {
	s := Summary{Total: len(rs)}
	for _, r := range rs {
		switch {
		case r.State == StateSkipped:
			s.Skipped++
		case r.State == StatePending:
			s.Pending++
		case r.Failed():
			s.Failed++
		default:
			s.Passed++
			if r.State == StateWarning {
				s.Warned++
			}
		}
	}
	return s
}

// String is "2 of 11 failed" or "all 11 passed" (with warnings, skips and
// pendings named when there are any).
func (s Summary) String() string {
	var b strings.Builder
	if s.Failed > 0 {
		fmt.Fprintf(&b, "%d of %d failed", s.Failed, s.Total)
	} else {
		fmt.Fprintf(&b, "%d of %d passed", s.Passed, s.Total)
		if s.Passed == s.Total {
			b.Reset()
			fmt.Fprintf(&b, "all %d passed", s.Total)
		}
	}
	for _, x := range []struct {
		n    int
		what string
	}{{s.Warned, "with a warning"}, {s.Skipped, "skipped"}, {s.Pending, "pending"}} {
		if x.n > 0 {
			fmt.Fprintf(&b, ", %d %s", x.n, x.what)
		}
	}
	return b.String()
}

// Doc is the JSON form of a list of results, as every -o json document
// with checks carries it: "ok" true exactly when no check failed.
type Doc struct {
	OK     bool     `json:"ok"`
	Checks []Result `json:"checks"`
}

// NewDoc is rs as JSON (an empty list is [], never null).
func NewDoc(rs []Result) Doc {
	if rs == nil {
		rs = []Result{}
	}
	return Doc{OK: OK(rs), Checks: rs}
}
