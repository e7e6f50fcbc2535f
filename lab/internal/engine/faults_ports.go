package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"
)

// The port blocks: a libvirt network filter (nwfilter) of the lab's own,
// attached to the bootstrap domain's interface, drops the fault's TCP
// connections at the host's bridge (ebtables), in both the running domain
// and its persistent definition. Undo detaches it and removes it.

// The ports the blocks drop: the machine config server's and etcd's peer
// port (the bootstrap guide's connections that must work during bootstrap:
// masters -> bootstrap 22623 and 2379-2380).
const (
	portMCS      = 22623
	portEtcdPeer = 2380
)

// filterName is the lab's filter of fault name: the lab's name in it, as
// the lab's domains and network carry it, and the port it drops, not the
// fault's name: a learner who lists the host's filters finds what it
// does, never what the trainer called it.
func filterName(s *spec.Spec, fault string) string {
	port := portMCS
	if fault == FaultEtcdPeerBlocked {
		port = portEtcdPeer
	}
	return fmt.Sprintf("bootlab-%s-drop-%d", s.Name, port)
}

// portFilter is the <filter> of a port-block fault on lab s. Its rules
// are ebtables' (the ip protocol), which act on the bridge without the
// host's bridge-netfilter: "in" is traffic to the bootstrap, "out" from it.
func portFilter(s *spec.Spec, fault string) (string, error) {
	var rules []*libvirtxml.NWFilterRule
	// In decimal, as virsh shows them (a Uint field marshals in hex).
	port := func(p int) libvirtxml.NWFilterField { return libvirtxml.NWFilterField{Str: fmt.Sprint(p)} }
	switch fault {
	case FaultMCSBlockedFromMasters:
		// Every connection to 22623: the masters reach it through the
		// load balancer (from the host's address), as on a real cluster.
		rules = append(rules, &libvirtxml.NWFilterRule{Action: "drop", Direction: "in", Priority: 100,
			IP: &libvirtxml.NWFilterRuleIP{Protocol: libvirtxml.NWFilterField{Str: "tcp"}, NWFilterRuleCommonPort: libvirtxml.NWFilterRuleCommonPort{DstPortStart: port(portMCS)}}})
	case FaultEtcdPeerBlocked:
		for _, m := range s.NodesByRole(spec.RoleMaster) {
			rules = append(rules,
				&libvirtxml.NWFilterRule{Action: "drop", Direction: "in", Priority: 100,
					IP: &libvirtxml.NWFilterRuleIP{SrcIPAddr: libvirtxml.NWFilterField{Str: m.IP}, Protocol: libvirtxml.NWFilterField{Str: "tcp"},
						NWFilterRuleCommonPort: libvirtxml.NWFilterRuleCommonPort{DstPortStart: port(portEtcdPeer)}}},
				&libvirtxml.NWFilterRule{Action: "drop", Direction: "out", Priority: 100,
					IP: &libvirtxml.NWFilterRuleIP{DstIPAddr: libvirtxml.NWFilterField{Str: m.IP}, Protocol: libvirtxml.NWFilterField{Str: "tcp"},
						NWFilterRuleCommonPort: libvirtxml.NWFilterRuleCommonPort{DstPortStart: port(portEtcdPeer)}}})
		}
		if len(rules) == 0 {
			return "", fmt.Errorf("lab %s has no master: nothing to block 2380 from", s.Name)
		}
	default:
		return "", fmt.Errorf("%s is no port block", fault)
	}
	f := libvirtxml.NWFilter{Name: filterName(s, fault), Chain: "root"}
	for _, r := range rules {
		f.Entries = append(f.Entries, libvirtxml.NWFilterEntry{Rule: r})
	}
	return f.Marshal()
}

// bootstrapInterface is the bootstrap domain's interface on the lab's
// network, with the domain's name.
func bootstrapInterface(ctx context.Context, s *spec.Spec, hv hypervisor.Hypervisor) (string, libvirtxml.DomainInterface, error) {
	boots := s.NodesByRole(spec.RoleBootstrap)
	if len(boots) == 0 {
		return "", libvirtxml.DomainInterface{}, fmt.Errorf("lab %s has no bootstrap node", s.Name)
	}
	name := s.DomainName(boots[0])
	o, err := hv.LookupDomain(ctx, name)
	if err != nil {
		return "", libvirtxml.DomainInterface{}, err
	}
	var d libvirtxml.Domain
	if err := d.Unmarshal(o.XML); err != nil {
		return "", libvirtxml.DomainInterface{}, fmt.Errorf("read domain %s: %w", name, err)
	}
	if d.Devices != nil {
		for _, i := range d.Devices.Interfaces {
			if i.Source != nil && i.Source.Network != nil && i.Source.Network.Network == s.NetworkName() {
				return name, i, nil
			}
		}
	}
	return "", libvirtxml.DomainInterface{}, fmt.Errorf("domain %s has no interface on network %s: rebuild it with bootlab lab up", name, s.NetworkName())
}

// breakPorts defines the fault's filter and references it from the
// bootstrap's interface. It returns the filter's UUID, which undo checks
// before removing it: bootlab removes only the filter it made.
func breakPorts(ctx context.Context, s *spec.Spec, t FaultTarget, fault string) (string, error) {
	if t.State != nil && t.State.BootstrapRemoved {
		return "", fmt.Errorf("the bootstrap of lab %s was removed by bootlab lab pivot: there is no connection to it left to block", s.Name)
	}
	hv := t.Networks
	dom, iface, err := bootstrapInterface(ctx, s, hv)
	if err != nil {
		return "", err
	}
	if iface.FilterRef != nil {
		return "", fmt.Errorf("domain %s's interface already references network filter %s: undo the fault that set it first (bootlab lab break --list)", dom, iface.FilterRef.Filter)
	}
	name := filterName(s, fault)
	if _, err := hv.LookupFilter(ctx, name); err == nil {
		return "", fmt.Errorf("a network filter %s already exists and this lab's record does not say it made it: remove it yourself (virsh nwfilter-undefine %s) if it is a leftover", name, name)
	} else if !errors.Is(err, hypervisor.ErrNotFound) {
		return "", err
	}
	x, err := portFilter(s, fault)
	if err != nil {
		return "", err
	}
	o, err := hv.DefineFilter(ctx, x)
	if err != nil {
		return "", err
	}
	iface.FilterRef = &libvirtxml.DomainInterfaceFilterRef{Filter: name}
	ix, err := iface.Marshal()
	if err == nil {
		err = hv.UpdateDomainInterface(ctx, dom, ix)
	}
	if err != nil {
		_ = hv.UndefineFilter(ctx, name)
		return "", err
	}
	return o.UUID, nil
}

// undoPorts detaches the fault's filter from the bootstrap's interface and
// removes it, when it is the one bootlab defined (its UUID is uuid).
func undoPorts(ctx context.Context, s *spec.Spec, t FaultTarget, fault, uuid string) error {
	hv := t.Networks
	name := filterName(s, fault)
	dom, iface, err := bootstrapInterface(ctx, s, hv)
	switch {
	case errors.Is(err, hypervisor.ErrNotFound):
		// The bootstrap is gone (pivot): nothing references the filter.
	case err != nil:
		return err
	case iface.FilterRef != nil && iface.FilterRef.Filter == name:
		iface.FilterRef = nil
		ix, err := iface.Marshal()
		if err != nil {
			return err
		}
		if err := hv.UpdateDomainInterface(ctx, dom, ix); err != nil {
			return err
		}
	}
	o, err := hv.LookupFilter(ctx, name)
	if errors.Is(err, hypervisor.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !strings.EqualFold(o.UUID, uuid) {
		return fmt.Errorf("network filter %s is not the one bootlab defined (uuid %s, recorded %s): left alone", name, o.UUID, uuid)
	}
	return hv.UndefineFilter(ctx, name)
}

// portFaultsSet are the port-block faults the record of lab s holds.
func portFaultsSet(s *spec.Spec) []ActiveFault {
	active, _ := ActiveFaults(s)
	var out []ActiveFault
	for _, a := range active {
		if a.Name == FaultMCSBlockedFromMasters || a.Name == FaultEtcdPeerBlocked {
			out = append(out, a)
		}
	}
	return out
}

// removeFaultFilters is lab down's step for the port blocks still set:
// once the domains are gone no interface references their filters, and
// each is removed when it is the one bootlab defined.
func (r *labRun) removeFaultFilters(ctx context.Context) (string, error) {
	n := 0
	for _, a := range portFaultsSet(r.s) {
		name := filterName(r.s, a.Name)
		o, err := r.hv.LookupFilter(ctx, name)
		if errors.Is(err, hypervisor.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", err
		}
		if !strings.EqualFold(o.UUID, a.Undo) {
			r.log.Warn("a network filter of this lab's fault's name is not the one bootlab defined: left alone", "filter", name)
			continue
		}
		if err := r.hv.UndefineFilter(ctx, name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			return "", err
		}
		n++
	}
	if n == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d removed", n), nil
}
