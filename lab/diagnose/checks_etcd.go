package diagnose

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The lines bootkube.sh prints while it waits for the bootstrap etcd
// member (its wait_for_etcd_cluster: etcdctl endpoint health every 5 s).
const (
	etcdHealthyLine = "is healthy: successfully committed proposal"
	etcdRetryLine   = "etcdctl failed. Retrying in 5 seconds"
)

// etcdNames are the container names of etcd in the bootstrap's member pod
// and the masters' etcd pods.
var etcdNames = []string{"etcd", "etcd-member"}

// fatalLine is a log line that ends a process: etcd's zap fatal or panic,
// klog's F, Go's panic.
var fatalLine = regexp.MustCompile(`"level":"(fatal|panic)"|^F\d{4} |^panic: `)

// etcdHealthy is etcd.healthy: the bootstrap etcd member answers.
func (d *diag) etcdHealthy() Check {
	c := Check{Title: "the bootstrap etcd member answers etcdctl endpoint health",
		Fix: "read etcd's own log on the bootstrap (crictl logs of the etcd container; bootstrap/containers/etcd-*.log in the bundle): etcd needs its data directory (/var/lib/etcd) writable and a serving certificate signed by the etcd CA its clients trust (tls/etcd-ca-bundle.crt); then verify 2379-2380 between the bootstrap and the masters"}
	bk := d.journal(d.boot, "bootkube")
	healthy := grep(bk, d.year, etcdHealthyLine)
	retries := grep(bk, d.year, etcdRetryLine)
	if ev := d.etcdCrash(d.boot); ev != nil {
		c.State, c.Detail = Failed, "the bootstrap etcd member stops: its last container ended on a fatal line"
		c.Evidence = append([]Evidence{*ev}, d.lastOf(bk, retries)...)
		return c
	}
	if len(retries) > 0 && (len(healthy) == 0 || healthy[len(healthy)-1].N < retries[len(retries)-1].N) && lasting(bk, retries, d.year) {
		c.State = Failed
		c.Detail = fmt.Sprintf("the bootstrap etcd member never answered etcdctl endpoint health: bootkube.sh retried %d times, to the end of its journal", len(retries))
		c.Evidence = append(d.lastOf(bk, retries), d.etcdctlSaid(bk, retries[len(retries)-1])...)
		c.Evidence = append(c.Evidence, d.etcdRefusals(d.boot)...)
		return c
	}
	switch f, answered := d.res.answered(); {
	case len(healthy) > 0:
		c.State, c.Detail, c.Evidence = Passed, "etcdctl endpoint health answered", d.lastOf(bk, healthy)
	case answered:
		c.State, c.Detail = Passed, "the API answered the gather, and it stores everything in etcd"
		c.Evidence = []Evidence{{File: f.Name, Text: "the API's objects, as the gather saved them"}}
	case d.bootkubeDone() != nil:
		c.State, c.Detail, c.Evidence = Passed, "bootkube.service completed, which it does only after etcd answered", []Evidence{*d.bootkubeDone()}
	case bk == nil:
		c.State, c.Detail = Unknown, "the bundle has no journal of bootkube.service, whose etcd health wait says it, and no API objects"
	default:
		c.State, c.Detail = Unknown, "bootkube.service's journal does not reach its wait for etcd (it comes in stage cb-bootstrap)"
	}
	return c
}

// lastOf is the last of ms (lines of f) as evidence, none when ms is empty.
func (d *diag) lastOf(f *File, ms []Line) []Evidence {
	if f == nil || len(ms) == 0 {
		return nil
	}
	return []Evidence{lineEvidence(f, ms[len(ms)-1])}
}

// etcdctlSaid is etcdctl's own error before bootkube's retry line at:
// the line within 10 lines before it that says why.
func (d *diag) etcdctlSaid(f *File, at Line) []Evidence {
	ls := f.Lines(d.year)
	for i := at.N - f.skipped - 2; i >= 0 && i >= at.N-f.skipped-12; i-- {
		t := ls[i].Text
		if strings.Contains(t, etcdRetryLine) {
			break
		}
		if strings.Contains(t, "x509") || strings.Contains(t, "unhealthy") || strings.Contains(t, "error") || strings.Contains(t, "deadline exceeded") {
			return []Evidence{lineEvidence(f, ls[i])}
		}
	}
	return nil
}

// etcdCrash is the fatal line that ended node n's latest etcd container,
// nil when it did not end on one.
func (d *diag) etcdCrash(n *node) *Evidence {
	var latest *File
	for _, f := range d.containers(n, etcdNames...) {
		if latest == nil || f.End(d.year).After(latest.End(d.year)) {
			latest = f
		}
	}
	ls := latest.Lines(d.year)
	for i := len(ls) - 1; i >= 0 && i >= len(ls)-5; i-- {
		if fatalLine.MatchString(ls[i].Text) {
			e := lineEvidence(latest, ls[i])
			return &e
		}
	}
	return nil
}

// etcdRefusals are etcd's lasting refusals of its clients' or peers'
// certificates on node n: what a serving certificate from another CA, or a
// client that trusts another, looks like from etcd's side.
func (d *diag) etcdRefusals(n *node) []Evidence {
	var out []Evidence
	for _, f := range d.containers(n, etcdNames...) {
		if ms := grep(f, d.year, "bad certificate", "unknown certificate authority", "certificate signed by unknown authority"); len(ms) > 0 && lasting(f, ms, d.year) {
			out = append(out, lineEvidence(f, ms[len(ms)-1]))
		}
	}
	return out
}

// etcdMembers is etcd.members: every master is a voting etcd member, as
// the etcd operator's etcd-endpoints ConfigMap lists them (its data maps
// each voting member's ID to its IP; a learner is not in it).
func (d *diag) etcdMembers() Check {
	c := Check{Title: "every master is a voting etcd member",
		Fix: "a master's etcd never became a voting member: the etcd operator adds it as a learner and promotes it once it has caught up, over 2380 (peer) between that master and the bootstrap; read the master's etcd log (control-plane/<ip>/containers/etcd-*.log) and open 2379-2380 both ways"}
	ep := d.res.endpoints
	switch {
	case !d.res.cmRead:
		c.State, c.Detail = Unknown, "the bundle has no ConfigMaps (resources/configmaps.json): the API did not answer the gather"
		return c
	case ep == nil:
		c.State, c.Detail = Unknown, "there is no ConfigMap openshift-etcd/etcd-endpoints yet: the etcd operator has not run"
		return c
	}
	voting := map[string]bool{}
	var ips []string
	for _, ip := range ep.members {
		voting[ip] = true
		ips = append(ips, ip)
	}
	sort.Strings(ips)
	listed := fmt.Sprintf("openshift-etcd/etcd-endpoints lists %d voting member(s): %s", len(ips), strings.Join(ips, ", "))
	if ep.bootstrapIP != "" {
		listed += " (and the bootstrap member " + ep.bootstrapIP + ")"
	}
	c.Evidence = []Evidence{{File: d.res.cmFile.Name, Line: ep.line, Text: listed}}
	expected := d.expectedMasters()
	if len(expected) == 0 {
		c.State, c.Detail = Unknown, "the bundle does not say which masters to expect (no control-plane/ directory, no bootlab/lab.json)"
		return c
	}
	var missing []string
	for _, m := range expected {
		if m.Address == "" || !voting[m.Address] {
			missing = append(missing, m.label())
		}
	}
	if len(missing) == 0 {
		c.State, c.Detail = Passed, fmt.Sprintf("all %d masters are voting members", len(expected))
		return c
	}
	stuck := d.lastingAnywhere("can only promote a learner member which is in sync with leader")
	if upFor, up := d.apiUpFor(); up && upFor < joinGrace && len(stuck) == 0 && d.bootkubeDone() == nil {
		c.State = Unknown
		c.Detail = fmt.Sprintf("%s not a voting etcd member yet, and the bootstrap's API had been up for only %s when the bundle was taken: gather again later", joinIs(missing), upFor.Round(time.Minute))
		return c
	}
	c.State = Failed
	c.Detail = fmt.Sprintf("%s not a voting etcd member (never added, or a learner never promoted)", joinIs(missing))
	c.Evidence = append(c.Evidence, stuck...)
	return c
}

// joinIs is "a is" or "a, b are".
func joinIs(items []string) string {
	if len(items) == 1 {
		return items[0] + " is"
	}
	return strings.Join(items, ", ") + " are"
}

// expectedMasters are the masters the bootstrap waits for: bootlab's lab
// file's, else the bundle's control-plane/ directories, else the API's
// master Nodes.
func (d *diag) expectedMasters() []*node {
	if len(d.masters) > 0 {
		return d.masters
	}
	var out []*node
	for _, n := range d.res.masterNodes() {
		out = append(out, &node{Name: n.Metadata.Name, Role: "master", Address: n.internalIP()})
	}
	return out
}
