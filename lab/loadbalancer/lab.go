package loadbalancer

import (
	"path/filepath"
	"time"

	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// LabConfigOn is LabConfig run by h, the hypervisor's machine
// (Hypervisor.Host).
func LabConfigOn(h host.Host, s *spec.Spec, bootstrapRemoved bool) Config {
	c := LabConfig(s, bootstrapRemoved)
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

// ProbeCheckInterval is the haproxy health check period of probe labs;
// ProbeTransitionInterval the period while a server is down or changing
// state. A probe lab turns green in a chain (the bootstrap's MCS, then the
// masters' that the workers fetch from, then the workers' ingress), each
// link waiting for haproxy to see two good checks: 0.25 s apart that is
// 0.5 s a link instead of up to 4 s. Servers in rotation are still checked
// every 2 s, so the checks cost the TCG guests no more once the lab is up.
const (
	ProbeCheckInterval      = 2 * time.Second
	ProbeTransitionInterval = 250 * time.Millisecond
)

// LabConfig derives the lab's haproxy from the spec: 6443 and 22623
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
// hypervisor uses LabConfigOn, which runs it where the lab's addresses are.
func LabConfig(s *spec.Spec, bootstrapRemoved bool) Config {
	var control, ingress []Server
	for _, n := range s.Nodes {
		srv := Server{Name: n.Name, Address: n.IP}
		switch n.Role {
		case spec.RoleBootstrap:
			if !bootstrapRemoved {
				control = append(control, srv)
			}
		case spec.RoleMaster:
			control = append(control, srv)
		}
	}
	for _, n := range s.IngressNodes() {
		ingress = append(ingress, Server{Name: n.Name, Address: n.IP})
	}
	// Probe nodes answer within a second of booting, so a probe lab checks
	// every 2 s and turns green sooner; real labs keep the docs' 5 s. A
	// rehearsal lab's 6443 servers are real kube-apiservers that start for
	// minutes on emulated nodes, down all that time: at 250 ms each got
	// four checks a second from haproxy, each a TLS handshake and a
	// /readyz that asks etcd, on the vCPU the start needs. There the
	// servers are checked every 2 s in every state.
	var inter, transition time.Duration
	if s.Profile == spec.ProfileProbe {
		inter, transition = ProbeCheckInterval, ProbeTransitionInterval
		if s.Rehearsal() {
			transition = ProbeCheckInterval
		}
	}
	ingressAddr := ""
	if s.Network.IngressAddress != s.Network.APIAddress {
		ingressAddr = s.Network.IngressAddress
	}
	return Config{
		Name:          s.Name,
		BindAddress:   s.Network.APIAddress,
		StatsPort:     spec.HAProxyStatsPort,
		CheckInterval: inter, TransitionInterval: transition,
		Dir: filepath.Dir(labdir.HAProxyConfig(s)),
		Frontends: []Frontend{
			{Name: "api", Port: PortAPI, Check: CheckReadyz, Servers: control},
			{Name: "machine-config", Port: PortMachineConfig, Check: CheckHealthz, Servers: control},
			{Name: "ingress-http", Port: PortIngressHTTP, Check: CheckTCP, Servers: ingress, Address: ingressAddr},
			{Name: "ingress-https", Port: PortIngressHTTPS, Check: CheckTCP, Servers: ingress, Address: ingressAddr},
		},
	}
}
