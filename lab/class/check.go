package class

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/preflight"
	"github.com/bootlab/bootlab/lab/spec"
)

// Target is one host of a class to measure for Facts: its name in hosts
// ("" for a class without hosts) and its libvirt URI.
type Target struct{ Name, URI string }

// Targets are the hosts of c to measure: its hosts, or the one its
// template names (templateURI).
func (c *Spec) Targets(templateURI string) []Target {
	if len(c.Hosts) == 0 {
		return []Target{{URI: templateURI}}
	}
	out := make([]Target, len(c.Hosts))
	for i, h := range c.Hosts {
		out[i] = Target{Name: h.Name, URI: h.URI}
	}
	return out
}

// Facts are what a class is checked against before anything is created:
// the labs under the bootlab home, each host as measured, and where an
// earlier class up placed its labs. The command reads them; tests give
// fixed ones.
type Facts struct {
	// Labs are the labs under the bootlab home (labdir.Find).
	Labs []labdir.Ref
	// Hosts are the class's hosts as measured, by name (a host without
	// facts is taken as reachable and not measured); a class without
	// hosts has one, unnamed: the host its template names.
	Hosts []Host
	// Placed is the host (by name) an earlier class up placed each lab on
	// (by lab name), whether it was built or not: it stays there.
	Placed map[string]string
}

// Host is one host of the class as measured: what its address ranges must
// avoid and the room it has for labs.
type Host struct {
	// Name is the host's name in hosts ("" for a class without hosts).
	Name string
	// Routes are the host's routes (preflight.HostRoutes).
	Routes []preflight.HostRoute
	// Networks are the libvirt networks of its daemon.
	Networks []hypervisor.NetworkInfo
	// Capacity is what it offers labs; nil when it is not measured (the
	// test driver runs nothing; a transport that carries libvirt only
	// reads nothing of the machine).
	Capacity *Capacity
	// Err is why the host could not be reached or measured: it takes no
	// new lab, and its labs fail with this reason.
	Err error
}

// Capacity is a host's room for labs, measured as `lab preflight`
// measures it.
type Capacity struct {
	// MemoryBytes is the memory available now; MemoryTotalBytes all of it.
	MemoryBytes      uint64 `json:"memoryAvailableBytes"`
	MemoryTotalBytes uint64 `json:"memoryTotalBytes"`
	// DiskBytes is free on DiskDir's filesystem, where pools are made.
	DiskBytes uint64 `json:"diskFreeBytes"`
	DiskDir   string `json:"diskDir"`
	CPUs      int    `json:"cpus"`
	// KVM is set when the host's libvirt offers KVM guests (TCG else).
	KVM bool `json:"kvm"`
	// Labs are the bootlab labs on the host now (its bootlab networks),
	// of any class or none.
	Labs int `json:"labs"`
}

// host is the facts of the host named name (a class without hosts: the
// first), and whether there are any.
func (f Facts) host(name string) (Host, bool) {
	for _, h := range f.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return Host{Name: name}, false
}

// Expand turns the class into its labs and checks them together against
// the facts: every error is reported at once, naming the class file's
// field, before anything is created. The labs get their networks from the
// address pool in learner order, skipping what any host routes, what
// libvirt networks use and what other labs hold, so each range is unique
// across the class; a lab this class already built keeps the network it
// has. A class with hosts then places its labs (Place): a lab already
// placed stays where it is.
func Expand(c *Spec, source string, facts Facts) (*Plan, error) {
	e := &expansion{c: c, source: source, facts: facts}
	learners := c.validateClass(e.add)
	if e.failed() {
		return nil, e.fail()
	}
	pool := e.addressPool()
	if e.failed() {
		return nil, e.fail()
	}
	e.sortLabs()
	e.planLabs(learners)
	if e.failed() {
		return nil, e.fail()
	}
	e.assignNetworks(pool)
	if e.failed() {
		return nil, e.fail()
	}
	if err := e.validateLabs(); err != nil {
		return nil, err
	}
	if e.failed() {
		return nil, e.fail()
	}
	distinct(e.plan, e.add)
	e.bridgesFree()
	if e.failed() {
		return nil, e.fail()
	}
	if len(c.Hosts) > 0 {
		e.place()
	} else if h, ok := facts.host(""); ok && h.Capacity != nil {
		capacity(e.plan, *h.Capacity, e.add)
	}
	if e.failed() {
		return nil, e.fail()
	}
	return e.plan, nil
}

// expansion is one Expand: the class, the host's facts, the errors found
// so far (each naming the class file's field) and the plan taking shape.
type expansion struct {
	c      *Spec
	source string
	facts  Facts
	errs   []spec.FieldError
	plan   *Plan
	// ours are the labs of this class that exist, others every other
	// lab on the host; explicit the learners whose network the class
	// file names.
	ours     map[string]*labdir.Ref
	others   []labdir.Ref
	explicit map[string]bool
}

func (e *expansion) add(field, format string, args ...any) {
	e.errs = append(e.errs, spec.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (e *expansion) failed() bool { return len(e.errs) > 0 }

func (e *expansion) fail() error { return &spec.ValidationError{Source: e.source, Errs: e.errs} }

// addressPool checks the class's address pool (the default when none).
func (e *expansion) addressPool() netip.Prefix {
	c := e.c
	if c.AddressPool == "" {
		c.AddressPool = DefaultAddressPool
	}
	pool, perr := netip.ParsePrefix(c.AddressPool)
	switch {
	case perr != nil:
		e.add("addressPool", "%q is not a CIDR: write it like 192.168.128.0/17", c.AddressPool)
	case !pool.Addr().Is4() || !pool.Addr().IsPrivate():
		e.add("addressPool", "%s is not a private IPv4 range: use one inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16", pool)
	case pool.Bits() > 24:
		e.add("addressPool", "%s is smaller than one /24, and every lab needs a /24: give a /24 or larger (one /24 per learner)", pool)
	case pool.Masked() != pool:
		e.add("addressPool", "%s has host bits set: write %s", pool, pool.Masked())
	}
	return pool
}

// sortLabs tells the labs of this class that exist from every other lab on
// the host.
func (e *expansion) sortLabs() {
	e.ours = map[string]*labdir.Ref{}
	for i, l := range e.facts.Labs {
		if l.State != nil && l.State.Class == e.c.Name {
			e.ours[l.Name] = &e.facts.Labs[i]
			continue
		}
		e.others = append(e.others, l)
	}
}

// planLabs makes each learner's lab spec; a built lab keeps its network,
// and a lab of the name that is not this class's is refused.
func (e *expansion) planLabs(learners []string) {
	c := e.c
	e.plan = &Plan{Class: c}
	e.explicit = map[string]bool{}
	for _, learner := range learners {
		s, ferrs := c.labSpec(learner)
		e.errs = append(e.errs, ferrs...)
		if s == nil {
			continue
		}
		l := Lab{Learner: learner, Spec: s}
		if s.Network.CIDR != "" {
			e.explicit[learner] = true
		}
		if ref := e.ours[s.Name]; ref != nil && ref.State.Spec != nil && s.Network.CIDR == "" {
			// A built lab keeps its network: re-running class up resumes it.
			s.Network.CIDR = ref.State.Spec.Network.CIDR
			l.Built = true
		} else if ref != nil && ref.State.Spec != nil {
			l.Built = true
		} else if cidr := e.madeNetwork(ref); ref != nil && s.Network.CIDR == "" && cidr != "" {
			// A lab cut short keeps the network its build made, found by
			// the UUID its state recorded: its up then goes on with it.
			s.Network.CIDR = cidr
		}
		for _, o := range e.others {
			if o.Name == s.Name {
				cls := "no class"
				if o.State != nil && o.State.Class != "" {
					cls = "class " + o.State.Class
				}
				e.add("learners", "lab %s already exists on this host (%s, %s) and is not a lab of class %s: `bootlab lab down --name %s` first, or choose another class name", s.Name, cls, o.Dir, c.Name, s.Name)
			}
		}
		e.plan.Labs = append(e.plan.Labs, l)
	}
}

// madeNetwork is the range of the libvirt network (on any host) a lab of
// this class cut short made, by the network UUID its state records; ""
// when it made none.
func (e *expansion) madeNetwork(ref *labdir.Ref) string {
	if ref == nil || ref.State == nil || ref.State.NetworkUUID == "" {
		return ""
	}
	for _, h := range e.facts.Hosts {
		for _, n := range h.Networks {
			if n.UUID == ref.State.NetworkUUID && len(n.Prefixes) > 0 {
				return n.Prefixes[0].Masked().String()
			}
		}
	}
	return ""
}

// taken is a range the class's networks must not overlap, and whose it is.
type taken struct {
	prefix netip.Prefix
	what   string
}

// usedNetworks are the ranges the class's networks must not overlap:
// other labs' first (a lab's network is also a libvirt network and a route
// on its bridge, and "lab X" says the most), then libvirt's networks and
// the host's routes, but this class's own.
func (e *expansion) usedNetworks() []taken {
	ourNets := map[string]bool{}
	ourBridges := map[string]bool{}
	for name, ref := range e.ours {
		ourNets["bootlab-"+name] = true
		if ref.State.Spec != nil {
			ourBridges[ref.State.Spec.Network.Bridge] = true
		}
	}
	// The bridges of our labs' networks route their ranges, built or not.
	for _, h := range e.facts.Hosts {
		for _, n := range h.Networks {
			if ourNets[n.Name] && n.Bridge != "" {
				ourBridges[n.Bridge] = true
			}
		}
	}
	var used []taken
	for _, o := range e.others {
		if o.State == nil || o.State.Spec == nil {
			continue
		}
		if p, err := netip.ParsePrefix(o.State.Spec.Network.CIDR); err == nil {
			what := fmt.Sprintf("lab %s (%s)", o.Name, p.Masked())
			if o.State.Class != "" {
				what = fmt.Sprintf("lab %s of class %s (%s)", o.Name, o.State.Class, p.Masked())
			}
			used = append(used, taken{p.Masked(), what})
		}
	}
	for _, h := range e.facts.Hosts {
		on := ""
		if h.Name != "" {
			on = " on host " + h.Name
		}
		for _, n := range h.Networks {
			if ourNets[n.Name] {
				continue
			}
			for _, p := range n.Prefixes {
				used = append(used, taken{p, fmt.Sprintf("libvirt network %q (%s)%s", n.Name, p, on)})
			}
		}
		for _, r := range h.Routes {
			if r.Prefix.Bits() == 0 || ourBridges[r.Dev] {
				continue
			}
			what := fmt.Sprintf("the host route %s on %s", r.Prefix, r.Dev)
			if h.Name != "" {
				what = fmt.Sprintf("the route %s on %s of host %s", r.Prefix, r.Dev, h.Name)
			}
			used = append(used, taken{r.Prefix, what})
		}
	}
	return used
}

// clash is what of used p overlaps, or "".
func clash(used []taken, p netip.Prefix) string {
	for _, u := range used {
		if u.prefix.Overlaps(p) {
			return u.what
		}
	}
	return ""
}

// assignNetworks checks the explicit and built networks, then carves the
// rest from pool in learner order.
func (e *expansion) assignNetworks(pool netip.Prefix) {
	used := e.usedNetworks()
	assigned := e.checkGivenNetworks(used)
	var free []netip.Prefix
	var busy []string
	for sub := range subnets24(pool) {
		if what := clash(used, sub); what != "" {
			busy = append(busy, sub.String()+" by "+what)
			continue
		}
		ok := true
		for q := range assigned {
			if q.Overlaps(sub) {
				ok = false
				break
			}
		}
		if ok {
			free = append(free, sub)
		}
	}
	need := 0
	for i := range e.plan.Labs {
		if e.plan.Labs[i].Spec.Network.CIDR == "" {
			need++
		}
	}
	if need > len(free) {
		usedBy := ""
		if len(busy) > 0 {
			if len(busy) > 3 {
				busy = append(busy[:3], fmt.Sprintf("%d more", len(busy)-3))
			}
			usedBy = " (used: " + strings.Join(busy, ", ") + ")"
		}
		e.add("addressPool", "%s has %d free /24 networks%s, the class needs %d: give a larger addressPool, or fewer learners", pool, len(free), usedBy, need)
		return
	}
	k := 0
	for i := range e.plan.Labs {
		s := e.plan.Labs[i].Spec
		if s.Network.CIDR == "" {
			s.Network.CIDR = free[k].String()
			k++
		}
	}
}

// checkGivenNetworks checks the networks the class file names or a built
// lab has against used and each other, and returns them by lab.
func (e *expansion) checkGivenNetworks(used []taken) map[netip.Prefix]string {
	assigned := map[netip.Prefix]string{}
	for i := range e.plan.Labs {
		s := e.plan.Labs[i].Spec
		if s.Network.CIDR == "" {
			continue
		}
		p, err := netip.ParsePrefix(s.Network.CIDR)
		if err != nil {
			continue // the lab's own validation names it
		}
		field := "lab " + s.Name + ": network.cidr"
		if e.explicit[e.plan.Labs[i].Learner] {
			field = "overrides." + e.plan.Labs[i].Learner + ".network.cidr"
		}
		if what := clash(used, p.Masked()); what != "" && !e.plan.Labs[i].Built {
			e.add(field, "%s overlaps %s: choose a free range", p.Masked(), what)
		}
		for q, other := range assigned {
			if q.Overlaps(p.Masked()) {
				e.add(field, "%s overlaps lab %s's network %s: every lab needs its own range", p.Masked(), other, q)
			}
		}
		assigned[p.Masked()] = s.Name
	}
	return assigned
}

// validateLabs checks each lab on its own, its defaults applied; a real
// lab claims its cluster domain in host DNS, one each.
func (e *expansion) validateLabs() error {
	for i := range e.plan.Labs {
		s := e.plan.Labs[i].Spec
		if s.Cluster.Name == "" && (s.Profile == spec.ProfileOpenShift || s.Profile == "" && s.OpenShift.PullSecretFile != "") {
			s.Cluster.Name = e.plan.Labs[i].Learner
		}
		s.Defaults()
		if err := s.Validate(); err != nil {
			var ve *spec.ValidationError
			if !errors.As(err, &ve) {
				return err
			}
			for _, fe := range ve.Errs {
				e.add("lab "+s.Name+": "+fe.Field, "%s", fe.Msg)
			}
		}
	}
	return nil
}

// bridgesFree refuses a lab whose bridge another libvirt network has.
func (e *expansion) bridgesFree() {
	for i := range e.plan.Labs {
		s := e.plan.Labs[i].Spec
		for _, h := range e.facts.Hosts {
			for _, n := range h.Networks {
				if n.Name != s.NetworkName() && n.Bridge == s.Network.Bridge {
					e.add("lab "+s.Name+": network.bridge", "%s is already the bridge of libvirt network %q: choose another class or learner name", n.Bridge, n.Name)
				}
			}
		}
	}
}

// distinct refuses two labs sharing what must be a lab's own: bridge, node
// MACs, load balancer addresses, lab and pool directories.
func distinct(plan *Plan, add func(field, format string, args ...any)) {
	type owner struct{ lab, what string }
	seen := map[string]owner{}
	claim := func(s *spec.Spec, field, key, value string) {
		if value == "" {
			return
		}
		k := key + "=" + value
		if o, dup := seen[k]; dup && o.lab != s.Name {
			add("lab "+s.Name+": "+field, "%s is also %s of lab %s: every lab needs its own", value, o.what, o.lab)
			return
		}
		seen[k] = owner{s.Name, field}
	}
	for _, l := range plan.Labs {
		s := l.Spec
		claim(s, "network.bridge", "bridge", s.Network.Bridge)
		claim(s, "network.apiAddress", "addr", s.Network.APIAddress)
		if s.Network.IngressAddress != s.Network.APIAddress {
			claim(s, "network.ingressAddress", "addr", s.Network.IngressAddress)
		}
		claim(s, "labDir", "dir", s.LabDir)
		if s.Profile == spec.ProfileOpenShift {
			claim(s, "cluster.name", "domain", s.Cluster.Domain())
		}
		claim(s, "storage.poolDir", "pool", s.Storage.PoolDir)
		for i, n := range s.Nodes {
			claim(s, fmt.Sprintf("nodes[%d].mac", i), "mac", strings.ToLower(n.MAC))
		}
	}
}

// capacity refuses a class the host cannot hold: the memory and disk of
// every lab not built yet (a built lab's are already in use), summed.
// When it does not fit it says how many labs do.
func capacity(plan *Plan, have Capacity, add func(field, format string, args ...any)) {
	var todo []*spec.Spec
	for _, l := range plan.Labs {
		if !l.Built {
			todo = append(todo, l.Spec)
		}
	}
	if len(todo) == 0 {
		return
	}
	var mem, disk uint64
	fit := -1
	for i, s := range todo {
		n := preflight.LabNeeds(s)
		mem += n.MemoryBytes
		disk += n.DiskBytes
		if fit < 0 && (mem > have.MemoryBytes || disk > have.DiskBytes) {
			fit = i
		}
	}
	if fit < 0 {
		return
	}
	labs := func(n int) string {
		if n == 1 {
			return "1 lab"
		}
		return fmt.Sprintf("%d labs", n)
	}
	var short []string
	if mem > have.MemoryBytes {
		short = append(short, fmt.Sprintf("%s of memory (%s available)", preflight.HumanBytes(mem), preflight.HumanBytes(have.MemoryBytes)))
	}
	if disk > have.DiskBytes {
		short = append(short, fmt.Sprintf("%s of disk (%s free on %s)", preflight.HumanBytes(disk), preflight.HumanBytes(have.DiskBytes), have.DiskDir))
	}
	fits := fmt.Sprintf("only %s fit", labs(fit))
	if fit == 1 {
		fits = "only 1 lab fits"
	}
	if built := len(plan.Labs) - len(todo); built > 0 {
		fits += fmt.Sprintf(" beside the %d already built", built)
	}
	add("learners", "%s to build need %s: %s; lower learners, give the template smaller nodes, or free memory and disk (nothing was created)",
		labs(len(todo)), strings.Join(short, " and "), fits)
}

// subnets24 yields the /24 networks of p in address order.
func subnets24(p netip.Prefix) func(func(netip.Prefix) bool) {
	return func(yield func(netip.Prefix) bool) {
		a := p.Masked().Addr()
		for p.Contains(a) {
			sub := netip.PrefixFrom(a, 24)
			if !yield(sub) {
				return
			}
			b := a.As4()
			b[2]++
			if b[2] == 0 {
				b[1]++
				if b[1] == 0 {
					b[0]++
				}
			}
			a = netip.AddrFrom4(b)
		}
	}
}

// Names lists the plan's lab names, sorted.
func (p *Plan) Names() []string {
	out := make([]string, len(p.Labs))
	for i, l := range p.Labs {
		out[i] = l.Spec.Name
	}
	sort.Strings(out)
	return out
}

// place puts every lab of a class with hosts on one (Place): a built lab
// stays on the host its spec names, a lab an earlier class up placed
// stays on that host, the others go where mode puts them. Each lab then
// takes its host's URI and directory.
func (e *expansion) place() {
	c := e.c
	index := map[string]int{}
	byURI := map[string]int{}
	hosts := make([]PlaceHost, len(c.Hosts))
	for i, h := range c.Hosts {
		index[h.Name], byURI[h.URI] = i, i
		f, _ := e.facts.host(h.Name)
		hosts[i] = PlaceHost{Name: h.Name, MaxLabs: h.MaxLabs, Down: f.Err}
		if f.Capacity != nil {
			hosts[i].Free = &preflight.Needs{MemoryBytes: f.Capacity.MemoryBytes, DiskBytes: f.Capacity.DiskBytes}
			hosts[i].DiskDir = f.Capacity.DiskDir
		}
	}
	labs := make([]PlaceLab, len(e.plan.Labs))
	for i, l := range e.plan.Labs {
		labs[i] = PlaceLab{Name: l.Spec.Name, Needs: preflight.LabNeeds(l.Spec), Host: -1, Built: l.Built}
		ref := e.ours[l.Spec.Name]
		if l.Built && ref != nil && ref.State.Spec != nil {
			uri := ref.State.Spec.Libvirt.URI
			h, ok := byURI[uri]
			if !ok {
				e.add("hosts", "lab %s is built on %s, which no host of the class is: list that host again, or remove the lab first (`bootlab lab down --name %s`)", l.Spec.Name, uri, l.Spec.Name)
				continue
			}
			labs[i].Host = h
			continue
		}
		if name, ok := e.facts.Placed[l.Spec.Name]; ok && ref != nil {
			h, ok := index[name]
			if !ok {
				e.add("hosts", "lab %s was placed on host %s, which the class no longer lists and which may hold part of it: list that host again, or remove the lab first (`bootlab class down`)", l.Spec.Name, name)
				continue
			}
			labs[i].Host = h
		}
	}
	if e.failed() {
		return
	}
	mode := c.Placement
	if mode == "" {
		mode = PlacementSpread
	}
	at, err := Place(mode, hosts, labs)
	if err != nil {
		e.add("hosts", "%s", err.Error())
		return
	}
	e.plan.Placement = mode
	for i, h := range c.Hosts {
		f, _ := e.facts.host(h.Name)
		e.plan.Hosts = append(e.plan.Hosts, PlanHost{HostSpec: c.Hosts[i], Capacity: f.Capacity, Err: f.Err})
	}
	for i := range e.plan.Labs {
		l := &e.plan.Labs[i]
		h := c.Hosts[at[i]]
		l.Host = h.Name
		l.Spec.Libvirt.URI = h.URI
		l.Spec.Libvirt.HostDir = h.LabHostDir(l.Spec.Name)
		e.plan.Hosts[at[i]].Labs = append(e.plan.Hosts[at[i]].Labs, l.Learner)
	}
}
