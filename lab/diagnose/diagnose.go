package diagnose

import (
	"encoding/json"
	"net/netip"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Options tune a diagnosis.
type Options struct {
	// Now stands for the time the bundle was gathered when the bundle does
	// not tell (zero: time.Now()).
	Now time.Time
}

// diag is one diagnosis in progress.
type diag struct {
	b    *Bundle
	year int
	// at is the time the bundle stands for: when it was gathered.
	at      time.Time
	boot    *node
	masters []*node
	lab     *labFile
	lb      *lbFile
	clocks  []clockFile
	// missing is what bootlab/missing.json says the gather did not hold.
	missing  []Unseen
	services map[string]*service
	res      resources
	certList []cert
	checks   []Check
	// done caches each check's result (get).
	done map[string]Check
	// live is bootlab/live.json: a live lab's tries (nil for a bundle).
	live *Live
	// unseen are what the live tries could not see, by check.
	unseen []Unseen
}

// node is a node of the bundle.
type node struct {
	Name, Role, Address string
	// dir is the node's directory in the bundle ("bootstrap",
	// "control-plane/<address>"), "" for a node the bundle has none of.
	dir string
}

// labFile is bootlab/lab.json: the lab a bootlab bundle was gathered from.
type labFile struct {
	Name     string    `json:"name"`
	Profile  string    `json:"profile"`
	Gathered time.Time `json:"gathered"`
	// APIAddress is the load balancer's address (api and api-int).
	APIAddress string `json:"apiAddress"`
	Nodes      []struct {
		Name string `json:"name"`
		Role string `json:"role"`
		IP   string `json:"ip"`
	} `json:"nodes"`
}

// lbFile is bootlab/loadbalancer.json: haproxy's state as `lab status -o
// json` prints it (loadBalancer).
type lbFile struct {
	Running  bool `json:"running"`
	Backends []struct {
		Frontend  string `json:"frontend"`
		Server    string `json:"server"`
		Address   string `json:"address"`
		Status    string `json:"status"`
		LastCheck string `json:"lastCheck"`
	} `json:"backends"`
}

// clockFile is one entry of bootlab/clocks.json: a node's clock read over
// SSH, between two readings of the host's.
type clockFile struct {
	Node       string    `json:"node"`
	HostBefore time.Time `json:"hostBefore"`
	NodeTime   time.Time `json:"nodeTime"`
	HostAfter  time.Time `json:"hostAfter"`
}

// Diagnose walks the tree over b and reports every check, in order.
func Diagnose(b *Bundle, o Options) *Report {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	d := &diag{b: b, done: map[string]Check{}}
	d.readBootlab()
	d.at, d.year = d.when(o.Now)
	d.res = readResources(b)
	d.findNodes()
	d.readServices()
	d.run()
	return d.report()
}

// readBootlab reads bootlab's own files, when the bundle has them.
func (d *diag) readBootlab() {
	if f := d.b.File("bootlab/lab.json"); f != nil {
		var l labFile
		if json.Unmarshal(f.Data(), &l) == nil {
			d.lab = &l
		}
	}
	if f := d.b.File("bootlab/loadbalancer.json"); f != nil {
		var l lbFile
		if json.Unmarshal(f.Data(), &l) == nil {
			d.lb = &l
		}
	}
	// What bootlab's gather could not see or left out (a node without
	// journalctl, a file that held a credential), as it wrote it.
	if f := d.b.File("bootlab/missing.json"); f != nil {
		var m struct {
			Missing []Unseen `json:"missing"`
		}
		if json.Unmarshal(f.Data(), &m) == nil {
			for _, u := range m.Missing {
				if u.File != "" {
					d.missing = append(d.missing, Unseen{File: u.File, Why: u.Why})
				}
			}
		}
	}
	d.readLive()
	if f := d.b.File("bootlab/clocks.json"); f != nil {
		var c struct {
			Nodes []clockFile `json:"nodes"`
		}
		if json.Unmarshal(f.Data(), &c) == nil {
			d.clocks = c.Nodes
		}
	}
}

// gatherID is the installer's gather id: YYYYMMDDhhmmss, UTC.
var gatherID = regexp.MustCompile(`^\d{14}$`)

// when is the time the bundle stands for: its gather id's, bootlab's
// record of it, else the last time the bootstrap's journals name, else now.
func (d *diag) when(now time.Time) (time.Time, int) {
	if gatherID.MatchString(d.b.ID) {
		if t, err := time.Parse("20060102150405", d.b.ID); err == nil {
			return t.UTC(), t.Year()
		}
	}
	if d.lab != nil && !d.lab.Gathered.IsZero() {
		return d.lab.Gathered.UTC(), d.lab.Gathered.Year()
	}
	var last time.Time
	for _, f := range d.b.Glob("bootstrap/journals/*.log") {
		if e := f.End(now.Year()); e.After(last) {
			last = e
		}
	}
	if !last.IsZero() {
		return last, now.Year()
	}
	return now.UTC(), now.Year()
}

// findNodes names the bootstrap and the masters: from bootlab's lab file,
// the bundle's directories (control-plane/<address>), the nodes' own
// hostname and address files, and the API's Node objects.
func (d *diag) findNodes() {
	d.boot = &node{Name: "bootstrap", Role: "bootstrap"}
	if d.b.dirs["bootstrap"] {
		d.boot.dir = "bootstrap"
		d.boot.Address = firstAddress(d.b.File("bootstrap/network/ip-addr.txt"))
	}
	byKey := map[string]*node{}
	for _, dir := range d.b.Dirs("control-plane") {
		n := &node{Name: dir, Role: "master", dir: "control-plane/" + dir}
		if _, err := netip.ParseAddr(dir); err == nil {
			n.Address = dir
		} else if a := firstAddress(d.b.File(n.dir + "/network/ip-addr.txt")); a != "" {
			n.Address = a
		}
		if h := d.b.File(n.dir + "/network/hostname.txt"); h != nil {
			if name := strings.TrimSpace(h.Text()); validName(name) {
				n.Name = strings.Split(name, ".")[0]
			}
		}
		d.masters = append(d.masters, n)
		byKey[n.Address], byKey[dir] = n, n
	}
	for _, rn := range d.res.nodes {
		if n := byKey[rn.internalIP()]; n != nil && n.Name == n.Address {
			n.Name = rn.Metadata.Name
		}
	}
	if d.lab != nil {
		for _, ln := range d.lab.Nodes {
			switch ln.Role {
			case "bootstrap":
				d.boot.Name = ln.Name
				if d.boot.Address == "" {
					d.boot.Address = ln.IP
				}
			case "master":
				n := byKey[ln.IP]
				if n == nil {
					n = byKey[ln.Name]
				}
				if n == nil {
					n = &node{Role: "master", Address: ln.IP}
					d.masters = append(d.masters, n)
				}
				n.Name = ln.Name
				if n.Address == "" {
					n.Address = ln.IP
				}
			}
		}
	}
	sort.SliceStable(d.masters, func(i, j int) bool { return addrLess(d.masters[i], d.masters[j]) })
}

// addrLess orders nodes by address (numerically), then name.
func addrLess(a, b *node) bool {
	x, errX := netip.ParseAddr(a.Address)
	y, errY := netip.ParseAddr(b.Address)
	if errX == nil && errY == nil && x != y {
		return x.Less(y)
	}
	return a.Name < b.Name
}

// label is "name (address)", or the one of them a node has.
func (n *node) label() string {
	if n.Address == "" || n.Address == n.Name {
		return n.Name
	}
	if n.Name == "" {
		return n.Address
	}
	return n.Name + " (" + n.Address + ")"
}

// validName is a hostname's shape: letters, digits, '-' and '.'.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$`).MatchString

// inetLine is an `ip addr` line of a global IPv4 or IPv6 address.
var inetLine = regexp.MustCompile(`^\s*inet6? ([0-9a-fA-F.:]+)/\d+ .*scope global`)

// firstAddress is the first global address of an `ip addr` output.
func firstAddress(f *File) string {
	if f == nil {
		return ""
	}
	for _, l := range strings.Split(f.Text(), "\n") {
		if m := inetLine.FindStringSubmatch(l); m != nil {
			if _, err := netip.ParseAddr(m[1]); err == nil {
				return m[1]
			}
		}
	}
	return ""
}

// gathered is true when the bundle holds any file of node n, read or not.
func (d *diag) gathered(n *node) bool {
	if n.dir == "" {
		return false
	}
	for dir := range d.b.full {
		if dir == n.dir || strings.HasPrefix(dir, n.dir+"/") {
			return true
		}
	}
	return false
}

// journal is node n's journal of unit, nil when the bundle has none.
func (d *diag) journal(n *node, unit string) *File {
	if n.dir == "" {
		return nil
	}
	return d.b.File(n.dir + "/journals/" + unit + ".log")
}

// containerLog is the name and id of crictl's log of a container, as the
// gather scripts name it: <name>-<id>.log.
var containerLog = regexp.MustCompile(`^(.+)-([0-9a-f]{12,64})\.log$`)

// containers are node n's container logs whose container name is one of
// names (all of them when names is empty).
func (d *diag) containers(n *node, names ...string) []*File {
	if n.dir == "" {
		return nil
	}
	var out []*File
	for _, f := range d.b.Glob(n.dir + "/containers/*.log") {
		m := containerLog.FindStringSubmatch(f.Name[strings.LastIndex(f.Name, "/")+1:])
		if m == nil {
			continue
		}
		if len(names) == 0 || contains(names, m[1]) {
			out = append(out, f)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// logs are every log of node n: journals, containers, pods.
func (d *diag) logs(n *node) []*File {
	if n.dir == "" {
		return nil
	}
	var out []*File
	for _, g := range []string{"/journals/*.log", "/containers/*.log", "/pods/*.log"} {
		out = append(out, d.b.Glob(n.dir+g)...)
	}
	return out
}

// add records a check in the report, its step from the tree.
func (d *diag) add(c Check) {
	c.Step = stepOf(c.ID)
	d.checks = append(d.checks, c)
}

// get is the check id's result, computed once: a check may build on
// another that the tree walks later (the connection matrix's etcd rows on
// etcd.members).
func (d *diag) get(id string) Check {
	if c, ok := d.done[id]; ok {
		return c
	}
	c := checks()[id](d)
	c.ID = id
	d.done[id] = c
	return c
}

// report is the diagnosis as a Report.
func (d *diag) report() *Report {
	r := &Report{Bundle: d.b.Source, Live: d.b.Live, GatherID: d.b.ID, Layout: "installer", At: d.at, Checks: d.checks, CouldNotSee: []Unseen{}}
	r.Reached, r.Complete = d.reached()
	if d.b.dirs["bootlab"] {
		r.Layout = "bootlab"
	}
	for _, n := range append([]*node{d.boot}, d.masters...) {
		r.Nodes = append(r.Nodes, NodeInfo{Name: n.Name, Role: n.Role, Address: n.Address, Gathered: d.gathered(n)})
	}
	r.Healthy = len(r.Checks) > 0
	for _, c := range r.Checks {
		if c.State != Passed {
			r.Healthy = false
		}
		if c.State == Unknown {
			r.CouldNotSee = append(r.CouldNotSee, Unseen{Check: c.ID, Why: c.Detail})
		}
	}
	for _, n := range d.b.notes {
		file, why, _ := strings.Cut(n, ": ")
		r.CouldNotSee = append(r.CouldNotSee, Unseen{File: file, Why: why})
	}
	sortUnseen(d.unseen)
	r.CouldNotSee = append(r.CouldNotSee, d.unseen...)
	r.CouldNotSee = append(r.CouldNotSee, d.missing...)
	if c := r.First(); c != nil {
		r.FirstFailure = c.ID
	}
	r.OK = r.FirstFailure == ""
	return r
}

// reached is the last stage bootkube.service's record ends with success,
// and whether bootkube.service completed.
func (d *diag) reached() (stage string, complete bool) {
	complete = d.bootkubeDone() != nil
	s := d.services["bootkube"]
	if s == nil || s.err != nil {
		return "", complete
	}
	for _, r := range s.recs {
		if r.Phase == phaseStageEnd && r.Result == resultSuccess {
			stage = r.Stage
		}
	}
	return stage, complete
}

// run walks the tree, step by step, check by check.
func (d *diag) run() {
	named := map[string]bool{}
	for _, s := range Steps() {
		for _, id := range s.Checks {
			named[id] = true
		}
	}
	for _, s := range Steps() {
		for _, id := range s.Checks {
			switch {
			case liveOnly[id] && d.live == nil:
				// A bundle holds no tries: the check is a live lab's.
			case id == "service.*":
				for _, name := range d.serviceNames() {
					if !named["service."+name] {
						d.add(d.serviceCheck(name))
					}
				}
			case strings.HasPrefix(id, "service."):
				name := strings.TrimPrefix(id, "service.")
				if _, ok := d.services[name]; ok || alwaysChecked[name] {
					d.add(d.serviceCheck(name))
				}
			default:
				d.add(d.get(id))
			}
		}
	}
}

// liveOnly are the checks only a live lab has: a bundle holds logs, not
// answers to questions asked now.
var liveOnly = map[string]bool{"dns.names": true}

// alwaysChecked are the services the installer's analysis checks whether
// or not the bundle has their record.
var alwaysChecked = map[string]bool{"release-image": true, "bootkube": true}

// serviceNames are the services the bundle has records of, by name.
func (d *diag) serviceNames() []string {
	var out []string
	for name := range d.services {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// checks are the check functions by id (the service records' apart).
func checks() map[string]func(*diag) Check {
	return map[string]func(*diag) Check{
		"clock.skew":                  (*diag).clockSkew,
		"certs.valid":                 (*diag).certsValid,
		"certs.chain":                 (*diag).certsChain,
		"etcd.healthy":                (*diag).etcdHealthy,
		"conn.bootstrap-masters.etcd": (*diag).connBootstrapMastersEtcd,
		"conn.masters-bootstrap.etcd": (*diag).connMastersBootstrapEtcd,
		"conn.masters-masters.etcd":   (*diag).connMastersMastersEtcd,
		"api.dns":                     (*diag).apiDNS,
		"dns.names":                   (*diag).dnsNames,
		"api.readyz":                  (*diag).apiReadyz,
		"api.lb":                      (*diag).apiLB,
		"conn.bootstrap-masters.api":  (*diag).connBootstrapMastersAPI,
		"conn.masters-masters.api":    (*diag).connMastersMastersAPI,
		"masters.ignition":            (*diag).mastersIgnition,
		"conn.masters-bootstrap.mcs":  (*diag).connMastersBootstrapMCS,
		"masters.joined":              (*diag).mastersJoined,
		"csr.pending":                 (*diag).csrPending,
		"etcd.members":                (*diag).etcdMembers,
		"bootkube.complete":           (*diag).bootkubeComplete,
	}
}
