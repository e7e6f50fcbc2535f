package lab

import (
	"path/filepath"
	"time"

	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// LoadBalancerOn is LoadBalancerConfig run by h, the hypervisor's machine
// (Hypervisor.Host).
func LoadBalancerOn(h host.Host, s *Spec, bootstrapRemoved bool) loadbalancer.Config {
	c := LoadBalancerConfig(s, bootstrapRemoved)
	c.Host = h
	return c
}

// Ports of the OpenShift UPI load balancer.
const (
	PortAPI           = 6443
	PortMachineConfig = 22623
	PortIngressHTTP   = 80
	PortIngressHTTPS  = 443
)

// ProbeCheckInterval is the haproxy health check period of probe labs.
const ProbeCheckInterval = 2 * time.Second

// LoadBalancerConfig derives the lab's haproxy from the spec: 6443 and 22623
// to the bootstrap and masters on the API address, 80 and 443 to the
// IngressNodes (the workers, or the masters in a lab without workers) on the
// ingress address.
//
// The bootstrap is an ordinary server until `lab pivot`, not the `backup` of
// the docs' sample: with /readyz and /healthz checks haproxy already sends
// nothing to a server that does not answer, and as a normal server the
// bootstrap's share of the traffic shows in the stats, so a learner sees the
// hand-over from the bootstrap API and MCS to the masters' instead of it
// being hidden until every master fails. After bootstrap-complete the docs
// require removing it; bootstrapRemoved (State.BootstrapRemoved) does that.
//
// The config's Host is unset (this machine): a caller holding the
// hypervisor uses LoadBalancerOn, which runs it where the lab's addresses are.
func LoadBalancerConfig(s *Spec, bootstrapRemoved bool) loadbalancer.Config {
	var control, ingress []loadbalancer.Server
	for _, n := range s.Nodes {
		srv := loadbalancer.Server{Name: n.Name, Address: n.IP}
		switch n.Role {
		case RoleBootstrap:
			if !bootstrapRemoved {
				control = append(control, srv)
			}
		case RoleMaster:
			control = append(control, srv)
		}
	}
	for _, n := range s.IngressNodes() {
		ingress = append(ingress, loadbalancer.Server{Name: n.Name, Address: n.IP})
	}
	// Probe nodes answer within a second of booting, so a probe lab checks
	// every 2 s and turns green sooner; real labs keep the docs' 5 s.
	var inter time.Duration
	if s.Profile == ProfileProbe {
		inter = ProbeCheckInterval
	}
	ingressAddr := ""
	if s.Network.IngressAddress != s.Network.APIAddress {
		ingressAddr = s.Network.IngressAddress
	}
	return loadbalancer.Config{
		Name:          s.Name,
		BindAddress:   s.Network.APIAddress,
		StatsPort:     HAProxyStatsPort,
		CheckInterval: inter,
		Dir:           filepath.Dir(s.HAProxyConfigPath()),
		Frontends: []loadbalancer.Frontend{
			{Name: "api", Port: PortAPI, Check: loadbalancer.CheckReadyz, Servers: control},
			{Name: "machine-config", Port: PortMachineConfig, Check: loadbalancer.CheckHealthz, Servers: control},
			{Name: "ingress-http", Port: PortIngressHTTP, Check: loadbalancer.CheckTCP, Servers: ingress, Address: ingressAddr},
			{Name: "ingress-https", Port: PortIngressHTTPS, Check: loadbalancer.CheckTCP, Servers: ingress, Address: ingressAddr},
		},
	}
}
