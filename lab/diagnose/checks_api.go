package diagnose

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The lines of bootstrap-verify-api-server-urls.sh (installer
// data/data/bootstrap/files/usr/local/bin/), which bootkube.sh sources:
// lookup_url and validate_url.
const (
	resolvedLine   = "Successfully resolved"
	unresolvedLine = "Unable to resolve"
	reachedLine    = "Success while trying to reach"
	unreachedLine  = "Unable to reach"
)

// cluster-bootstrap's lines while it waits for its API.
const (
	apiUpLine      = "API is up"
	apiWaitingLine = "Still waiting for the Kubernetes API"
	cbStartLine    = "Starting cluster-bootstrap"
)

// noSuchHost is a failed lookup of the cluster's API names.
var noSuchHost = regexp.MustCompile(`lookup (api(?:-int)?\.[A-Za-z0-9.-]+)(?: on [^ ]+)?: no such host`)

// apiDNS is api.dns: api and api-int resolve, as bootkube's
// resolve-api-url and resolve-api-int-url stages found, and no node keeps
// failing to look them up.
func (d *diag) apiDNS() Check {
	c := Check{Title: "api and api-int resolve to the load balancer",
		Fix: "add the records: api.<cluster>.<domain> and api-int.<cluster>.<domain> to the load balancer's address, for the nodes' resolver (bootstrap/network/resolv.conf in the bundle names it); on a bootlab lab the lab's dnsmasq serves them (`bootlab lab verify` checks them)"}
	bk := d.journal(d.boot, "bootkube")
	var failed, passed []Evidence
	for _, kind := range []string{"API_URL", "API_INT_URL"} {
		ok := grep(bk, d.year, resolvedLine+" "+kind)
		bad := grep(bk, d.year, unresolvedLine+" "+kind)
		switch {
		case len(bad) > 0 && (len(ok) == 0 || ok[len(ok)-1].N < bad[len(bad)-1].N):
			failed = append(failed, lineEvidence(bk, bad[len(bad)-1]))
		case len(ok) > 0:
			passed = append(passed, lineEvidence(bk, ok[len(ok)-1]))
		}
	}
	for _, n := range append([]*node{d.boot}, d.masters...) {
		for _, f := range d.logs(n) {
			if ms := grepRe(f, d.year, noSuchHost); len(ms) >= 2 && lasting(f, ms, d.year) {
				failed = append(failed, lineEvidence(f, ms[len(ms)-1]))
			}
		}
	}
	failed = append(failed, d.verifyFailures(func(group, name string) bool { return group == "host" && strings.HasPrefix(name, "dns ") })...)
	switch {
	case len(failed) > 0:
		c.State, c.Detail, c.Evidence = Failed, "the cluster's API names do not resolve where the nodes look them up", failed
	case len(passed) == 2:
		c.State, c.Detail, c.Evidence = Passed, "bootkube.sh resolved API_URL and API_INT_URL", passed
	case len(passed) > 0:
		c.State, c.Detail, c.Evidence = Passed, "bootkube.sh resolved the API name it checks (this version checks one)", passed
	default:
		c.State, c.Detail = Unknown, "bootkube.service's journal does not reach its API name checks (resolve-api-url, resolve-api-int-url)"
	}
	if d.live != nil {
		// The lab's DNS as it answers now decides: the journal's lines
		// may be from before a record was changed or fixed.
		return d.liveAPIDNS(c)
	}
	return c
}

// apiReadyz is api.readyz: the bootstrap's kube-apiserver came up and
// answered.
func (d *diag) apiReadyz() Check {
	c := Check{Title: "the bootstrap's kube-apiserver answers",
		Fix: "read the kube-apiserver's log on the bootstrap (crictl logs of kube-apiserver; bootstrap/containers/kube-apiserver-*.log in the bundle): it needs etcd on localhost:2379 and its certificates; cluster-bootstrap waits 20 minutes for it"}
	bk := d.journal(d.boot, "bootkube")
	up := grep(bk, d.year, apiUpLine)
	waiting := grep(bk, d.year, apiWaitingLine)
	f, answered := d.res.answered()
	switch {
	case len(up) > 0:
		c.State, c.Detail, c.Evidence = Passed, "cluster-bootstrap saw its API up", d.lastOf(bk, up)
	case answered:
		c.State, c.Detail = Passed, "the API answered the gather"
		c.Evidence = []Evidence{{File: f.Name, Text: "the API's objects, as the gather saved them"}}
	case len(waiting) > 0 && lasting(bk, waiting, d.year):
		c.State = Failed
		c.Detail = fmt.Sprintf("cluster-bootstrap waited for its API to the end of bootkube's journal (%d times)", len(waiting))
		c.Evidence = append(d.lastOf(bk, waiting), d.apiserverSaid()...)
	case len(grep(bk, d.year, cbStartLine)) > 0 && d.emptyResources() != nil:
		c.State, c.Detail = Failed, "cluster-bootstrap started, but the API did not answer the gather"
		c.Evidence = append([]Evidence{*d.emptyResources()}, d.apiserverSaid()...)
	case bk == nil:
		c.State, c.Detail = Unknown, "the bundle has no journal of bootkube.service and no API objects"
	default:
		c.State, c.Detail = Unknown, "bootkube.service's journal does not reach cluster-bootstrap, which starts the API (stage cb-bootstrap)"
	}
	return c
}

// emptyResources is the evidence that the gather asked the API and got
// nothing: resources/nodes.json there but empty.
func (d *diag) emptyResources() *Evidence {
	if f := d.b.File("resources/nodes.json"); f != nil && len(strings.TrimSpace(f.Text())) == 0 {
		return &Evidence{File: f.Name, Text: "empty: `oc get nodes` through the bootstrap's kubeconfig got no answer"}
	}
	return nil
}

// apiserverSaid is the bootstrap kube-apiserver's last fatal or error line.
func (d *diag) apiserverSaid() []Evidence {
	for _, f := range d.containers(d.boot, "kube-apiserver") {
		ls := f.Lines(d.year)
		for i := len(ls) - 1; i >= 0 && i >= len(ls)-50; i-- {
			if fatalLine.MatchString(ls[i].Text) || strings.HasPrefix(ls[i].Text, "E") && strings.Contains(ls[i].Text, "etcd") {
				return []Evidence{lineEvidence(f, ls[i])}
			}
		}
	}
	return nil
}

// apiLB is api.lb: the load balancer sends 6443 and 22623 to a server that
// answers, the bootstrap's among them while it serves: from bootlab's
// haproxy state, bootkube's check-api-url stages, and what could not have
// happened without it.
func (d *diag) apiLB() Check {
	c := Check{Title: "the load balancer passes 6443 and 22623 on",
		Fix: "the load balancer's 6443 and 22623 frontends need the bootstrap and every master as backends (the bootstrap until bootstrap-complete); on a bootlab lab `bootlab lab status` shows haproxy's backends and `bootlab lab up` rewrites its config"}
	var notYet []Evidence
	if d.lb != nil {
		ev, waiting := d.lbProblems()
		if len(ev) > 0 {
			c.State, c.Detail, c.Evidence = Failed, ev[0].Text, ev
			return c
		}
		notYet = waiting
	}
	var tried []Evidence
	if d.live != nil {
		failed, passed := d.liveLB()
		if len(failed) > 0 {
			c.State, c.Detail, c.Evidence = Failed, "the load balancer does not accept connections on 6443 or 22623", failed
			return c
		}
		tried = passed
	}
	bk := d.journal(d.boot, "bootkube")
	var failed []Evidence
	for _, kind := range []string{"API_URL", "API_INT_URL"} {
		ok := grep(bk, d.year, reachedLine+" "+kind)
		bad := grep(bk, d.year, unreachedLine+" "+kind)
		if len(bad) > 0 && (len(ok) == 0 || ok[len(ok)-1].N < bad[len(bad)-1].N) {
			failed = append(failed, lineEvidence(bk, bad[len(bad)-1]))
		}
	}
	failed = append(failed, d.verifyFailures(func(group, name string) bool { return group == "host" && strings.HasPrefix(name, "lb ") })...)
	if len(failed) > 0 {
		c.State, c.Detail, c.Evidence = Failed, "the API does not answer through the load balancer", failed
		return c
	}
	switch reached := grep(bk, d.year, reachedLine); {
	case len(notYet) > 0:
		c.State, c.Detail, c.Evidence = Unknown, notYet[0].Text, append(notYet, tried...)
	case d.lb != nil:
		c.State, c.Detail = Passed, "haproxy runs, and every frontend has its servers, one of them up"
		c.Evidence = append([]Evidence{{File: d.b.File("bootlab/loadbalancer.json").Name, Text: fmt.Sprintf("%d backends", len(d.lb.Backends))}}, tried...)
	case len(reached) > 0:
		c.State, c.Detail, c.Evidence = Passed, "bootkube.sh reached the API through the load balancer", d.lastOf(bk, reached)
	case len(d.res.masterNodes()) > 0 && len(d.masters) > 0 && mastersBootedOK(d):
		c.State, c.Detail = Passed, "every master fetched its config through api-int:22623 and registered through api-int:6443"
		c.Evidence = []Evidence{{File: d.res.nodesFile.Name, Text: "master Nodes registered"}}
	default:
		c.State, c.Detail = Unknown, "the bundle has no load balancer state (the installer's never has) and nothing in it shows api or api-int answering through it: look at the load balancer's own stats for 6443 and 22623"
	}
	return c
}

func mastersBootedOK(d *diag) bool {
	e, _ := mastersBootedInferred(d)
	return e != nil
}

// lbProblems are what is wrong with bootlab's haproxy state: not running,
// a frontend with no server up, the bootstrap or a master missing from the
// API or MCS frontend while the bootstrap still serves. A frontend whose
// servers cannot be up yet (the API before cluster-bootstrap starts it,
// the MCS before mco-bootstrap) is waiting, not a problem.
func (d *diag) lbProblems() (out, waiting []Evidence) {
	name := d.b.File("bootlab/loadbalancer.json").Name
	if !d.lb.Running {
		return []Evidence{{File: name, Text: "haproxy is not running"}}, nil
	}
	servers := map[string]map[string]bool{}
	up := map[string][]string{}
	for _, b := range d.lb.Backends {
		if servers[b.Frontend] == nil {
			servers[b.Frontend] = map[string]bool{}
		}
		servers[b.Frontend][b.Server] = true
		if strings.HasPrefix(b.Status, "UP") {
			up[b.Frontend] = append(up[b.Frontend], b.Server)
		}
	}
	complete := d.bootkubeDone() != nil
	for _, fe := range []struct{ name, port string }{{"api", "6443"}, {"machine-config", "22623"}} {
		// haproxy's servers are named after the nodes: which nodes it
		// must have is known from bootlab's lab file only.
		want := []*node{}
		if d.lab != nil && !complete {
			want = append(want, d.boot)
		}
		if d.lab != nil {
			want = append(want, d.masters...)
		}
		for _, n := range want {
			if n.Name != "" && !servers[fe.name][n.Name] {
				out = append(out, Evidence{File: name, Text: fmt.Sprintf("the %s frontend (%s) has no backend for %s", fe.name, fe.port, n.Name)})
			}
		}
		if len(servers[fe.name]) > 0 && len(up[fe.name]) == 0 {
			if why := d.notServingYet(fe.name); why != "" {
				waiting = append(waiting, Evidence{File: name, Text: fmt.Sprintf("no backend of the %s frontend (%s) is up yet: %s (%s)", fe.name, fe.port, why, d.lbStatuses(fe.name))})
				continue
			}
			out = append(out, Evidence{File: name, Text: fmt.Sprintf("no backend of the %s frontend (%s) is up: %s", fe.name, fe.port, d.lbStatuses(fe.name))})
		}
	}
	return out, waiting
}

// notServingYet says why nothing can serve a frontend yet, from how far
// bootkube.service got: the API comes with cluster-bootstrap (stage
// cb-bootstrap), the bootstrap's MCS with stage mco-bootstrap. "" when it
// should serve, or the bundle cannot tell.
func (d *diag) notServingYet(frontend string) string {
	if d.bootkubeDone() != nil {
		return ""
	}
	switch frontend {
	case "api":
		bk := d.journal(d.boot, "bootkube")
		if bk != nil && len(grep(bk, d.year, cbStartLine)) == 0 && d.res.nodesFile == nil {
			return "the API starts with cluster-bootstrap (stage cb-bootstrap), which bootkube.service has not reached"
		}
	case "machine-config":
		if started, known := d.mcsStarted(); known && !started {
			return "the bootstrap's MCS starts with stage mco-bootstrap, which bootkube.service has not finished"
		}
	}
	return ""
}

// lbStatuses lists a frontend's servers with haproxy's status and check.
func (d *diag) lbStatuses(frontend string) string {
	var out []string
	for _, b := range d.lb.Backends {
		if b.Frontend == frontend {
			s := b.Server + " " + b.Status
			if b.LastCheck != "" {
				s += " (" + b.LastCheck + ")"
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ")
}

// verifyFailures are the failed checks of bootlab's verify record
// (bootlab/verify.json, `lab verify -o json`) that match.
func (d *diag) verifyFailures(match func(group, name string) bool) []Evidence {
	f := d.b.File("bootlab/verify.json")
	if f == nil {
		return nil
	}
	var v struct {
		Checks []struct {
			Group  string `json:"group"`
			Name   string `json:"name"`
			State  string `json:"state"`
			Detail string `json:"detail"`
		} `json:"checks"`
	}
	if json.Unmarshal(f.Data(), &v) != nil {
		return nil
	}
	var out []Evidence
	for _, k := range v.Checks {
		if k.State == "failed" && match(k.Group, k.Name) {
			out = append(out, Evidence{File: f.Name, Line: nameLine(f, k.Name), Text: Shown(fmt.Sprintf("lab verify: %s %s failed: %s", k.Group, k.Name, firstLine(k.Detail)))})
		}
	}
	return out
}
