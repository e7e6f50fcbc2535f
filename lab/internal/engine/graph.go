package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/diagram"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// GraphOptions say whether Graph may ask libvirt which nodes run.
type GraphOptions struct {
	// Connect opens the hypervisor at uri. Nil draws from the spec alone.
	Connect hypervisor.Connector
	// Timeout bounds the libvirt questions; 0 means 10 s. A lab whose
	// hypervisor does not answer in time is drawn from its spec.
	Timeout time.Duration
}

// Graph is the lab as `lab graph` draws it: the spec's network, DNS names
// and nodes, and the load balancer as lab/loadbalancer configures haproxy
// (so the picture shows what runs). For a lab that was built, the spec it
// was built with is drawn, without the bootstrap's backends after `lab
// pivot`, and each node's state is asked of libvirt; when the lab is not
// built or libvirt does not answer, the picture comes from the spec alone
// and its note says so.
func Graph(ctx context.Context, s *spec.Spec, opts GraphOptions) (*diagram.Topology, error) {
	applied, st, err := labdir.Resolve(s)
	if err != nil {
		return nil, err
	}
	removed := st != nil && st.BootstrapRemoved
	t := topologyOf(applied, removed)
	switch {
	case st == nil:
		t.Note = "Drawn from the spec: lab " + applied.Name + " is not built."
	case opts.Connect == nil:
		t.Note = "Drawn from the spec the lab was built with."
	default:
		if err := liveStates(ctx, applied, st.UUID, t, opts); err != nil {
			t.Note = "Drawn from the spec the lab was built with: libvirt did not say which nodes run (" + err.Error() + ")."
		} else {
			t.Live = true
			t.Note = "Node states read from libvirt at " + applied.Libvirt.URI + "."
		}
	}
	if removed {
		t.Note += " The bootstrap is out of the load balancer (lab pivot)."
	}
	return t, nil
}

// topologyOf draws the spec; removed drops the bootstrap's backends.
func topologyOf(s *spec.Spec, removed bool) *diagram.Topology {
	domain := s.Cluster.Domain()
	t := &diagram.Topology{
		Lab:      s.Name,
		Summary:  summary(s),
		Network:  s.NetworkName(),
		Mode:     string(s.Network.Mode),
		Bridge:   s.Network.Bridge,
		Address:  s.Network.Gateway,
		Balancer: s.Network.APIAddress,
		Domain:   domain,
		DNS: []diagram.DNSName{
			{Name: "api." + domain, Address: s.Network.APIAddress},
			{Name: "api-int." + domain, Address: s.Network.APIAddress},
			{Name: "*.apps." + domain, Address: s.Network.IngressAddress},
		},
	}
	if p, err := netip.ParsePrefix(s.Network.CIDR); err == nil {
		t.Address = fmt.Sprintf("%s/%d", s.Network.Gateway, p.Bits())
	}
	lb := loadbalancer.LabConfig(s, removed)
	for _, f := range lb.Frontends {
		fe := diagram.Frontend{Name: f.Name, Address: f.Address, Port: f.Port, Check: checkText(f.Check)}
		if fe.Address == "" {
			fe.Address = lb.BindAddress
		}
		for _, srv := range f.Servers {
			fe.Backends = append(fe.Backends, srv.Name)
		}
		t.Frontends = append(t.Frontends, fe)
	}
	for _, n := range s.Nodes {
		t.Nodes = append(t.Nodes, diagram.Node{Name: n.Name, Role: string(n.Role), IP: n.IP, MAC: n.MAC, FQDN: s.FQDN(n)})
	}
	return t
}

// checkText names haproxy's health check as a learner would try it.
func checkText(check string) string {
	switch check {
	case loadbalancer.CheckReadyz:
		return "check /readyz"
	case loadbalancer.CheckHealthz:
		return "check /healthz"
	case loadbalancer.CheckTCP:
		return "check tcp"
	}
	return "check " + check
}

// summary is "probe lab, 1 bootstrap, 3 masters, 2 workers".
func summary(s *spec.Spec) string {
	kind := string(s.Profile) + " lab"
	if s.Rehearsal() {
		kind = "rehearsal lab"
	}
	parts := []string{kind}
	for _, r := range []spec.Role{spec.RoleBootstrap, spec.RoleMaster, spec.RoleWorker} {
		n := len(s.NodesByRole(r))
		word := string(r)
		if n != 1 {
			word += "s"
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, word))
	}
	return strings.Join(parts, ", ")
}

// liveStates fills each node's state from libvirt: running, shut off,
// absent, or foreign (a domain of that name that is not this lab's).
func liveStates(ctx context.Context, s *spec.Spec, labUUID string, t *diagram.Topology, opts GraphOptions) error {
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hv, err := opts.Connect(ctx, s.Libvirt.URI, nil)
	if err != nil {
		return err
	}
	defer hv.Close()
	states := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		o, err := hv.LookupDomain(ctx, s.DomainName(n))
		switch {
		case errors.Is(err, hypervisor.ErrNotFound):
			states[i] = "absent"
		case err != nil:
			return err
		default:
			md := plan.ParseLabMetadata(o.XML)
			switch {
			case md == nil || md.Name != s.Name || md.LabUUID != "" && md.LabUUID != labUUID:
				states[i] = "foreign"
			case o.Active:
				states[i] = "running"
			default:
				states[i] = "shut off"
			}
		}
	}
	for i := range t.Nodes {
		t.Nodes[i].State = states[i]
	}
	return nil
}
