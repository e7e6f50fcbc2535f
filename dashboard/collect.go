package dashboard

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/verify"
)

// Source produces the views of every lab; the server polls it.
type Source interface {
	Snapshot(ctx context.Context) ([]LabView, error)
}

// Collector is the Source of a host's labs: lab.List for the labs, then
// lab.Inspect, the stage records and the last verify result of each. It
// keeps one libvirt connection per URI between snapshots.
type Collector struct {
	// Home is the bootlab home ("" means lab.DefaultHome()).
	Home string
	// URIs are searched for orphaned labs beside the labs' own.
	URIs    []string
	Connect lab.Connector
	Log     *slog.Logger

	mu      sync.Mutex
	conns   map[string]*conn
	lastErr map[string]string // uri -> last connection error, logged once
	records map[string]recordsCache
	// clusters are the last cluster views, by lab directory.
	clusters map[string]*ClusterView
	// etcdViews are the last etcd views, by lab directory.
	etcdViews map[string]etcdCache
	// hosts are the hosts of the last snapshot and their load (hosts.go).
	hosts hostLoads
	// specs are the specs of the last snapshot's labs, by name (the
	// trainer's view reads their directories: faults.go).
	specs map[string]*spec.Spec
}

type conn struct {
	hv hypervisor.Hypervisor
}

type recordsCache struct {
	labUUID string
	size    int64
	modTime time.Time
	stages  []StageView
}

// Close closes the libvirt connections.
func (c *Collector) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for uri, cn := range c.conns {
		_ = cn.hv.Close()
		delete(c.conns, uri)
	}
}

func (c *Collector) hypervisor(ctx context.Context, uri string) (hypervisor.Hypervisor, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn, ok := c.conns[uri]; ok {
		return cn.hv, nil
	}
	if c.Connect == nil {
		return nil, fmt.Errorf("no libvirt connection to %s", uri)
	}
	hv, err := c.Connect(ctx, uri, c.Log)
	if c.lastErr == nil {
		c.lastErr = map[string]string{}
	}
	if err != nil {
		// Polled every second: say it when it starts failing, not each time.
		if c.Log != nil && c.lastErr[uri] != err.Error() {
			c.Log.Warn("cannot read labs from libvirt", "uri", uri, "err", err)
		}
		c.lastErr[uri] = err.Error()
		return nil, err
	}
	if c.lastErr[uri] != "" && c.Log != nil {
		c.Log.Info("libvirt reachable again", "uri", uri)
	}
	delete(c.lastErr, uri)
	if c.conns == nil {
		c.conns = map[string]*conn{}
	}
	c.conns[uri] = &conn{hv: hv}
	return hv, nil
}

// drop forgets a connection that failed, so the next snapshot reconnects.
func (c *Collector) drop(uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn, ok := c.conns[uri]; ok {
		_ = cn.hv.Close()
		delete(c.conns, uri)
	}
}

// Snapshot reads every lab on the host.
func (c *Collector) Snapshot(ctx context.Context) ([]LabView, error) {
	var lister lab.Connector
	if c.Connect != nil {
		// The connections are kept between snapshots: List's Close of
		// what it is handed leaves them open.
		lister = func(ctx context.Context, uri string, _ *slog.Logger) (hypervisor.Hypervisor, error) {
			hv, err := c.hypervisor(ctx, uri)
			if err != nil {
				return nil, err
			}
			return hypervisor.Shared(hv)(ctx, uri, nil)
		}
	}
	// Connection failures are logged by hypervisor, once; a lab on a
	// daemon that cannot be read carries the error in its view.
	labs, err := lab.List(ctx, lab.ListOptions{Home: c.Home, URIs: c.URIs, Connect: lister})
	if err != nil {
		return nil, err
	}
	views := make([]LabView, 0, len(labs))
	specs := map[string]*spec.Spec{}
	for i := range labs {
		views = append(views, c.view(ctx, &labs[i]))
		if labs[i].Spec != nil && !labs[i].Orphaned {
			specs[labs[i].Name] = labs[i].Spec
		}
	}
	c.mu.Lock()
	c.specs = specs
	c.mu.Unlock()
	c.placeHosts(views, labs)
	return views, nil
}

func (c *Collector) view(ctx context.Context, l *lab.Summary) LabView {
	v := LabView{Name: l.Name, Profile: l.Profile, URI: l.URI, CIDR: l.CIDR, Orphaned: l.Orphaned,
		NodesUp: l.NodesUp, NodesTotal: l.NodesTotal, Phase: PhaseNotBuilt, Verify: l.Verify, Error: l.Error,
		Nodes: []NodeView{}, DNS: []lab.DNSRecord{}, Stages: []StageView{}, Failures: []string{},
		LoadBalancer: LBView{Frontends: []FrontendView{}}, Serving: ServingView{API: []string{}, MCS: []string{}}}
	if l.Orphaned {
		v.Error = l.OrphanHint()
		v.Network = NetworkView{Name: l.Network, Exists: l.Network != ""}
		for _, d := range l.Domains {
			v.Nodes = append(v.Nodes, NodeView{Name: strings.TrimPrefix(d, "bootlab-"+l.Name+"-"), State: "orphaned"})
		}
	}
	s := l.Spec
	if s == nil {
		v.Failures = failures(&v, nil)
		return v
	}
	v.Domain = s.Cluster.Domain()
	labUUID := ""
	if l.State != nil {
		labUUID = l.State.UUID
	}
	v.Stages = c.stages(filepath.Join(l.Dir, filepath.Base(labdir.Stages(s))), labUUID)
	removed := l.State != nil && l.State.BootstrapRemoved

	var st *lab.Status
	hv, err := c.hypervisor(ctx, s.Libvirt.URI)
	if err == nil {
		st, err = lab.Inspect(ctx, hv, s)
		if err != nil {
			c.drop(s.Libvirt.URI)
		}
	}
	if err != nil && v.Error == "" {
		v.Error = fmt.Sprintf("libvirt %s: %v", s.Libvirt.URI, err)
	}
	v.Nodes, v.LoadBalancer = nodesAndLB(s, st, removed)
	expectedDown(s, st, v.Stages, &v.LoadBalancer)
	v.Serving = serving(v.LoadBalancer)
	if s.Rehearsal() || s.Profile == spec.ProfileOpenShift {
		v.Cluster = c.cluster(ctx, s)
	}
	v.Etcd = c.etcd(ctx, s, hv)
	if st != nil {
		v.Network = NetworkView{Name: st.Network.Name, Exists: st.Network.Exists, Active: st.Network.Active, Bridge: st.Network.Bridge, Gateway: st.Network.Gateway}
		v.DNS = st.DNS
		v.NodesUp = 0
		for _, n := range st.Nodes {
			if n.State == "running" {
				v.NodesUp++
			}
		}
	} else {
		v.Network = NetworkView{Name: s.NetworkName()}
	}
	for _, sv := range v.Stages {
		if sv.State == StageDone && sv.Number > v.StageReached {
			v.StageReached = sv.Number
		}
		if sv.State == StageRunning {
			v.StageRunning = sv.Number
		}
	}
	v.Phase = phase(&v, s, removed)
	v.Failures = failures(&v, s)
	return v
}

// nodesAndLB merges the spec (what should be) with the inspected state
// (what is): every node and every backend appears, with "unknown" where
// libvirt or haproxy could not be read.
func nodesAndLB(s *spec.Spec, st *lab.Status, removed bool) ([]NodeView, LBView) {
	nodes := make([]NodeView, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		nv := NodeView{Name: n.Name, Role: n.Role, State: "unknown", IP: n.IP, FQDN: s.FQDN(n)}
		if st != nil {
			for _, ns := range st.Nodes {
				if ns.Name == n.Name {
					nv.State = ns.State
					if ns.IP != "" {
						nv.IP = ns.IP
					}
				}
			}
		}
		nodes = append(nodes, nv)
	}
	cfg := loadbalancer.LabConfig(s, removed)
	lb := LBView{Address: cfg.BindAddress, Frontends: []FrontendView{}}
	var live []loadbalancer.BackendStatus
	switch {
	case st == nil:
		lb.Error = "not inspected: libvirt unreachable"
	case st.LoadBalancer != nil:
		lb.Running = st.LoadBalancer.Running
		live = st.LoadBalancer.Backends
		lb.Error = st.LoadBalancerError
	case st.LoadBalancerError != "":
		lb.Error = st.LoadBalancerError
	default:
		lb.Error = "not inspected on a test:// URI"
	}
	for _, f := range cfg.Frontends {
		addr := f.Address
		if addr == "" {
			addr = cfg.BindAddress
		}
		fv := FrontendView{Name: f.Name, Port: f.Port, Address: addr, Backends: []BackendView{}}
		for _, srv := range f.Servers {
			bv := BackendView{Server: srv.Name, Address: srv.Address, Health: HealthUnknown}
			for _, b := range live {
				if b.Frontend == f.Name && b.Server == srv.Name {
					bv.Status, bv.Health = b.Status, health(b)
				}
			}
			fv.Backends = append(fv.Backends, bv)
		}
		lb.Frontends = append(lb.Frontends, fv)
	}
	return nodes, lb
}

// expectedDown marks pending each backend of a rehearsal lab that is down
// as the stages leave it (nothing serves before its stage, the bootstrap
// after its stages stopped it and before `lab pivot`), in verify's words:
// the same state is never red here and pending there.
func expectedDown(s *spec.Spec, st *lab.Status, stageViews []StageView, lb *LBView) {
	if !s.Rehearsal() || st == nil || st.LoadBalancer == nil {
		return
	}
	run := map[int]bool{}
	for _, sv := range stageViews {
		run[sv.Number] = sv.State == StageDone || sv.State == StageSkipped
	}
	for i := range lb.Frontends {
		f := &lb.Frontends[i]
		for j := range f.Backends {
			bv := &f.Backends[j]
			if bv.Health != HealthDown {
				continue
			}
			for _, b := range st.LoadBalancer.Backends {
				if b.Frontend != f.Name || b.Server != bv.Server {
					continue
				}
				if why, ok := verify.BackendExpectedDown(s, run, b); ok {
					bv.Health, bv.Pending = HealthPending, why
				}
			}
		}
	}
}

func health(b loadbalancer.BackendStatus) string {
	switch {
	case b.Up():
		return HealthUp
	case strings.HasPrefix(b.Status, "MAINT"), strings.HasPrefix(b.Status, "DRAIN"):
		return HealthMaint
	case strings.HasPrefix(b.Status, "DOWN"), strings.HasPrefix(b.Status, "NOLB"):
		return HealthDown
	}
	return HealthUnknown
}

// phase places the lab on the bootstrap timeline: the bootstrap serves the
// API alone, then masters join the API frontend (handoff), then `lab pivot`
// removes it.
func phase(v *LabView, s *spec.Spec, removed bool) string {
	if !v.Network.Exists && v.NodesUp == 0 {
		return PhaseNotBuilt
	}
	if removed {
		return PhaseBootstrapRemoved
	}
	for _, f := range v.LoadBalancer.Frontends {
		if f.Port != loadbalancer.PortAPI {
			continue
		}
		for _, b := range f.Backends {
			if n, ok := s.Node(b.Server); ok && n.Role == spec.RoleMaster && b.Health == HealthUp {
				return PhaseHandoff
			}
		}
	}
	return PhaseBootstrapActive
}

// failures lists what needs a look, worst first.
func failures(v *LabView, s *spec.Spec) []string {
	out := []string{}
	if v.Error != "" {
		out = append(out, v.Error)
	}
	for _, sv := range v.Stages {
		if sv.State == StageFailed {
			out = append(out, fmt.Sprintf("stage %02d %s failed: %s", sv.Number, sv.Slug, sv.Message))
		}
	}
	if v.Verify != nil && !v.Verify.OK {
		msg := "verify: " + v.Verify.Summary()
		if len(v.Verify.Failed) > 0 {
			f := v.Verify.Failed[0]
			msg += fmt.Sprintf(" (first: %s %s)", f.Group, f.Name)
		}
		out = append(out, msg)
	}
	if s == nil || v.Phase == PhaseNotBuilt {
		return out
	}
	for _, n := range v.Nodes {
		if n.State == "running" || (n.Role == spec.RoleBootstrap && v.Phase == PhaseBootstrapRemoved) {
			continue
		}
		out = append(out, fmt.Sprintf("node %s is %s", n.Name, n.State))
	}
	if !v.LoadBalancer.Running && v.LoadBalancer.Error == "" {
		out = append(out, "load balancer is not running")
	}
	if v.LoadBalancer.Running {
		for _, f := range v.LoadBalancer.Frontends {
			for _, b := range f.Backends {
				if b.Health == HealthDown {
					out = append(out, fmt.Sprintf("backend %s/%s is %s", f.Name, b.Server, b.Status))
				}
			}
		}
	}
	return out
}

var (
	pemRE    = regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]+-----.*?(-----END [A-Z0-9 ]+-----|$)`)
	secretRE = regexp.MustCompile(`[A-Za-z0-9+/=_\-.]{64,}`)
	keyRE    = regexp.MustCompile(`(?i)((?:client-key-data|client-certificate-data|certificate-authority-data|token|password|auth|pullSecret)["']?\s*[:=]\s*["']?)[^\s"',}]+`)
)

// Sanitize makes a message fit for the page: its first line, no PEM block
// no value of a key that names a credential (auth, token, client-key-data,
// ...) and no long token-like string (a JWT, base64), at most 300
// characters. Messages come from stage output, which may echo anything.
func Sanitize(msg string) string {
	msg = pemRE.ReplaceAllString(msg, "[redacted]")
	msg = keyRE.ReplaceAllString(msg, "${1}[redacted]")
	msg = secretRE.ReplaceAllString(msg, "[redacted]")
	msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
	if r := []rune(msg); len(r) > 300 {
		msg = string(r[:300]) + "…"
	}
	return msg
}
