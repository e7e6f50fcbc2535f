package diagnose

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// State is how a check ended: passed, failed, or unknown (the bundle does
// not show it: "could not see").
type State string

const (
	Passed  State = "passed"
	Failed  State = "failed"
	Unknown State = "unknown"
)

// Mark is the state as one character: ✓ passed, ✗ failed, ? unknown.
func (s State) Mark() string {
	switch s {
	case Passed:
		return "✓"
	case Failed:
		return "✗"
	}
	return "?"
}

// Evidence is what a check saw: a line of a log (File and Line say where),
// or, for a file that is not a log (an API object, a certificate), what
// bootlab read from it in its own words.
type Evidence struct {
	// File is the file's path as the bundle holds it.
	File string `json:"file,omitempty"`
	// Line is the line's number in File (from 1), 0 for the whole file.
	Line int `json:"line,omitempty"`
	// Text is the line (secrets hidden, see Shown), or bootlab's summary.
	Text string `json:"text"`
}

// Where is "FILE:LINE", "FILE" or "".
func (e Evidence) Where() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return e.File
}

// Check is one point of the tree, as the bundle shows it.
type Check struct {
	// ID is the check's stable name (etcd.healthy, service.release-image).
	ID string `json:"id"`
	// Step is the step of the tree it belongs to (node, etcd, api,
	// masters, bootkube).
	Step string `json:"step"`
	// Title says what the check asks, in a few words.
	Title string `json:"title"`
	State State  `json:"state"`
	// Detail is what was found: the reason of a failure, what a pass rests
	// on, or what the bundle lacks for an unknown.
	Detail   string     `json:"detail"`
	Evidence []Evidence `json:"evidence,omitempty"`
	// Fix says what to do when the check failed, or where to look when it
	// could not see.
	Fix string `json:"fix,omitempty"`
}

// Unseen is something the diagnosis could not see: a check it could not
// decide, or a file of the bundle it did not read.
type Unseen struct {
	Check string `json:"check,omitempty"`
	File  string `json:"file,omitempty"`
	Why   string `json:"why"`
}

// NodeInfo is a node the bundle holds logs of (or should).
type NodeInfo struct {
	Name    string `json:"name"`
	Role    string `json:"role"`
	Address string `json:"address,omitempty"`
	// Gathered is false for a node the bundle has no log of.
	Gathered bool `json:"gathered"`
}

// Report is a diagnosis: every check in the tree's order, the first that
// failed, and what could not be seen. Its JSON is `lab diagnose -o json`'s
// (docs/json.md, kind Diagnosis).
type Report struct {
	// Bundle is the bundle's path, or on a live lab the lab's name.
	Bundle string `json:"bundle"`
	// Live is true when a running lab was diagnosed (lab diagnose
	// without --bundle): what bootlab's gather collects, read into
	// memory, and the connections and DNS tried now (bootlab/live.json).
	Live bool `json:"live,omitempty"`
	// GatherID is the bundle's log-bundle-<id>, when it has one.
	GatherID string `json:"gatherId,omitempty"`
	// Layout is "installer" (openshift-install gather bootstrap's), or
	// "bootlab" when the bundle holds bootlab's own files too.
	Layout string `json:"layout"`
	// At is the time the checks compared against (certificates, CSR ages):
	// when the bundle was gathered, as far as it tells.
	At    time.Time  `json:"at"`
	Nodes []NodeInfo `json:"nodes"`
	// OK is true when no check failed (as in every document with checks);
	// Healthy, only when every check passed too.
	OK      bool `json:"ok"`
	Healthy bool `json:"healthy"`
	// FirstFailure is the ID of the first check that failed, in the
	// tree's order ("" when none did).
	FirstFailure string `json:"firstFailure,omitempty"`
	// Reached is the last stage bootkube.service's record ends with
	// success ("" when the bundle has no record); Complete is true once
	// bootkube.service completed. A bootstrap not complete has checks
	// that wait for later stages: it is not healthy, and not failed.
	Reached     string   `json:"reached,omitempty"`
	Complete    bool     `json:"complete"`
	Checks      []Check  `json:"checks"`
	CouldNotSee []Unseen `json:"couldNotSee"`
}

// First is the first check that failed, nil when none did.
func (r *Report) First() *Check {
	for i := range r.Checks {
		if r.Checks[i].State == Failed {
			return &r.Checks[i]
		}
	}
	return nil
}

// Check is the check with id, nil when the report has none.
func (r *Report) Check(id string) *Check {
	for i := range r.Checks {
		if r.Checks[i].ID == id {
			return &r.Checks[i]
		}
	}
	return nil
}

// Summary is the verdict in one line: where the bootstrap failed, or
// healthy, or that nothing failed but some checks could not see.
func (r *Report) Summary() string {
	if c := r.First(); c != nil {
		return fmt.Sprintf("failed at %s (%s): %s", c.ID, stepQuestion(c.Step), c.Detail)
	}
	unknown := 0
	for _, c := range r.Checks {
		if c.State == Unknown {
			unknown++
		}
	}
	if unknown == 0 {
		return fmt.Sprintf("healthy: all %d checks passed", len(r.Checks))
	}
	if r.Reached != "" && !r.Complete {
		return fmt.Sprintf("no check failed: the bootstrap has reached stage %s and bootkube.service has not completed; %d of %d checks wait for later stages or could not see (listed under \"could not see\"): not yet healthy", r.Reached, unknown, len(r.Checks))
	}
	return fmt.Sprintf("no check failed, but %d of %d could not see (listed under \"could not see\"): not known to be healthy", unknown, len(r.Checks))
}

// WriteText prints the report for people: the verdict, the first failure
// with its evidence and fix, every check by step, and what could not be
// seen.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	switch {
	case r.Live:
		fmt.Fprintf(&b, "lab     %s (live, as of %s: evidence names files as bootlab lab gather's bundle holds them)", r.Bundle, r.At.UTC().Format("2006-01-02 15:04:05 UTC"))
	case !r.At.IsZero():
		fmt.Fprintf(&b, "bundle  %s (%s layout, as of %s)", r.Bundle, r.Layout, r.At.UTC().Format("2006-01-02 15:04:05 UTC"))
	default:
		fmt.Fprintf(&b, "bundle  %s", r.Bundle)
	}
	b.WriteString("\n")
	var nodes []string
	for _, n := range r.Nodes {
		s := n.Name
		if n.Address != "" && n.Address != n.Name {
			s += " " + n.Address
		}
		if !n.Gathered {
			s += " (no logs)"
		}
		nodes = append(nodes, s)
	}
	fmt.Fprintf(&b, "nodes   %s\n\n", strings.Join(nodes, ", "))
	if c := r.First(); c != nil {
		fmt.Fprintf(&b, "✗ FAILED AT %s (%s)\n  %s\n", c.ID, stepQuestion(c.Step), c.Detail)
		writeEvidence(&b, c.Evidence)
		if c.Fix != "" {
			fmt.Fprintf(&b, "  what to do:\n    %s\n", c.Fix)
		}
	} else {
		mark := "✓"
		if !r.Healthy {
			mark = "?"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, r.Summary())
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if err := r.writeTable(w); err != nil {
		return err
	}
	return r.writeUnseen(w)
}

func writeEvidence(b *strings.Builder, ev []Evidence) {
	if len(ev) == 0 {
		return
	}
	b.WriteString("  evidence:\n")
	last := ""
	for _, e := range ev {
		switch where := e.Where(); {
		case where == "":
			fmt.Fprintf(b, "    %s\n", e.Text)
		case where == last:
			fmt.Fprintf(b, "      %s\n", e.Text)
		default:
			fmt.Fprintf(b, "    %s\n      %s\n", where, e.Text)
		}
		last = e.Where()
	}
}

// writeTable prints one row per check, by step.
func (r *Report) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tCHECK\tSTATE\tDETAIL")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Step, c.ID, c.State.Mark(), firstLine(c.Detail))
	}
	return tw.Flush()
}

// writeUnseen prints what could not be seen.
func (r *Report) writeUnseen(w io.Writer) error {
	if len(r.CouldNotSee) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\ncould not see:\n")
	for _, u := range r.CouldNotSee {
		what := u.Check
		if what == "" {
			what = u.File
		}
		fmt.Fprintf(&b, "  %s: %s\n", what, u.Why)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
