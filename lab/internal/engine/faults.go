package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// Fault is one fault `lab break` sets for a trainer: a branch of the
// troubleshooting tree (docs/troubleshooting.md), reversible.
type Fault struct {
	// Name is what the trainer types; the learner's views never show it.
	Name string `json:"name"`
	// What it breaks, where it bites, the diagnose check that names it,
	// and the fix a learner makes (not `lab break --undo`).
	What  string `json:"what"`
	Bites string `json:"bites"`
	Check string `json:"check"`
	Fix   string `json:"fix"`
	// RehearsalOnly faults need a rehearsal lab; rehearsalWhy says what
	// of one they need.
	RehearsalOnly bool `json:"rehearsalOnly,omitempty"`
	rehearsalWhy  string
}

// Applies says whether f can be set on lab s.
func (f Fault) Applies(s *spec.Spec) bool { return f.refusal(s) == nil }

// refusal is why f cannot be set on lab s, nil when it can: faults are
// set on probe and rehearsal labs, a RehearsalOnly one on a rehearsal lab.
func (f Fault) refusal(s *spec.Spec) error {
	if s.Profile == spec.ProfileOpenShift {
		return fmt.Errorf("lab break sets faults on probe and rehearsal labs: lab %s is an OpenShift lab", s.Name)
	}
	if f.RehearsalOnly && !s.Rehearsal() {
		return fmt.Errorf("lab %s is not a rehearsal lab (openshift.manualBootstrap on a probe lab): %s", s.Name, f.rehearsalWhy)
	}
	return nil
}

// Fault names.
const (
	FaultAPIIntWrongAddress = "api-int-wrong-address"
	FaultLBNoBootstrapMCS   = "lb-no-bootstrap-mcs"
	FaultCSRApprovalStopped = "csr-approval-stopped"
	// FaultMCSBlockedFromMasters and FaultEtcdPeerBlocked are port blocks
	// (faults_ports.go).
	FaultMCSBlockedFromMasters = "mcs-blocked-from-masters"
	FaultEtcdPeerBlocked       = "etcd-peer-blocked"
	// FaultPowerCycleMaster resets the first master's VM (issue 56's
	// reset, as a pulled plug); nothing to undo: the node comes back.
	FaultPowerCycleMaster = "power-cycle-master"
)

// Faults is the catalogue.
func Faults() []Fault {
	return []Fault{
		{Name: FaultAPIIntWrongAddress, What: "the lab's DNS (libvirt's dnsmasq) answers api-int with an address no load balancer listens on",
			Bites: "the masters' pointer Ignition (https://api-int:22623/config/master) never answers, so they never get their config; the kubelets and etcd operator that dial api-int later",
			Check: "api.dns", Fix: "bootlab lab verify names the record (dns api-int...: resolves to X, expected Y); fix it with virsh net-update, or bootlab lab up, which puts the spec's records back"},
		{Name: FaultLBNoBootstrapMCS, What: "the load balancer's machine-config frontend (22623) has no server for the bootstrap",
			Bites: "stage 12 (mco-bootstrap): the bootstrap's MCS starts, but the masters fetching api-int:22623 reach no server until the masters serve it themselves, which needs their config",
			Check: "api.lb", Fix: "bootlab lab status shows 22623 without the bootstrap; bootlab lab up renders haproxy.cfg from the spec again and reloads it"},
		{Name: FaultCSRApprovalStopped, What: "the bootstrap's approve-csr.service is stopped (sudo systemctl stop approve-csr.service on a rehearsal bootstrap; a reboot of the bootstrap starts it again, as the unit is enabled)",
			Bites: "stage 13 (cb-bootstrap): the masters' kubelets send their client CSRs once the API is real, nothing approves them, so no master registers as a Node and the control plane never moves to the masters",
			Check: "csr.pending", Fix: "systemctl status approve-csr.service on the bootstrap says inactive and its journal ends with Stopped; sudo systemctl start approve-csr.service there, or approve the CSRs by hand (bootlab lab approve-csrs)",
			RehearsalOnly: true, rehearsalWhy: "its bootstrap runs no approve-csr.service bootlab can reach"},
		{Name: FaultMCSBlockedFromMasters, What: "a libvirt network filter of the lab's on the bootstrap's interface drops every TCP connection to its 22623 (the masters', which come through the load balancer, and the load balancer's health checks)",
			Bites: "stage 12 (mco-bootstrap): the bootstrap's MCS serves, but nothing reaches it; the masters' pointer Ignition waits for https://api-int:22623/config/master",
			Check: "api.lb", Fix: "bootlab lab status shows the bootstrap's 22623 backend down while its MCS runs (sudo crictl ps on the bootstrap); a connection to it from the host times out: look for a firewall between them (virsh domiflist and virsh nwfilter-list on the host) and remove the rule"},
		{Name: FaultEtcdPeerBlocked, What: "a libvirt network filter of the lab's on the bootstrap's interface drops TCP 2380 (etcd's peer port) between the masters and the bootstrap, both ways",
			Bites: "stage 13 and after: the etcd operator adds each master as a learner of the bootstrap's member, which can never reach it, so no learner is promoted and the masters' etcd never votes",
			Check: "conn.masters-bootstrap.etcd", Fix: "the masters' etcd logs dial tcp <bootstrap>:2380 i/o timeout to the end: look for a firewall between them (virsh domiflist and virsh nwfilter-list on the host) and remove the rule"},
		{Name: FaultPowerCycleMaster, What: "the first master's VM is reset, as a pulled plug (a libvirt reset; nothing is shut down first); it boots again from its node disk",
			Bites: "at once, best after stage 13: the master's kube-apiserver, etcd member and kubelet are gone for about a minute (with one master the API is down), then come back on their own from what the node disk kept",
			Check: "api.lb", Fix: "bootlab lab status shows the master rebooting, then running; wait: it reports again, its etcd member is healthy (etcdctl member list) and its Node Ready again (bootlab lab kubectl -- get nodes) with nothing repaired; bootlab lab reboot MASTER --hard does the same by hand",
			RehearsalOnly: true, rehearsalWhy: "only a rehearsal master keeps a node disk to boot again from"},
	}
}

// faultByName is the catalogue's fault name.
func faultByName(name string) (Fault, error) {
	var names []string
	for _, f := range Faults() {
		if f.Name == name {
			return f, nil
		}
		names = append(names, f.Name)
	}
	return Fault{}, fmt.Errorf("no fault %q: the faults are %s (bootlab lab break --list)", name, strings.Join(names, ", "))
}

// ActiveFault is a fault set on the lab, as its record keeps it.
type ActiveFault struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
	// Undo is what undoing it needs (the record it replaced).
	Undo string `json:"undo,omitempty"`
}

// faultRecord is labdir.Faults' content.
type faultRecord struct {
	Active []ActiveFault `json:"active"`
}

// ActiveFaults are the faults set on lab s.
func ActiveFaults(s *spec.Spec) ([]ActiveFault, error) {
	data, err := os.ReadFile(labdir.Faults(s))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r faultRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s is not bootlab's record of faults (%v): remove it, and check the lab with bootlab lab up", labdir.Faults(s), err)
	}
	return r.Active, nil
}

func saveFaults(s *spec.Spec, active []ActiveFault) error {
	sort.Slice(active, func(i, j int) bool { return active[i].Name < active[j].Name })
	data, _ := json.MarshalIndent(faultRecord{Active: active}, "", "  ")
	return atomicfile.Write(labdir.Faults(s), append(data, '\n'), 0o600)
}

// FaultTarget is what setting a fault reaches: the lab's network and its
// load balancer's machine.
type FaultTarget struct {
	Networks hypervisor.Hypervisor
	Host     host.Host
	State    *labdir.State
	// Dial logs in to node n over the lab's SSH path (the faults set on
	// a node: csr-approval-stopped on the bootstrap).
	Dial func(ctx context.Context, n spec.Node) (GatherNode, func(), error)
}

// BreakFault sets fault name on lab s and records it.
func BreakFault(ctx context.Context, s *spec.Spec, t FaultTarget, name string, now time.Time) error {
	f, err := faultByName(name)
	if err != nil {
		return err
	}
	if err := f.refusal(s); err != nil {
		return err
	}
	active, err := ActiveFaults(s)
	if err != nil {
		return err
	}
	for _, a := range active {
		if a.Name == f.Name {
			return fmt.Errorf("fault %s is already set on lab %s (since %s): bootlab lab break --undo %s first", f.Name, s.Name, a.At.Format(time.RFC3339), f.Name)
		}
	}
	a := ActiveFault{Name: f.Name, At: now.UTC()}
	switch f.Name {
	case FaultAPIIntWrongAddress:
		a.Undo, err = breakAPIInt(ctx, s, t)
	case FaultLBNoBootstrapMCS:
		err = ensureLB(ctx, s, t, true)
	case FaultCSRApprovalStopped:
		err = approveCSRUnit(ctx, s, t, "stop")
	case FaultMCSBlockedFromMasters, FaultEtcdPeerBlocked:
		a.Undo, err = breakPorts(ctx, s, t, f.Name)
	case FaultPowerCycleMaster:
		err = powerCycleMaster(ctx, s, t)
	}
	if err != nil {
		return fmt.Errorf("break %s: %w", f.Name, err)
	}
	return saveFaults(s, append(active, a))
}

// UndoFault undoes fault name (every set fault when name is ""), and
// returns those it undid.
func UndoFault(ctx context.Context, s *spec.Spec, t FaultTarget, name string) ([]string, error) {
	active, err := ActiveFaults(s)
	if err != nil {
		return nil, err
	}
	if name != "" {
		if _, err := faultByName(name); err != nil {
			return nil, err
		}
	}
	var undone []string
	var keep []ActiveFault
	for _, a := range active {
		if name != "" && a.Name != name {
			keep = append(keep, a)
			continue
		}
		var err error
		switch a.Name {
		case FaultAPIIntWrongAddress:
			err = undoAPIInt(ctx, s, t, a.Undo)
		case FaultLBNoBootstrapMCS:
			err = ensureLB(ctx, s, t, false)
		case FaultCSRApprovalStopped:
			err = approveCSRUnit(ctx, s, t, "start")
		case FaultMCSBlockedFromMasters, FaultEtcdPeerBlocked:
			err = undoPorts(ctx, s, t, a.Name, a.Undo)
		case FaultPowerCycleMaster:
			// The reset is over once done: the node boots on its own.
		}
		if err != nil {
			_ = saveFaults(s, append(keep, active[len(undone)+len(keep):]...))
			return undone, fmt.Errorf("undo %s: %w", a.Name, err)
		}
		undone = append(undone, a.Name)
	}
	if name != "" && len(undone) == 0 {
		return nil, fmt.Errorf("fault %s is not set on lab %s", name, s.Name)
	}
	return undone, saveFaults(s, keep)
}

// apiHostXML is the lab network's DNS host record of addr with names.
func apiHostXML(addr string, names ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<host ip='%s'>", addr)
	for _, n := range names {
		fmt.Fprintf(&b, "<hostname>%s</hostname>", n)
	}
	b.WriteString("</host>")
	return b.String()
}

// wrongAddress is an address of the lab's subnet that no node and no
// listener of the lab has: the last one before the broadcast.
func wrongAddress(s *spec.Spec) (string, error) {
	p, err := netip.ParsePrefix(s.Network.CIDR)
	if err != nil {
		return "", fmt.Errorf("network.cidr %q: %v", s.Network.CIDR, err)
	}
	used := map[string]bool{s.Network.APIAddress: true, s.Network.IngressAddress: true, s.Network.Gateway: true}
	for _, n := range s.Nodes {
		used[n.IP] = true
	}
	a := p.Masked().Addr()
	var last netip.Addr
	for x := a.Next(); p.Contains(x); x = x.Next() {
		if p.Contains(x.Next()) && !used[x.String()] {
			last = x
		}
	}
	if !last.IsValid() {
		return "", fmt.Errorf("network %s has no free address to point api-int at", s.Network.CIDR)
	}
	return last.String(), nil
}

// breakAPIInt points api-int at a wrong address: the API host record
// (api and api-int on the API address, as the plan defines it) is
// replaced by one for api and one for api-int. It returns the wrong
// address (what undo removes).
func breakAPIInt(ctx context.Context, s *spec.Spec, t FaultTarget) (string, error) {
	wrong, err := wrongAddress(s)
	if err != nil {
		return "", err
	}
	domain := s.Cluster.Domain()
	net := s.NetworkName()
	steps := []hypervisor.NetworkEdit{
		{Delete: true, Section: hypervisor.NetworkDNSHost, XML: apiHostXML(s.Network.APIAddress, "api."+domain, "api-int."+domain)},
		{Section: hypervisor.NetworkDNSHost, XML: apiHostXML(s.Network.APIAddress, "api."+domain)},
		{Section: hypervisor.NetworkDNSHost, XML: apiHostXML(wrong, "api-int."+domain)},
	}
	for _, e := range steps {
		if err := t.Networks.UpdateNetwork(ctx, net, e); err != nil {
			return "", err
		}
	}
	return wrong, nil
}

// undoAPIInt puts the plan's API host record back.
func undoAPIInt(ctx context.Context, s *spec.Spec, t FaultTarget, wrong string) error {
	domain := s.Cluster.Domain()
	net := s.NetworkName()
	steps := []hypervisor.NetworkEdit{
		{Delete: true, Section: hypervisor.NetworkDNSHost, XML: apiHostXML(wrong, "api-int."+domain)},
		{Delete: true, Section: hypervisor.NetworkDNSHost, XML: apiHostXML(s.Network.APIAddress, "api."+domain)},
		{Section: hypervisor.NetworkDNSHost, XML: apiHostXML(s.Network.APIAddress, "api."+domain, "api-int."+domain)},
	}
	for _, e := range steps {
		if err := t.Networks.UpdateNetwork(ctx, net, e); err != nil {
			return err
		}
	}
	return nil
}

// ensureLB renders the lab's haproxy as the spec has it, without the
// bootstrap on 22623 when broken, and reloads it.
func ensureLB(ctx context.Context, s *spec.Spec, t FaultTarget, broken bool) error {
	removed := t.State != nil && t.State.BootstrapRemoved
	c := loadbalancer.LabConfigOn(t.Host, s, removed)
	if broken {
		c = WithoutBootstrapMCS(c, s)
	}
	_, err := loadbalancer.Ensure(ctx, c, nil)
	return err
}

// WithoutBootstrapMCS is c with the bootstrap's server taken out of the
// machine-config frontend.
func WithoutBootstrapMCS(c loadbalancer.Config, s *spec.Spec) loadbalancer.Config {
	boot := map[string]bool{}
	for _, n := range s.NodesByRole(spec.RoleBootstrap) {
		boot[n.Name] = true
	}
	fes := make([]loadbalancer.Frontend, len(c.Frontends))
	for i, fe := range c.Frontends {
		fes[i] = fe
		if fe.Port != loadbalancer.PortMachineConfig {
			continue
		}
		fes[i].Servers = nil
		for _, srv := range fe.Servers {
			if !boot[srv.Name] {
				fes[i].Servers = append(fes[i].Servers, srv)
			}
		}
	}
	c.Frontends = fes
	return c
}

// approveCSRCommand is what csr-approval-stopped runs on the bootstrap, as
// a person would: the systemctl stand-in asks the agent, which runs the
// unit (internal/guestcluster/units).
func approveCSRCommand(verb string) string {
	return "sudo -n systemctl " + verb + " approve-csr.service"
}

// approveCSRUnit stops or starts approve-csr.service on the lab's
// bootstrap over its SSH path. Only a rehearsal bootstrap has the unit
// as a stand-in bootlab can reach; once the bootstrap is removed there
// is nothing to start again.
func approveCSRUnit(ctx context.Context, s *spec.Spec, t FaultTarget, verb string) error {
	boots := s.NodesByRole(spec.RoleBootstrap)
	if len(boots) == 0 {
		return fmt.Errorf("lab %s has no bootstrap node", s.Name)
	}
	if t.State != nil && t.State.BootstrapRemoved {
		if verb == "start" {
			return nil
		}
		return fmt.Errorf("the bootstrap of lab %s was removed by bootlab lab pivot: it has no approve-csr.service to stop", s.Name)
	}
	if t.Dial == nil {
		return fmt.Errorf("no way to log in to %s", boots[0].Name)
	}
	n, done, err := t.Dial(ctx, boots[0])
	if err != nil {
		return err
	}
	defer done()
	cmd := approveCSRCommand(verb)
	code, stderr, err := n.Run(ctx, cmd, io.Discard)
	if err != nil {
		return fmt.Errorf("%s on %s: %w", cmd, boots[0].Name, err)
	}
	if code != 0 {
		return fmt.Errorf("%s on %s exited %d: %s", cmd, boots[0].Name, code, strings.TrimSpace(stderr))
	}
	return nil
}

// powerCycleMaster resets the lab's first master (ResetNode: the reset
// recorded, so status shows it rebooting until it reports again); a
// rehearsal lab's (Fault.refusal).
func powerCycleMaster(ctx context.Context, s *spec.Spec, t FaultTarget) error {
	masters := s.NodesByRole(spec.RoleMaster)
	if len(masters) == 0 {
		return fmt.Errorf("lab %s has no master", s.Name)
	}
	return ResetNode(ctx, t.Networks, s, masters[0])
}
