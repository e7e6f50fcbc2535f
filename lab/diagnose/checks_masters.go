package diagnose

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// mcsRefused is the MCS's log of a client that refused its certificate:
// Go's TLS server logs the handshake error with the client's address.
var mcsRefused = regexp.MustCompile(`TLS handshake error from \[?([0-9a-fA-F.:]+?)\]?:\d+: .*(bad certificate|unknown certificate authority|certificate signed by unknown authority)`)

// mastersIgnition is masters.ignition: every master booted the config the
// bootstrap's MCS served it. A master the gather logged in to did (the
// SSH key is in that config); one whose directory is empty did not, and
// the MCS's log names a master that refused its certificate.
func (d *diag) mastersIgnition() Check {
	c := Check{Title: "every master booted its config from the MCS",
		Fix: "a master did not get its config: its pointer Ignition (master.ign) names https://api-int.<cluster>.<domain>:22623/config/master and must trust the MCS's CA (root-ca in master.ign); watch the master's console for Ignition's fetch errors, and check 22623 through the load balancer to the bootstrap"}
	if started, known := d.mcsStarted(); known && !started {
		c.State, c.Detail = Unknown, "the bootstrap's MCS never started (bootkube.service did not finish stage mco-bootstrap): the masters had no config to boot yet"
		return c
	}
	refused := d.mcsRefusals()
	var bad, waiting []string
	var waits []Evidence
	for _, m := range d.masters {
		rep, fetched := d.reportedFetch(m)
		switch {
		case refused[m.Address] != nil:
			bad = append(bad, m.Name)
			c.Evidence = append(c.Evidence, *refused[m.Address])
		case rep != nil && strings.Contains(rep.Text, "ignition-fetch pending"):
			waiting = append(waiting, m.Name)
			waits = append(waits, *rep)
		case rep != nil && !fetched:
			bad = append(bad, m.Name)
			c.Evidence = append(c.Evidence, *rep)
		case rep != nil:
		case m.dir != "" && !d.gathered(m):
			bad = append(bad, m.Name)
			c.Evidence = append(c.Evidence, Evidence{File: m.dir, Text: m.Name + "'s directory is empty: the gather could not log in to it (no config from the MCS yet, or off the network)"})
		}
	}
	c.Evidence = append(c.Evidence, d.verifyFailures(func(_, name string) bool { return name == "ignition-fetch" })...)
	switch {
	case len(bad) > 0:
		c.State, c.Detail = Failed, fmt.Sprintf("%s not booted the config the MCS serves", joinHas(bad))
	case len(c.Evidence) > 0:
		c.State, c.Detail = Failed, "lab verify found a master that did not fetch its config"
	case len(d.masters) == 0:
		c.State, c.Detail = Unknown, "the bundle has no master (no control-plane/ directory: gather with each master's address)"
	case len(waiting) > 0:
		c.State, c.Detail, c.Evidence = Unknown, fmt.Sprintf("%s still fetching the config the MCS serves (its agent retries)", joinIs(waiting)), waits
	default:
		e, why := mastersBootedInferred(d)
		switch {
		case e == nil:
			c.State, c.Detail = Unknown, "the bundle has no journal of some master: it was not gathered"
		case strings.HasPrefix(e.File, "bootlab lab console "):
			c.State, c.Detail, c.Evidence = Passed, why, []Evidence{*e}
		default:
			c.State, c.Detail, c.Evidence = Passed, "every master's journals are in the bundle: each booted the config the MCS served it", []Evidence{*e}
		}
	}
	return c
}

// mcsStarted says whether the bootstrap's MCS started: its container log
// is in the bundle, or bootkube's record has stage mco-bootstrap (which
// starts it) ending in success. known is false when the bundle cannot tell.
func (d *diag) mcsStarted() (started, known bool) {
	if len(d.containers(d.boot, "machine-config-server")) > 0 {
		return true, true
	}
	if s := d.services["bootkube"]; s != nil && s.err == nil {
		for _, r := range s.recs {
			if r.Phase == phaseStageEnd && r.Stage == "mco-bootstrap" && r.Result == resultSuccess {
				return true, true
			}
		}
		return false, true
	}
	if d.b.dirs["bootstrap/services"] {
		return false, true // bootkube.service never ran
	}
	return false, false
}

// joinHas is "a has" or "a, b have".
func joinHas(items []string) string {
	if len(items) == 1 {
		return items[0] + " has"
	}
	return strings.Join(items, ", ") + " have"
}

// mcsRefusals are, by client address, the MCS's last lasting log line of
// a client refusing its certificate.
func (d *diag) mcsRefusals() map[string]*Evidence {
	out := map[string]*Evidence{}
	for _, f := range d.containers(d.boot, "machine-config-server") {
		byAddr := map[string][]Line{}
		for _, l := range grepRe(f, d.year, mcsRefused) {
			m := mcsRefused.FindStringSubmatch(l.Text)
			byAddr[m[1]] = append(byAddr[m[1]], l)
		}
		for addr, ms := range byAddr {
			if lasting(f, ms, d.year) {
				e := lineEvidence(f, ms[len(ms)-1])
				out[addr] = &e
			}
		}
	}
	return out
}

// kubeletError is a master kubelet's line that says why it is no Node.
var kubeletError = regexp.MustCompile(`Unable to register node|Error getting node|node "[^"]+" not found|x509:|no such host|connection refused|Unauthorized|forbidden`)

// mastersJoined is masters.joined: every master is a Node of the cluster.
func (d *diag) mastersJoined() Check {
	c := Check{Title: "every master registered as a Node",
		Fix: "a master's kubelet did not register: read its journal (journalctl -b -u kubelet.service on the master; control-plane/<ip>/journals/kubelet.log in the bundle); it needs api-int:6443 through the load balancer and its client CSR approved (csr.pending)"}
	if d.res.nodesFile == nil {
		c.State, c.Detail = Unknown, "the bundle has no Nodes (resources/nodes.json): the API did not answer the gather"
		if e := d.emptyResources(); e != nil {
			c.Evidence = []Evidence{*e}
		}
		return c
	}
	names, ips := map[string]bool{}, map[string]bool{}
	var registered []string
	for _, n := range d.res.masterNodes() {
		names[n.Metadata.Name] = true
		ips[n.internalIP()] = true
		registered = append(registered, n.Metadata.Name)
	}
	sort.Strings(registered)
	c.Evidence = []Evidence{{File: d.res.nodesFile.Name, Text: fmt.Sprintf("master Nodes: %s", orNone(registered))}}
	expected := d.expectedMasters()
	var missing []string
	said := false
	for _, m := range expected {
		if !names[m.Name] && !ips[m.Address] {
			missing = append(missing, m.Name)
			ev := d.kubeletSaid(m)
			said = said || len(ev) > 0
			c.Evidence = append(c.Evidence, ev...)
		}
	}
	upFor, up := d.apiUpFor()
	switch {
	case len(expected) == 0:
		c.State, c.Detail = Failed, "no master is a Node"
	case len(missing) > 0 && !said && up && upFor < joinGrace && d.bootkubeDone() == nil:
		c.State = Unknown
		c.Detail = fmt.Sprintf("%s not a Node yet, and the bootstrap's API had been up for only %s when the bundle was taken: gather again later", joinIs(missing), upFor.Round(time.Minute))
	case len(missing) > 0:
		c.State, c.Detail = Failed, fmt.Sprintf("%s not a Node", joinIs(missing))
	default:
		c.State, c.Detail = Passed, fmt.Sprintf("all %d masters are Nodes", len(expected))
	}
	return c
}

// joinGrace is how long after the bootstrap's API came up a master may
// still be joining (booting its config, registering, becoming an etcd
// member) before its absence is a failure rather than not yet; once
// bootkube completed, it is a failure at once.
const joinGrace = 20 * time.Minute

// apiUpFor is how long the bootstrap's API had been up at the bundle's
// time: from cluster-bootstrap's "API is up" line. ok is false when the
// journal does not say.
func (d *diag) apiUpFor() (time.Duration, bool) {
	bk := d.journal(d.boot, "bootkube")
	up := grep(bk, d.year, apiUpLine)
	if len(up) == 0 || up[0].T.IsZero() {
		return 0, false
	}
	return d.at.Sub(up[0].T), true
}

func orNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}

// kubeletSaid is master m's kubelet's last lasting line that says why it
// is no Node.
func (d *diag) kubeletSaid(m *node) []Evidence {
	j := d.journal(m, "kubelet")
	if ms := grepRe(j, d.year, kubeletError); lasting(j, ms, d.year) {
		return []Evidence{lineEvidence(j, ms[len(ms)-1])}
	}
	return nil
}

// csrPatience is how long a CSR may wait: approve-csr.service approves
// every 20 s during the bootstrap.
const csrPatience = 5 * time.Minute

// csrPending is csr.pending: no CSR waits for approval longer than
// csrPatience at the bundle's time.
func (d *diag) csrPending() Check {
	c := Check{Title: "no CSR waits for approval",
		Fix: "CSRs wait for approval: approve-csr.service approves every Pending CSR every 20 s until bootkube is done, then the cluster's machine approver takes over; check approve-csr.service (systemctl status approve-csr.service and journalctl -b -u approve-csr.service on the bootstrap; `sudo systemctl start approve-csr.service` when it was stopped), or review and approve them: `bootlab lab approve-csrs` on a bootlab lab, oc adm certificate approve elsewhere"}
	if d.res.csrFile == nil {
		c.State, c.Detail = Unknown, "the bundle has no CSRs (resources/csr.json): the API did not answer the gather"
		return c
	}
	// With approve-csr.service stopped, nothing approves a CSR before
	// bootkube is done: every Pending one waits, however young.
	stopped := d.approveCSRStopped()
	var waiting []Evidence
	for _, k := range d.res.csrs {
		if !k.pending() || k.Metadata.CreationTimestamp.IsZero() {
			continue
		}
		age := d.at.Sub(k.Metadata.CreationTimestamp)
		if age > csrPatience || stopped != nil {
			waiting = append(waiting, Evidence{File: d.res.csrFile.Name, Line: nameLine(d.res.csrFile, k.Metadata.Name),
				Text: Shown(fmt.Sprintf("%s from %s (%s) Pending for %s", k.Metadata.Name, k.Spec.Username, k.Spec.SignerName, age.Round(time.Minute)))})
		}
	}
	if len(waiting) == 0 {
		c.State, c.Detail = Passed, fmt.Sprintf("none of %d CSRs has waited longer than %s", len(d.res.csrs), csrPatience)
		return c
	}
	c.State, c.Detail = Failed, fmt.Sprintf("%d CSR(s) Pending for longer than %s", len(waiting), csrPatience)
	if len(waiting) > 5 {
		waiting = waiting[:5]
	}
	c.Evidence = waiting
	if stopped != nil {
		c.Detail = fmt.Sprintf("%d CSR(s) Pending, and approve-csr.service, which approves them until bootkube is done, was stopped on the bootstrap", len(waiting))
		c.Evidence = append(c.Evidence, *stopped)
		return c
	}
	if j := d.journal(d.boot, "approve-csr"); j != nil {
		if ls := j.Lines(d.year); len(ls) > 0 {
			c.Evidence = append(c.Evidence, lineEvidence(j, ls[len(ls)-1]))
		}
	}
	return c
}

// approveCSRStopped is the bootstrap journal's line of approve-csr.service
// stopped by a person (systemd's "Stopped approve-csr.service", which a
// stop job writes and the service's own end after .bootkube.done does
// not), when no later line started it again; nil otherwise.
func (d *diag) approveCSRStopped() *Evidence {
	if d.bootkubeDone() != nil {
		return nil
	}
	j := d.journal(d.boot, "approve-csr")
	ls := grep(j, d.year, "Stopped approve-csr.service", "Started approve-csr.service")
	if len(ls) == 0 || !strings.Contains(ls[len(ls)-1].Text, "Stopped ") {
		return nil
	}
	e := lineEvidence(j, ls[len(ls)-1])
	return &e
}
