package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// Status is what `lab status` reports.
type Status struct {
	Name         string               `json:"name"`
	URI          string               `json:"uri"`
	Accelerator  spec.Accelerator     `json:"accelerator,omitempty"`
	Network      NetworkStatus        `json:"network"`
	DNS          []DNSRecord          `json:"dns"`
	LoadBalancer *loadbalancer.Status `json:"loadBalancer,omitempty"`
	// LoadBalancerError says why the load balancer could not be inspected.
	LoadBalancerError string       `json:"loadBalancerError,omitempty"`
	Nodes             []NodeStatus `json:"nodes"`
}

// NetworkStatus is the lab network as libvirt has it.
type NetworkStatus struct {
	Name    string `json:"name"`
	Exists  bool   `json:"exists"`
	Active  bool   `json:"active"`
	Bridge  string `json:"bridge,omitempty"`
	Gateway string `json:"gateway,omitempty"`
}

// DNSRecord is one name the lab network's dnsmasq answers.
type DNSRecord struct {
	Name string `json:"name"`
	IP   string `json:"ip"`
}

// NodeStatus is one node's domain.
type NodeStatus struct {
	Name   string    `json:"name"`
	Role   spec.Role `json:"role"`
	Domain string    `json:"domain"`
	// State is "running", "paused", "shut off" or "absent"; a probe
	// node's agent taking it down makes it "rebooting", "powering off" or
	// "halting" until it boots again.
	State string `json:"state"`
	MAC   string `json:"mac"`
	// IP is the address leased by DHCP ("" when the node has no lease yet).
	IP string `json:"ip,omitempty"`
	// ReservedIP is the address the spec reserves for the node.
	ReservedIP string `json:"reservedIP"`
	// Since is when the running VM started, where the host shows it (a local
	// qemu:///system keeps a pid file per running domain).
	Since time.Time `json:"since,omitzero"`
}

// consoleTail is how much of a console log's end shuttingDown reads: many
// report lines (the agent writes one every 15 s at least).
const consoleTail = 1 << 20

// lastReport is the last agent report on a probe node's console log at
// path (nil when it has none or cannot be read).
func lastReport(ctx context.Context, h host.Host, path string) *wire.Report {
	var data []byte
	if h == nil || !h.Remote() {
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Size() > consoleTail {
			_, _ = f.Seek(fi.Size()-consoleTail, io.SeekStart)
		}
		data, _ = io.ReadAll(f)
	} else {
		out, err := host.Output(ctx, h, fmt.Sprintf("tail -c %d -- %s", consoleTail, sshc.Quote(path)))
		if err != nil {
			return nil
		}
		data = []byte(out)
	}
	rep, err := wire.ParseConsole(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	return rep
}

// goingDown is what report rep says its node's agent is doing: "rebooting",
// "powering off", "halting" or "" (running, or no report).
func goingDown(rep *wire.Report) string {
	if rep == nil {
		return ""
	}
	switch rep.Shutdown {
	case "reboot":
		return "rebooting"
	case "poweroff":
		return "powering off"
	case "halt":
		return "halting"
	}
	return ""
}

// probeNodeState is a running probe node's state: what its last report
// says its agent is doing, or "rebooting" while a power reset (`lab reboot
// --hard`, reset) has not been followed by a report of its next boot.
func probeNodeState(rep *wire.Report, reset *labdir.ResetRecord, since time.Time) string {
	if going := goingDown(rep); going != "" {
		return going
	}
	if reset != nil {
		var boot time.Time
		if rep != nil {
			boot = rep.Boot
		}
		if reset.Pending(boot, since) {
			return "rebooting"
		}
	}
	return "running"
}

// qemuRunDir holds libvirt's per-domain pid files on a local qemu:///system.
var qemuRunDir = "/run/libvirt/qemu"

// domainSince is when a domain's qemu started: its pid file is written at
// start, on the hypervisor's machine (read through h for a remote system
// daemon).
func domainSince(ctx context.Context, h host.Host, uri, domain string) time.Time {
	pid := filepath.Join(qemuRunDir, domain+".pid")
	switch {
	case strings.HasPrefix(uri, "qemu:///system"):
		fi, err := os.Stat(pid)
		if err != nil {
			return time.Time{}
		}
		return fi.ModTime()
	case h.Remote() && strings.HasPrefix(uri, "qemu+ssh://") && strings.Contains(uri, "/system"):
		out, err := host.Output(ctx, h, "stat -c %Y -- "+sshc.Quote(pid))
		if err != nil {
			return time.Time{}
		}
		sec, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			return time.Time{}
		}
		return time.Unix(sec, 0)
	}
	return time.Time{}
}

// Inspect reads the lab's live state: network, DNS records, load balancer
// backends and each node's domain and lease.
func Inspect(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec) (*Status, error) {
	// Empty lists, not null, in -o json when nothing of the lab exists.
	st := &Status{Name: s.Name, URI: s.Libvirt.URI, Network: NetworkStatus{Name: s.NetworkName()}, DNS: []DNSRecord{}, Nodes: []NodeStatus{}}
	labUUID := ""
	var restored *labdir.RestoreRecord
	var resets map[string]labdir.ResetRecord
	if state, err := labdir.LoadState(s.LabDir); err == nil {
		st.Accelerator = state.Accelerator
		labUUID = state.UUID
		restored = state.Restored
		resets = state.Resets
	}
	leases, err := inspectNetwork(ctx, hv, s, st)
	if err != nil {
		return nil, err
	}
	if hv.Capabilities().HostNetwork {
		lb, err := loadbalancer.Inspect(ctx, loadbalancer.LabConfigOn(hv.Host(), s, false))
		if err != nil {
			st.LoadBalancerError = err.Error()
		} else {
			st.LoadBalancer = lb
		}
	}
	for _, n := range s.Nodes {
		var reset *labdir.ResetRecord
		if r, ok := resets[n.Name]; ok {
			reset = &r
		}
		ns, err := inspectNode(ctx, hv, s, n, labUUID, restored, reset)
		if err != nil {
			return nil, err
		}
		for _, l := range leases {
			if strings.EqualFold(l.MAC, n.MAC) {
				ns.IP = l.IP
			}
		}
		st.Nodes = append(st.Nodes, ns)
	}
	return st, nil
}

// inspectNetwork fills st's network and DNS records from the lab's libvirt
// network and returns its DHCP leases (none while it is inactive).
func inspectNetwork(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, st *Status) ([]hypervisor.Lease, error) {
	net, err := hv.LookupNetwork(ctx, s.NetworkName())
	switch {
	case errors.Is(err, hypervisor.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	st.Network.Exists, st.Network.Active = true, net.Active
	var nx libvirtxml.Network
	if err := nx.Unmarshal(net.XML); err == nil {
		networkRecords(&nx, st)
	}
	if !net.Active {
		return nil, nil
	}
	leases, err := hv.NetworkLeases(ctx, s.NetworkName())
	if err != nil && !errors.Is(err, hypervisor.ErrUnsupported) {
		return nil, err
	}
	return leases, nil
}

// networkRecords are the bridge, gateway and DNS records of network nx.
func networkRecords(nx *libvirtxml.Network, st *Status) {
	if nx.Bridge != nil {
		st.Network.Bridge = nx.Bridge.Name
	}
	if len(nx.IPs) > 0 {
		st.Network.Gateway = nx.IPs[0].Address
	}
	if nx.DNS != nil {
		for _, h := range nx.DNS.Host {
			for _, hn := range h.Hostnames {
				st.DNS = append(st.DNS, DNSRecord{Name: hn.Hostname, IP: h.IP})
			}
		}
	}
	if nx.DnsmasqOptions != nil {
		for _, o := range nx.DnsmasqOptions.Option {
			// address=/apps.<domain>/<ip> answers every name under it.
			if rest, ok := strings.CutPrefix(o.Value, "address=/"); ok {
				if name, ip, ok := strings.Cut(rest, "/"); ok {
					st.DNS = append(st.DNS, DNSRecord{Name: "*." + name, IP: ip})
				}
			}
		}
	}
}

// inspectNode is node n's domain as libvirt has it: absent, foreign (not
// this lab's, or this lab's before a rebuild), running since when, or
// shut off; a running probe node may be going down or rebooting after a
// reset (probeNodeState).
func inspectNode(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, n spec.Node, labUUID string, restored *labdir.RestoreRecord, reset *labdir.ResetRecord) (NodeStatus, error) {
	ns := NodeStatus{Name: n.Name, Role: n.Role, Domain: s.DomainName(n), State: "absent", MAC: n.MAC, ReservedIP: n.IP}
	o, err := hv.LookupDomain(ctx, ns.Domain)
	switch {
	case errors.Is(err, hypervisor.ErrNotFound):
		return ns, nil
	case err != nil:
		return ns, err
	}
	md := plan.ParseLabMetadata(o.XML)
	switch {
	case md == nil || md.Name != s.Name || md.LabUUID != "" && md.LabUUID != labUUID:
		ns.State = "foreign"
	case o.Active && o.Paused:
		// Its vCPUs stopped: an up cut short between starting its nodes
		// paused and running them (the next up runs it), or virsh suspend.
		ns.State = "paused"
	case o.Active:
		ns.State = "running"
		ns.Since = domainSince(ctx, hv.Host(), s.Libvirt.URI, ns.Domain)
		if s.Profile == spec.ProfileProbe {
			ns.State = probeNodeState(lastReport(ctx, hv.Host(), labdir.ConsoleLog(s, n)), reset, ns.Since)
		}
		if restored.Resumed(ns.Since) {
			// A checkpoint restore started this qemu with the guest's
			// memory as it was: its run began earlier, when is unknown
			// here.
			ns.Since = time.Time{}
		}
	default:
		ns.State = "shut off"
	}
	return ns, nil
}
