package diagnose

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/stages"
)

// serviceCheck is service.<name>: the service's record read as the
// installer's analysis reads it (pkg/gather/service/analyze.go: starts,
// whether the last run succeeded, the failing stage, the last error), for
// every service, plus whether the record ends failing or running.
func (d *diag) serviceCheck(name string) Check {
	c := Check{ID: "service." + name, Title: name + ".service ran without failing", Fix: serviceFix(name, "")}
	s := d.services[name]
	switch {
	case s == nil && !d.b.dirs["bootstrap/services"]:
		return d.serviceFromJournal(c, name)
	case s == nil && d.lab != nil && name == "release-image":
		// A rehearsal bootstrap plays release-image.service as bootkube's
		// stage 02 and keeps no record of it of its own: its journal and
		// bootkube's say what the record would.
		return d.serviceFromJournal(c, name)
	case s == nil:
		c.State, c.Detail = Failed, fmt.Sprintf("The bootstrap machine did not execute the %s.service systemd unit (bootstrap/services/ has no %s.json)", name, name)
		c.Fix = serviceFix(name, "notRun")
	case s.err != nil:
		c.State, c.Detail = Unknown, fmt.Sprintf("%s could not be read: %v", s.file.Name, s.err)
	case s.starts == 0 && s.commands == 0:
		c.State, c.Detail = Failed, fmt.Sprintf("The bootstrap machine did not execute the %s.service systemd unit (its record has no start)", name)
		c.Fix = serviceFix(name, "notRun")
	case s.failingNow:
		c.State, c.Detail = Failed, s.failureMessage()
		if s.starts > 1 {
			c.Detail += fmt.Sprintf(" (started %d times)", s.starts)
		}
		c.Evidence = append(s.failureEvidence(), d.journalError(name)...)
		c.Fix = serviceFix(name, s.failingStage)
	default:
		c.State, c.Detail = Passed, s.passDetail()
		c.Evidence = []Evidence{s.lastEntry()}
	}
	return c
}

// passDetail says how a service that is not failing stands.
func (s *service) passDetail() string {
	var b strings.Builder
	switch {
	case s.successful:
		fmt.Fprintf(&b, "ran %d time(s); the last run ended in success", s.starts)
	case s.starts == 0 && s.endedOK:
		fmt.Fprintf(&b, "its pre- or post-command ran %d time(s); the last ended in success", s.commands)
	case s.running && s.open != "":
		fmt.Fprintf(&b, "running, at stage %q, no failure recorded in this run", s.open)
	default:
		b.WriteString("running, no failure recorded in this run")
	}
	if s.failure != nil {
		fmt.Fprintf(&b, "; an earlier run failed at %q and the service carried on", s.failingStage)
	}
	for _, f := range s.stageFailures {
		fmt.Fprintf(&b, "; stage %q failed and the service carried on", f.Stage)
	}
	return b.String()
}

// serviceFromJournal decides a service without records (an installer
// before 4.8, or a bundle without bootstrap/services) from its journal.
func (d *diag) serviceFromJournal(c Check, name string) Check {
	j := d.journal(d.boot, name)
	c.State, c.Detail = Unknown, "the bundle has no service records (bootstrap/services/) and no journal of "+name+".service"
	if j == nil {
		return c
	}
	switch name {
	case "release-image":
		if fails := grep(j, d.year, "Pull failed"); lasting(j, fails, d.year) {
			c.State, c.Detail = Failed, "The bootstrap machine failed to download the release image"
			c.Evidence = d.journalError(name)
			c.Fix = serviceFix(name, "pull-release-image")
			return c
		}
		if bk := d.journal(d.boot, "bootkube"); bk != nil && len(bk.Lines(d.year)) > 0 {
			c.State, c.Detail = Passed, "no service record, but bootkube.service ran, which needs the release image"
			c.Evidence = []Evidence{lineEvidence(bk, bk.Lines(d.year)[0])}
		}
	case "bootkube":
		if done := grep(j, d.year, "bootkube.service complete"); len(done) > 0 {
			c.State, c.Detail = Passed, "no service record, but its journal ends the run: bootkube.service complete"
			c.Evidence = []Evidence{lineEvidence(j, done[len(done)-1])}
		}
	}
	return c
}

// journalError is the last error line of the bootstrap's journal of unit
// before its last retry line, as evidence: podman's or oc's own message.
func (d *diag) journalError(unit string) []Evidence {
	j := d.journal(d.boot, unit)
	ls := j.Lines(d.year)
	for i := len(ls) - 1; i >= 0 && i >= len(ls)-200; i-- {
		t := strings.ToLower(ls[i].Text)
		if strings.Contains(t, "error") || strings.Contains(t, "failed") || strings.Contains(t, "unable") {
			return []Evidence{lineEvidence(j, ls[i])}
		}
	}
	return nil
}

// lineEvidence is line l of f as evidence.
func lineEvidence(f *File, l Line) Evidence {
	return Evidence{File: f.Name, Line: l.N, Text: Shown(l.Text)}
}

// serviceFix says what to do about a failed service (stage: its failing
// stage; "notRun": it never ran).
func serviceFix(name, stage string) string {
	if stage == "notRun" {
		return fmt.Sprintf("%s.service never started on the bootstrap: read the whole boot's journal (journalctl -b on the bootstrap) for the unit it waits on; it runs after network-online.target, release-image.service, crio and the kubelet", name)
	}
	switch name {
	case "release-image":
		return "the bootstrap cannot pull the release image: check its DNS and route to the registry (bootstrap/network/resolv.conf and ip-route.txt in the bundle), the pull secret in install-config.yaml, and for a mirror its imageContentSources; on the bootstrap: journalctl -b -u release-image.service"
	case "crio-configure":
		return "crio-configure reads the pod image from the release image: on the bootstrap, journalctl -b -u crio-configure.service"
	case "kubelet":
		return "the kubelet's pre-command (kubelet-pause-image) reads the pause image from the release image: on the bootstrap, journalctl -b -u kubelet.service"
	case "progress":
		return "progress.service waits for bootkube, then for the API on two masters, then creates ConfigMap kube-system/bootstrap: on the bootstrap, journalctl -b -u progress.service"
	case "bootkube":
		fix := "read the stage's output: journalctl -b -u bootkube.service on the bootstrap (bootstrap/journals/bootkube.log in the bundle); bootkube.service restarts and skips the stages whose .done marker exists"
		if s, err := stages.Default().Lookup(stage); err == nil && stage != "" {
			fix += fmt.Sprintf("; `bootlab stage explain %s` says what stage %s (%s) does and what breaks it", s.ID(), s.ID(), s.Slug)
		}
		return fix
	}
	return fmt.Sprintf("on the bootstrap: journalctl -b -u %s.service", name)
}

// Clock skew limits: what bootlab's own clock readings (over SSH, within
// a round trip) and the journals' last lines (gathered one node after
// another, minutes apart) can tell apart from a clock that is off.
const (
	skewMeasured = 5 * time.Second
	// skewHost is how far bootlab's reading of a node may be from this
	// host's clock: an emulated (TCG) guest's clock drifts tens of
	// seconds from the host's on its own (25 s ahead, seen on a healthy
	// rehearsal bootstrap after a reboot; lab verify allows a minute,
	// clockAheadSlack, for the same reason), and the lab's certificates
	// are backdated an hour (internal/pki). Skew between the members
	// themselves is etcd's drift warning, judged at skewMeasured.
	skewHost     = time.Minute
	skewJournals = 10 * time.Minute
)

// clockSkew is clock.skew: the nodes' clocks agree. From bootlab's
// clocks.json when the bundle has it, else from the last lines of each
// node's journals, and from etcd's own warning of clock drift.
func (d *diag) clockSkew() Check {
	c := Check{Title: "the nodes' clocks agree",
		Fix: "a node's clock is off: certificates look expired or not yet valid to it and etcd warns of drift; set its time (chronyc makestep with a reachable NTP server, or the hypervisor's clock for the guest) and let its services restart"}
	if drift := d.etcdDrift(); drift != nil {
		c.State, c.Detail, c.Evidence = Failed, "etcd reports clock drift between members", []Evidence{*drift}
		return c
	}
	if len(d.clocks) > 0 {
		return d.measuredSkew(c)
	}
	return d.journalSkew(c)
}

// etcdDrift is etcd's last warning of a clock drift over skewMeasured
// between members ("prober found high clock drift", "clock-drift":"3h0m1s"),
// when it warns so to the end of its log, nil if it does not.
func (d *diag) etcdDrift() *Evidence {
	for _, n := range append([]*node{d.boot}, d.masters...) {
		for _, f := range d.containers(n, etcdNames...) {
			var big []Line
			for _, l := range grep(f, d.year, `"clock-drift":"`) {
				if m := clockDrift.FindStringSubmatch(l.Text); m != nil {
					if drift, err := time.ParseDuration(m[1]); err == nil && abs(drift) > skewMeasured {
						big = append(big, l)
					}
				}
			}
			if len(big) >= 2 && lasting(f, big, d.year) {
				e := lineEvidence(f, big[len(big)-1])
				return &e
			}
		}
	}
	return nil
}

// clockDrift is the drift etcd's prober measured, as it logs it.
var clockDrift = regexp.MustCompile(`"clock-drift":"([0-9a-zµ.]+)"`)

// measuredSkew judges bootlab's readings: each node's clock against the
// host's at the middle of the SSH round trip.
func (d *diag) measuredSkew(c Check) Check {
	f := d.b.File("bootlab/clocks.json")
	worst, name := time.Duration(0), ""
	for _, k := range d.clocks {
		mid := k.HostBefore.Add(k.HostAfter.Sub(k.HostBefore) / 2)
		off := k.NodeTime.Sub(mid)
		slack := k.HostAfter.Sub(k.HostBefore) / 2
		if abs(off)-slack > skewHost {
			c.State = Failed
			c.Detail = fmt.Sprintf("%s's clock is %s %s the host's", k.Node, abs(off).Round(time.Second), aheadBehind(off))
			c.Evidence = append(c.Evidence, Evidence{File: f.Name, Text: fmt.Sprintf("%s: node time %s, host time %s (read over SSH within %s)",
				k.Node, k.NodeTime.UTC().Format(time.RFC3339), mid.UTC().Format(time.RFC3339), k.HostAfter.Sub(k.HostBefore).Round(time.Millisecond))})
		}
		if abs(off) >= abs(worst) {
			worst, name = off, k.Node
		}
	}
	if c.State == "" {
		c.State = Passed
		c.Detail = fmt.Sprintf("every node's clock is within %s of the host's (largest: %s, %s %s it)", skewHost, name, abs(worst).Round(time.Millisecond), aheadBehind(worst))
		c.Evidence = []Evidence{{File: f.Name, Text: fmt.Sprintf("%d nodes read", len(d.clocks))}}
	}
	return c
}

// journalSkew compares the last time of each master's journals with the
// bootstrap's: gathered within minutes of each other, so only a gap of
// more than skewJournals is a clock's. A node behind counts only when it
// was still logging at its end (a kubelet that stopped is not a clock).
func (d *diag) journalSkew(c Check) Check {
	bootEnd, bootLine := d.lastJournalLine(d.boot)
	if bootEnd == nil {
		c.State, c.Detail = Unknown, "the bundle has no timed journal line of the bootstrap to compare the masters' with"
		return c
	}
	compared := 0
	for _, m := range d.masters {
		end, line := d.lastJournalLine(m)
		if end == nil {
			continue
		}
		compared++
		off := line.T.Sub(bootLine.T)
		if off > skewJournals || off < -skewJournals && d.stillLogging(m, line.T) {
			c.State = Failed
			c.Detail = fmt.Sprintf("%s's journal ends %s %s the bootstrap's: its clock is off by about that much", m.Name, abs(off).Round(time.Minute), aheadBehind(off))
			c.Evidence = append(c.Evidence, lineEvidence(end, line), lineEvidence(bootEnd, bootLine))
		}
	}
	switch {
	case c.State != "":
	case compared == 0:
		c.State, c.Detail = Unknown, "the bundle has no timed journal line of any master to compare with the bootstrap's"
	default:
		c.State = Passed
		c.Detail = fmt.Sprintf("the journals of %d master(s) end within %s of the bootstrap's (gathered one after another; bootlab's own gather reads the clocks to the second)", compared, skewJournals)
	}
	return c
}

// lastJournalLine is node n's latest timed journal line, and its file.
func (d *diag) lastJournalLine(n *node) (*File, Line) {
	var (
		best *File
		line Line
	)
	if n.dir == "" {
		return nil, line
	}
	for _, f := range d.b.Glob(n.dir + "/journals/*.log") {
		ls := f.Lines(d.year)
		for i := len(ls) - 1; i >= 0; i-- {
			if !ls[i].T.IsZero() {
				if ls[i].T.After(line.T) {
					best, line = f, ls[i]
				}
				break
			}
		}
	}
	return best, line
}

// stillLogging is true when node n's journals have at least 3 lines in the
// minute before end: it was logging to the last.
func (d *diag) stillLogging(n *node, end time.Time) bool {
	count := 0
	for _, f := range d.b.Glob(n.dir + "/journals/*.log") {
		for _, l := range f.Lines(d.year) {
			if !l.T.IsZero() && !l.T.Before(end.Add(-time.Minute)) {
				count++
			}
		}
	}
	return count >= 3
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func aheadBehind(d time.Duration) string {
	if d < 0 {
		return "behind"
	}
	return "ahead of"
}

// cert is one certificate of the bundle, and its file.
type cert struct {
	file *File
	c    *x509.Certificate
}

// certs are the certificates of the bundle's rendered assets (their PEM
// blocks; the keys are never in a bundle: the gather removes *.key).
func (d *diag) certs() []cert {
	if d.certList != nil {
		return d.certList
	}
	out := []cert{}
	for rel, f := range d.b.files {
		if kindOf(rel) != certFile {
			continue
		}
		rest := f.Data()
		for len(rest) > 0 {
			var blk *pem.Block
			blk, rest = pem.Decode(rest)
			if blk == nil {
				break
			}
			if blk.Type != "CERTIFICATE" {
				continue
			}
			if c, err := x509.ParseCertificate(blk.Bytes); err == nil {
				out = append(out, cert{file: f, c: c})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].file.Name != out[j].file.Name {
			return out[i].file.Name < out[j].file.Name
		}
		return out[i].c.NotAfter.Before(out[j].c.NotAfter)
	})
	d.certList = out
	return out
}

// certName names a certificate without its content: its subject's CN (or
// the whole subject) and its file.
func certName(c cert) string {
	n := c.c.Subject.CommonName
	if n == "" {
		n = c.c.Subject.String()
	}
	return fmt.Sprintf("%q", n)
}

// certsValid is certs.valid: every certificate of the bundle is inside
// its validity window at the bundle's time, and no log says one is not.
func (d *diag) certsValid() Check {
	c := Check{Title: "every certificate is inside its validity window",
		Fix: "a certificate is out of its window: the installer's certificates live 24 h before the first rotation (and the bootstrap's for the install only); run openshift-install create ignition-configs again and rebuild the lab (`bootlab lab up` on a bootlab lab); if it is the clock, fix the clock (clock.skew)"}
	all := d.certs()
	for _, k := range all {
		switch {
		case d.at.After(k.c.NotAfter):
			c.Evidence = append(c.Evidence, Evidence{File: k.file.Name, Text: fmt.Sprintf("%s expired %s before the bundle's time (valid %s to %s)",
				certName(k), d.at.Sub(k.c.NotAfter).Round(time.Minute), k.c.NotBefore.UTC().Format(time.RFC3339), k.c.NotAfter.UTC().Format(time.RFC3339))})
		case d.at.Before(k.c.NotBefore):
			c.Evidence = append(c.Evidence, Evidence{File: k.file.Name, Text: fmt.Sprintf("%s is not valid before %s, %s after the bundle's time",
				certName(k), k.c.NotBefore.UTC().Format(time.RFC3339), k.c.NotBefore.Sub(d.at).Round(time.Minute))})
		}
	}
	logged := d.lastingAnywhere("x509: certificate has expired or is not yet valid")
	switch {
	case len(c.Evidence) > 0:
		c.State = Failed
		c.Detail = fmt.Sprintf("%d of %d certificates in the bundle are out of their window at %s", len(c.Evidence), len(all), d.at.Format(time.RFC3339))
		c.Evidence = append(c.Evidence, logged...)
	case len(logged) > 0:
		c.State, c.Detail, c.Evidence = Failed, "a log says a certificate has expired or is not yet valid, to the end", logged
	case len(all) == 0:
		c.State, c.Detail = Unknown, "the bundle holds no certificate (rendered-assets/ has none) and no log says one is out of its window"
	default:
		c.State = Passed
		c.Detail = fmt.Sprintf("all %d certificates in the bundle are valid at %s", len(all), d.at.Format(time.RFC3339))
	}
	return c
}

// certsChain is certs.chain: every certificate whose issuer's name is a CA
// of the bundle is signed by that CA (one of that name), not by another
// CA that took the name.
func (d *diag) certsChain() Check {
	c := Check{Title: "every certificate is signed by the CA it names",
		Fix: "a certificate names a CA of the bundle but another key signed it: it was made for another install (or a CA was regenerated) and the nodes that trust this bundle's CA refuse it; regenerate the certificates from one installer run (openshift-install create ignition-configs in an empty directory) and rebuild the lab"}
	all := d.certs()
	var cas []cert
	for _, k := range all {
		if k.c.IsCA {
			cas = append(cas, k)
		}
	}
	checked := 0
	for _, k := range all {
		if string(k.c.RawIssuer) == string(k.c.RawSubject) {
			continue
		}
		named, signed := false, false
		for _, ca := range cas {
			if string(ca.c.RawSubject) != string(k.c.RawIssuer) {
				continue
			}
			named = true
			if k.c.CheckSignatureFrom(ca.c) == nil {
				signed = true
				break
			}
		}
		if !named {
			continue
		}
		checked++
		if !signed {
			c.Evidence = append(c.Evidence, Evidence{File: k.file.Name, Text: fmt.Sprintf("%s names issuer %q, but no CA of that name in the bundle signed it", certName(k), k.c.Issuer.CommonName)})
		}
	}
	switch {
	case len(c.Evidence) > 0:
		c.State, c.Detail = Failed, fmt.Sprintf("%d certificate(s) are not signed by the CA they name", len(c.Evidence))
	case checked == 0:
		c.State, c.Detail = Unknown, "the bundle holds no certificate whose CA it holds too (rendered-assets/)"
	default:
		c.State, c.Detail = Passed, fmt.Sprintf("%d certificates are signed by the CA they name", checked)
	}
	return c
}

// lastingAnywhere is, for each log of each node where a line with one of
// subs lasts to the end, its last such line.
func (d *diag) lastingAnywhere(subs ...string) []Evidence {
	var out []Evidence
	for _, n := range append([]*node{d.boot}, d.masters...) {
		for _, f := range d.logs(n) {
			if ms := grep(f, d.year, subs...); len(ms) >= 2 && lasting(f, ms, d.year) {
				out = append(out, lineEvidence(f, ms[len(ms)-1]))
			}
		}
	}
	return out
}
