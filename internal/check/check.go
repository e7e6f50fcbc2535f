package check

import (
	"fmt"
	"strings"
)

// Result is the outcome of one check.
//
// A result is in exactly one of five states: passed (OK), passed with a
// caveat (OK and Warning), failed (none of OK, Skipped, Pending), skipped
// (Skipped: not run, e.g. a stage this version lacks) or pending (Pending:
// not there yet and not a failure, e.g. a stage still to run). Only a
// failed result makes a run fail.
type Result struct {
	// Group is where the check belongs: "host" or a node's name (verify),
	// "07 etcd-bootstrap" (stage validate). Empty when there is one group.
	Group string `json:"group,omitempty"`
	Name  string `json:"name"`
	// OK is true when the check passed.
	OK bool `json:"ok"`
	// Warning marks a passed check with a caveat (TCG instead of KVM, say).
	Warning bool `json:"warning,omitempty"`
	// Skipped marks a check that did not run; Pending one whose subject is
	// not there yet. Neither is a failure.
	Skipped bool `json:"skipped,omitempty"`
	Pending bool `json:"pending,omitempty"`
	// Detail is what was found: the reason of a failure, the value of a pass.
	Detail string `json:"detail"`
	// Fix says what to run or change when the check failed or warned.
	Fix string `json:"fix,omitempty"`
	// Host is the machine the check looked at when that is worth saying:
	// "localhost", or a remote hypervisor's user@host:port.
	Host string `json:"host,omitempty"`
	// DurationMS is how long the check took, when measured.
	DurationMS int64 `json:"durationMs,omitempty"`
}

// Failed is true when r makes its run fail.
func (r Result) Failed() bool { return !r.OK && !r.Skipped && !r.Pending }

// Mark is the one-character state people see: ✓ passed, ! passed with a
// caveat, ✗ failed, - skipped, … pending.
func (r Result) Mark() string {
	switch {
	case r.Skipped:
		return "-"
	case r.Pending:
		return "…"
	case !r.OK:
		return "✗"
	case r.Warning:
		return "!"
	}
	return "✓"
}

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
		case r.Skipped:
			s.Skipped++
		case r.Pending:
			s.Pending++
		case !r.OK:
			s.Failed++
		default:
			s.Passed++
			if r.Warning {
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
