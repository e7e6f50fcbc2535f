package diagnose

import (
	"fmt"
	"regexp"
	"strings"
)

// bootkubeCompleteLine is bootkube.sh's last line.
const bootkubeCompleteLine = "bootkube.service complete"

// podStatus is cluster-bootstrap's report of a pod it waits for:
// "Pod Status:<namespace>/<name>\t<state>".
var podStatus = regexp.MustCompile(`Pod Status:\s*(\S+)\s+(DoesNotExist|Pending|RunningNotReady|Ready)`)

// bootkubeDone is the evidence that bootkube.service completed: its last
// line, or its record ending in success; nil when neither is there.
func (d *diag) bootkubeDone() *Evidence {
	bk := d.journal(d.boot, "bootkube")
	if done := grep(bk, d.year, bootkubeCompleteLine); len(done) > 0 {
		e := lineEvidence(bk, done[len(done)-1])
		return &e
	}
	if s := d.services["bootkube"]; s != nil && s.err == nil && s.successful {
		e := s.lastEntry()
		return &e
	}
	return nil
}

// bootkubeComplete is bootkube.complete: bootkube.service ran to its end.
// A bootkube that failed is service.bootkube's failure, named again here;
// one still running when the bundle was taken is unknown, with where it was
// and, from cluster-bootstrap's lines and the ClusterOperators, what it
// waited for.
func (d *diag) bootkubeComplete() Check {
	c := Check{Title: "bootkube.service ran to its end",
		Fix: "read bootkube.service's journal from its end backwards (journalctl -b -u bootkube.service on the bootstrap): cluster-bootstrap's Pod Status lines name the control-plane pods it waits for, and a Degraded ClusterOperator says why"}
	if e := d.bootkubeDone(); e != nil {
		c.State, c.Detail, c.Evidence = Passed, "bootkube.service completed", []Evidence{*e}
		return c
	}
	s := d.services["bootkube"]
	if s != nil && s.err == nil && s.failingNow {
		c.State, c.Detail = Failed, s.failureMessage()
		c.Evidence = append(s.failureEvidence(), d.waitingFor()...)
		c.Fix = serviceFix("bootkube", s.failingStage)
		return c
	}
	bk := d.journal(d.boot, "bootkube")
	if errs := grep(bk, d.year, "Error: error while checking pod status", "timed out waiting for the condition"); lasting(bk, errs, d.year) {
		c.State, c.Detail = Failed, "cluster-bootstrap gave up waiting for the control plane"
		c.Evidence = append(d.lastOf(bk, errs), d.waitingFor()...)
		return c
	}
	ls := bk.Lines(d.year)
	switch {
	case s == nil && bk == nil:
		c.State, c.Detail = Unknown, "the bundle has neither a record nor a journal of bootkube.service"
	case s != nil && s.err == nil && s.running:
		c.State = Unknown
		c.Detail = "bootkube.service was still running when the bundle was taken"
		if s.open != "" {
			c.Detail += fmt.Sprintf(", at stage %q", s.open)
		}
		c.Evidence = append([]Evidence{s.lastEntry()}, d.waitingFor()...)
	case len(ls) > 0:
		c.State, c.Detail = Unknown, "bootkube.service's journal does not end with its last line (bootkube.service complete): it was still running, or stopped"
		c.Evidence = append([]Evidence{lineEvidence(bk, ls[len(ls)-1])}, d.waitingFor()...)
	default:
		c.State, c.Detail = Unknown, "bootkube.service's journal is empty"
	}
	return c
}

// waitingFor is what the bootstrap still waited for: the pods
// cluster-bootstrap last saw not Ready, and the Degraded ClusterOperators.
func (d *diag) waitingFor() []Evidence {
	var out []Evidence
	bk := d.journal(d.boot, "bootkube")
	last := map[string]Line{}
	var order []string
	for _, l := range grepRe(bk, d.year, podStatus) {
		m := podStatus.FindStringSubmatch(l.Text)
		if _, seen := last[m[1]]; !seen {
			order = append(order, m[1])
		}
		last[m[1]] = l
	}
	for _, pod := range order {
		if l := last[pod]; !strings.HasSuffix(strings.TrimSpace(l.Text), "Ready") || strings.HasSuffix(strings.TrimSpace(l.Text), "NotReady") {
			out = append(out, lineEvidence(bk, l))
		}
	}
	for _, co := range d.res.degraded {
		out = append(out, Evidence{File: d.res.coFile.Name, Line: co.line, Text: Shown(fmt.Sprintf("ClusterOperator %s is Degraded: %s", co.name, firstLine(co.message)))})
	}
	return out
}
