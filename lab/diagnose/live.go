package diagnose

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Live is bootlab/live.json, which only a live collection (lab diagnose
// of a running lab) has: the connections tried from the nodes that must
// make them, the load balancer tried from the host, the lab's DNS asked
// from the host, and the agent reports of the nodes bootlab cannot log in
// to. The engine's live collection writes it with these types.
type Live struct {
	Connections []LiveConn    `json:"connections"`
	Untried     []LiveUntried `json:"untried"`
	DNSServer   string        `json:"dnsServer"`
	DNS         []LiveDNS     `json:"dns"`
	// Reports are the last agent report of each node bootlab could not
	// log in to, from its console log on the host: what it says of
	// itself (its Ignition fetch among its checks).
	Reports []LiveReport `json:"reports"`
}

// LiveConn is one connection tried: from a node (or "host"), to a node
// (or "load balancer") at address:port, the command that tried it and
// what answered: connected, refused, timeout, unreachable, or error (the
// try itself could not run; Detail says why).
type LiveConn struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Address string `json:"address"`
	Port    int    `json:"port"`
	Command string `json:"command"`
	Answer  string `json:"answer"`
	Detail  string `json:"detail,omitempty"`
}

// LiveUntried is a node whose connections could not be tried: bootlab
// cannot run a command there, and why.
type LiveUntried struct {
	From string `json:"from"`
	Why  string `json:"why"`
}

// LiveDNS is one question to the lab's DNS: Kind is api, api-int, apps,
// node or reverse; Want what it must answer.
type LiveDNS struct {
	Kind    string   `json:"kind"`
	Name    string   `json:"name"`
	Want    string   `json:"want"`
	Command string   `json:"command"`
	Answer  []string `json:"answer"`
	Error   string   `json:"error,omitempty"`
}

// LiveReport is a node's last agent report, its checks only.
type LiveReport struct {
	Node   string      `json:"node"`
	Seq    int         `json:"seq"`
	Checks []LiveCheck `json:"checks"`
}

// LiveCheck is one check of an agent report (the agent's wire.Check).
type LiveCheck struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Pending bool   `json:"pending,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// readLive reads bootlab/live.json, when the collection is a live one.
func (d *diag) readLive() {
	f := d.b.File("bootlab/live.json")
	if f == nil {
		return
	}
	var l Live
	if json.Unmarshal(f.Data(), &l) == nil {
		d.live = &l
	}
}

// evidence is a try's evidence: where it ran, the command, the answer.
func (c LiveConn) evidence() Evidence {
	where := "on " + c.From
	if c.From == "host" {
		where = "from the host"
	}
	return Evidence{Text: Shown(fmt.Sprintf("%s: %s -> %s", where, c.Command, c.Detail))}
}

// blocked is true for an answer that says the path does not carry the
// connection: no answer at all, or no route.
func (c LiveConn) blocked() bool { return c.Answer == "timeout" || c.Answer == "unreachable" }

// liveTries are the tries a row of the connection table covers (from the
// bootstrap or the masters, to the bootstrap or the other masters, on its
// ports), and the nodes that must connect.
func (d *diag) liveTries(id string) (tries []LiveConn, from []*node) {
	r := conns()[id]
	froms := r.from(d)
	ports := map[string]bool{}
	for _, p := range r.ports {
		ports[p] = true
	}
	for _, f := range froms {
		to := map[string]bool{}
		for _, t := range r.to(d, f) {
			to[t.Name] = true
		}
		for _, c := range d.live.Connections {
			if c.From == f.Name && to[c.To] && ports[fmt.Sprint(c.Port)] {
				tries = append(tries, c)
			}
		}
	}
	return tries, froms
}

// liveConnCheck judges a row of the connection table on a live lab: what
// its tries answered, where bootlab could try; the logs (logCheck) where
// it could not, said as could not see. A try no answer came back to, or
// that found no route, fails the row; a refusal is an open path to a port
// nothing listens on yet (or a filter that rejects): not known until it
// listens.
func (d *diag) liveConnCheck(id string, logCheck Check) (c Check) {
	tries, froms := d.liveTries(id)
	c = Check{Title: logCheck.Title, Fix: logCheck.Fix}
	var blocked, refused, other []Evidence
	connected := 0
	for _, t := range tries {
		switch {
		case t.blocked():
			blocked = append(blocked, t.evidence())
		case t.Answer == "refused":
			refused = append(refused, t.evidence())
		case t.Answer == "connected":
			connected++
		default:
			other = append(other, t.evidence())
		}
	}
	untried := d.untriedOf(froms)
	defer func() {
		// A check that is unknown is listed as could not see already.
		if len(untried) > 0 && c.State != Unknown {
			d.unseen = append(d.unseen, Unseen{Check: id, Why: "not tried live: " + strings.Join(untried, "; ")})
		}
	}()
	switch {
	case len(blocked) > 0:
		c.State, c.Detail, c.Evidence = Failed, fmt.Sprintf("%d of %d tries got no answer or no route: the path drops these connections (a filter), or the node is down", len(blocked), len(tries)), blocked
	case logCheck.State == Failed:
		c = logCheck
	case len(tries) > 0 && len(refused) == 0 && len(other) == 0 && len(untried) == 0:
		c.State, c.Detail = Passed, fmt.Sprintf("all %d tries connected", len(tries))
		c.Evidence = []Evidence{tries[0].evidence()}
	case len(refused) > 0:
		c.State = Unknown
		c.Detail = fmt.Sprintf("the path is open but %d of %d tries were refused: nothing listens there yet (the stage that starts it has not run), or a filter rejects them", len(refused), len(tries))
		c.Evidence = refused
	case len(other) > 0:
		c.State, c.Detail, c.Evidence = Unknown, "a try could not run", other
	case len(tries) > 0 && logCheck.State == Passed:
		c.State, c.Evidence = Passed, append([]Evidence{tries[0].evidence()}, logCheck.Evidence...)
		c.Detail = fmt.Sprintf("%d tries connected; from the nodes bootlab cannot run a command on, %s", connected, logCheck.Detail)
	case len(tries) > 0:
		c.State = Unknown
		c.Detail = fmt.Sprintf("%d tries connected, but %s", connected, untried[0])
	default:
		c = logCheck
		if c.State == Unknown {
			c.Detail = "not tried (" + strings.Join(untried, "; ") + "), and " + c.Detail
		}
	}
	return c
}

// untriedOf says why the tries of nodes froms could not be made, one
// entry per reason.
func (d *diag) untriedOf(froms []*node) []string {
	byWhy := map[string][]string{}
	var order []string
	for _, f := range froms {
		for _, u := range d.live.Untried {
			if u.From != f.Name {
				continue
			}
			why := d.untriedWhy(u.Why)
			if byWhy[why] == nil {
				order = append(order, why)
			}
			byWhy[why] = append(byWhy[why], f.Name)
		}
	}
	var out []string
	for _, why := range order {
		out = append(out, fmt.Sprintf("bootlab cannot run a command on %s (%s)", strings.Join(byWhy[why], ", "), why))
	}
	return out
}

// untriedWhy is why bootlab could not run a command on a node: a probe or
// rehearsal lab's masters run no SSH server.
func (d *diag) untriedWhy(why string) string {
	if d.lab != nil && d.lab.Profile != "openshift" && strings.Contains(why, "connection refused") {
		return "a probe or rehearsal lab's masters run no SSH server"
	}
	return Shown(why)
}

// liveDNS is the evidence of the questions of the given kinds: those the
// lab's DNS answered wrong (or not at all), those it answered right, and
// how many were asked.
func (d *diag) liveDNS(kinds ...string) (failed, passed []Evidence, asked int) {
	for _, q := range d.live.DNS {
		if !contains(kinds, q.Kind) {
			continue
		}
		asked++
		got := strings.Join(q.Answer, ",")
		switch {
		case q.Error != "":
			failed = append(failed, Evidence{Text: Shown(fmt.Sprintf("from the host: %s -> %s (expected %s)", q.Command, q.Error, q.Want))})
		case !containsFold(q.Answer, q.Want):
			if got == "" {
				got = "no answer"
			}
			failed = append(failed, Evidence{Text: Shown(fmt.Sprintf("from the host: %s -> %s, expected %s", q.Command, got, q.Want))})
		default:
			passed = append(passed, Evidence{Text: Shown(fmt.Sprintf("from the host: %s -> %s", q.Command, got))})
		}
	}
	return failed, passed, asked
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// dnsNames is dns.names, a live lab's only: every node's name resolves to
// its address and its address back to its name, and a name under *.apps to
// the ingress address, asked of the lab's DNS from the host.
func (d *diag) dnsNames() Check {
	c := Check{Title: "node names, their reverse and *.apps resolve",
		Fix: "the lab network's DNS (libvirt's dnsmasq) must answer each node's name with its address, the address with the name, and *.apps with the ingress address: `virsh net-dumpxml <network>` shows its records; `bootlab lab up` puts the spec's records back"}
	failed, passed, asked := d.liveDNS("node", "reverse", "apps")
	switch {
	case len(failed) > 0:
		c.State, c.Detail, c.Evidence = Failed, fmt.Sprintf("%d of %d names do not resolve as the lab's spec says", len(failed), asked), failed
	case asked == 0:
		c.State, c.Detail = Unknown, "no name was asked of the lab's DNS"
	default:
		c.State, c.Detail = Passed, fmt.Sprintf("all %d names resolve as the lab's spec says (asked of %s)", asked, d.live.DNSServer)
		c.Evidence = passed[:1]
	}
	return c
}

// liveAPIDNS is api.dns on a live lab: api and api-int as the lab's DNS
// answers them now.
func (d *diag) liveAPIDNS(c Check) Check {
	failed, passed, _ := d.liveDNS("api", "api-int")
	switch {
	case len(failed) > 0:
		c.State, c.Detail, c.Evidence = Failed, "the lab's DNS does not answer the cluster's API names with the load balancer's address", failed
	case len(passed) > 0:
		c.State, c.Detail, c.Evidence = Passed, fmt.Sprintf("the lab's DNS (%s) answers api and api-int with the load balancer's address", d.live.DNSServer), passed
	}
	return c
}

// liveLB are the host's tries of the load balancer's 6443 and 22623: the
// failures, and the evidence of those that connected.
func (d *diag) liveLB() (failed, passed []Evidence) {
	for _, c := range d.live.Connections {
		if c.From != "host" {
			continue
		}
		if c.Answer == "connected" {
			passed = append(passed, c.evidence())
		} else {
			failed = append(failed, c.evidence())
		}
	}
	if len(passed)+len(failed) > 0 {
		d.unseen = append(d.unseen, Unseen{Check: "api.lb", Why: "whether 22623 is closed to machines outside the lab: bootlab runs no command outside it (the host is on the lab's network)"})
	}
	return failed, passed
}

// reportedFetch is the evidence of master m's own Ignition fetch, as its
// agent last reported it on its console (a live lab's master bootlab
// cannot log in to); ok says it fetched its config.
func (d *diag) reportedFetch(m *node) (e *Evidence, ok bool) {
	if d.live == nil {
		return nil, false
	}
	for _, r := range d.live.Reports {
		if r.Node != m.Name {
			continue
		}
		for _, k := range r.Checks {
			if k.Name != "ignition-fetch" {
				continue
			}
			state := "ok"
			switch {
			case k.Pending:
				state = "pending"
			case !k.OK:
				state = "failed"
			}
			return &Evidence{File: "bootlab lab console " + m.Name, Text: Shown(fmt.Sprintf("the agent's report %d: ignition-fetch %s: %s", r.Seq, state, firstLine(k.Detail)))}, k.OK && !k.Pending
		}
	}
	return nil, false
}

// sortUnseen orders the could-not-see entries of live tries by check.
func sortUnseen(us []Unseen) {
	sort.SliceStable(us, func(i, j int) bool { return us[i].Check < us[j].Check })
}
