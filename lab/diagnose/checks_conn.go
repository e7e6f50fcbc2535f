package diagnose

import (
	"fmt"
	"regexp"
	"strings"
)

// dialError is a Go program's failed connect, as etcd, the kubelet, the
// operators and oc log it: the address, the port and why.
var dialError = regexp.MustCompile(`dial tcp \[?([0-9a-fA-F.:]+?)\]?:(\d+): (?:connect: )?(connection refused|i/o timeout|no route to host|connection timed out|network is unreachable|connection reset by peer)`)

// conn is one row of the guide's connection table: from whom to whom,
// on which ports.
type conn struct {
	title string
	from  func(d *diag) []*node
	to    func(d *diag, from *node) []*node
	ports []string
	// inferred, when not nil, is evidence that the connection worked,
	// from what could not have happened without it.
	inferred func(d *diag) (*Evidence, string)
	fix      string
}

func bootstrapOnly(d *diag) []*node { return []*node{d.boot} }
func mastersOf(d *diag) []*node     { return d.masters }
func toMasters(d *diag, from *node) []*node {
	var out []*node
	for _, m := range d.masters {
		if m != from {
			out = append(out, m)
		}
	}
	return out
}
func toBootstrap(d *diag, _ *node) []*node { return []*node{d.boot} }

// membersInferred: every master a voting etcd member means peer traffic
// (2380) between them and the bootstrap worked both ways.
func membersInferred(d *diag) (*Evidence, string) {
	if c := d.get("etcd.members"); c.State == Passed && len(c.Evidence) > 0 {
		return &c.Evidence[0], "every master became a voting etcd member, which takes 2380 both ways"
	}
	return nil, ""
}

// mastersBootedInferred: a master with journals in the bundle booted the
// config the MCS served it (the gather logs in with the SSH key that
// config carries); so did one whose agent reports its Ignition fetched
// (a live lab's master bootlab cannot log in to).
func mastersBootedInferred(d *diag) (*Evidence, string) {
	if len(d.masters) == 0 {
		return nil, ""
	}
	var first *Evidence
	reported := false
	for _, m := range d.masters {
		js := d.b.Glob(m.dir + "/journals/*.log")
		var e *Evidence
		switch rep, ok := d.reportedFetch(m); {
		case m.dir != "" && len(js) > 0:
			e = &Evidence{File: js[0].Name, Text: "every master's journals are in the bundle"}
		case ok:
			e, reported = rep, true
		default:
			return nil, ""
		}
		if first == nil {
			first = e
		}
	}
	if reported {
		return first, "every master fetched the config the MCS served it (their journals, or their agents' reports)"
	}
	return first, "every master booted the config the MCS served it"
}

// conns are the guide's connections that must work during the bootstrap,
// by check id.
func conns() map[string]conn {
	etcdFix := "open TCP 2379-2380 between the bootstrap and the masters, both ways, and between the masters (firewall, the hypervisor's network filters); then read etcd's log on both ends"
	apiFix := "open TCP 6443 to the masters from the bootstrap and between the masters; check the kube-apiserver's log on the master that does not answer"
	return map[string]conn{
		"conn.bootstrap-masters.etcd": {title: "the bootstrap reaches the masters on 2379-2380", from: bootstrapOnly, to: toMasters,
			ports: []string{"2379", "2380"}, inferred: membersInferred, fix: etcdFix},
		"conn.masters-bootstrap.etcd": {title: "the masters reach the bootstrap on 2379-2380", from: mastersOf, to: toBootstrap,
			ports: []string{"2379", "2380"}, inferred: membersInferred, fix: etcdFix},
		"conn.masters-masters.etcd": {title: "the masters reach each other on 2379-2380", from: mastersOf, to: toMasters,
			ports: []string{"2379", "2380"}, inferred: membersInferred, fix: etcdFix},
		"conn.bootstrap-masters.api": {title: "the bootstrap reaches the masters on 6443", from: bootstrapOnly, to: toMasters,
			ports: []string{"6443"}, fix: apiFix},
		"conn.masters-masters.api": {title: "the masters reach each other on 6443", from: mastersOf, to: toMasters,
			ports: []string{"6443"}, fix: apiFix},
		"conn.masters-bootstrap.mcs": {title: "the masters reach the bootstrap's MCS on 22623", from: mastersOf, to: toBootstrap,
			ports: []string{"22623"}, inferred: mastersBootedInferred,
			fix: "open TCP 22623 from the masters to the bootstrap (and the load balancer's 22623 to it): a master fetches its config from the bootstrap's MCS through api-int:22623"},
	}
}

func (d *diag) connBootstrapMastersEtcd() Check { return d.connCheck("conn.bootstrap-masters.etcd") }
func (d *diag) connMastersBootstrapEtcd() Check { return d.connCheck("conn.masters-bootstrap.etcd") }
func (d *diag) connMastersMastersEtcd() Check   { return d.connCheck("conn.masters-masters.etcd") }
func (d *diag) connBootstrapMastersAPI() Check  { return d.connCheck("conn.bootstrap-masters.api") }
func (d *diag) connMastersMastersAPI() Check    { return d.connCheck("conn.masters-masters.api") }
func (d *diag) connMastersBootstrapMCS() Check  { return d.connCheck("conn.masters-bootstrap.mcs") }

// connCheck judges one row of the connection table from the logs of the
// nodes that must connect: failed when one keeps failing to dial a node it
// must reach, on a port of the row, to the end of a log and for minutes
// (persistent: not a pod's restart); passed when that
// is inferred to have worked, or when their logs show no such lasting
// failure while the other end was up (the bundle has its logs too);
// unknown when the bundle has no such log.
func (d *diag) connCheck(id string) Check {
	if d.live != nil {
		return d.liveConnCheck(id, d.logConnCheck(id))
	}
	return d.logConnCheck(id)
}

// logConnCheck is connCheck from the logs alone.
func (d *diag) logConnCheck(id string) Check {
	r := conns()[id]
	c := Check{Title: r.title, Fix: r.fix}
	read := 0
	for _, from := range r.from(d) {
		targets := map[string]*node{}
		for _, t := range r.to(d, from) {
			if t.Address != "" && d.gathered(t) {
				targets[t.Address] = t
			}
		}
		if len(targets) == 0 {
			continue // nothing up to connect to yet
		}
		for _, f := range d.logs(from) {
			read++
			for key, ms := range d.dialFailures(f, targets, r.ports) {
				if persistent(f, ms, d.year) {
					c.State = Failed
					c.Detail = fmt.Sprintf("%s cannot reach %s: its dials fail to the end of its log (%d times)", from.Name, key, len(ms))
					c.Evidence = append(c.Evidence, lineEvidence(f, ms[len(ms)-1]))
				}
			}
		}
	}
	if c.State == Failed {
		return c
	}
	if r.inferred != nil {
		if e, why := r.inferred(d); e != nil {
			c.State, c.Detail, c.Evidence = Passed, "it worked: "+why, []Evidence{*e}
			return c
		}
	}
	if read == 0 {
		c.State, c.Detail = Unknown, "the bundle has no log of a node that connects while the other end was up (gather with each master: control-plane/<ip>/)"
		return c
	}
	c.State, c.Detail = Passed, fmt.Sprintf("none of %d logs of the connecting nodes shows a dial to these ports failing to the end", read)
	return c
}

// dialFailures are f's failed dials to targets on ports, by "name's
// address:port" (in order within each).
func (d *diag) dialFailures(f *File, targets map[string]*node, ports []string) map[string][]Line {
	out := map[string][]Line{}
	for _, l := range f.Lines(d.year) {
		if !strings.Contains(l.Text, "dial tcp") {
			continue
		}
		for _, m := range dialError.FindAllStringSubmatch(l.Text, -1) {
			t, ok := targets[m[1]]
			if !ok || !contains(ports, m[2]) {
				continue
			}
			key := fmt.Sprintf("%s's %s:%s", t.Name, m[1], m[2])
			out[key] = append(out[key], l)
		}
	}
	return out
}
