package engine

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/labdir"
)

// ownedNetwork checks that an existing network called like ours is ours:
// its UUID is the one recorded in the lab state.
func (r *labRun) ownedNetwork(o *hypervisor.Object) error {
	if r.state.NetworkUUID == o.UUID {
		return nil
	}
	return fmt.Errorf("network %s exists but this lab did not create it (UUID %s, lab state has %q): remove it (`virsh net-destroy %[1]s; virsh net-undefine %[1]s`) or choose another lab name", o.Name, o.UUID, r.state.NetworkUUID)
}

// networkWithUUID is the network definition x with a UUID of its own (a
// new one unless x has one), and that UUID.
func networkWithUUID(x string) (string, string, error) {
	var n libvirtxml.Network
	if err := n.Unmarshal(x); err != nil {
		return "", "", fmt.Errorf("network definition: %w", err)
	}
	if n.UUID == "" {
		n.UUID = labdir.NewLabUUID()
	}
	out, err := n.Marshal()
	return out, n.UUID, err
}

func (r *labRun) ensureNetwork(ctx context.Context, want plan.NamedXML) (string, error) {
	var did []string
	o, err := r.hv.LookupNetwork(ctx, want.Name)
	switch {
	case errors.Is(err, hypervisor.ErrNotFound):
		x, id, err := networkWithUUID(want.XML)
		if err != nil {
			return "", err
		}
		// Recorded before the define: one whose answer is lost (the host
		// gone mid-call) leaves a network the next up knows is this lab's.
		if err := r.record(func(st *labdir.State) { st.NetworkUUID = id }); err != nil {
			return "", err
		}
		o, err = r.hv.DefineNetwork(ctx, x)
		if err != nil {
			return "", err
		}
		if err := r.record(func(st *labdir.State) { st.NetworkUUID = o.UUID }); err != nil {
			return "", err
		}
		did = append(did, "defined")
		if err := r.hv.SetNetworkAutostart(ctx, want.Name); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	default:
		if err := r.ownedNetwork(o); err != nil {
			return "", err
		}
		edits, drift, err := networkDiff(want.XML, o.XML)
		if err != nil {
			return "", err
		}
		if drift != "" {
			return "", fmt.Errorf("network %s differs from the spec in what cannot change in place (%s): run `bootlab lab down` and `bootlab lab up` to rebuild it", want.Name, drift)
		}
		for _, e := range edits {
			if err := r.hv.UpdateNetwork(ctx, want.Name, e); err != nil {
				return "", err
			}
		}
		if len(edits) > 0 {
			did = append(did, fmt.Sprintf("%d DHCP/DNS entries updated", len(edits)))
		}
	}
	if !o.Active {
		if err := r.hv.StartNetwork(ctx, want.Name); err != nil {
			return "", err
		}
		did = append(did, "started")
	}
	return strings.Join(did, ", "), nil
}

// networkDiff compares a live network with the plan. DHCP reservations and
// DNS host records that differ come back as edits, applied to the running
// network; anything else that differs (bridge, addresses, forward mode,
// domain, DHCP range, dnsmasq options) comes back as drift, which needs the
// network rebuilt.
func networkDiff(wantXML, haveXML string) (edits []hypervisor.NetworkEdit, drift string, err error) {
	var want, have libvirtxml.Network
	if err := want.Unmarshal(wantXML); err != nil {
		return nil, "", fmt.Errorf("parse planned network XML: %w", err)
	}
	if err := have.Unmarshal(haveXML); err != nil {
		return nil, "", fmt.Errorf("parse network XML from libvirt: %w", err)
	}
	// The test driver drops dnsmasq options; compare them only when kept.
	withOptions := have.DnsmasqOptions != nil
	if w, h := networkShape(&want, withOptions), networkShape(&have, withOptions); w != h {
		return nil, fmt.Sprintf("live: %sspec: %s", h, w), nil
	}
	dhcpDels, dhcpAdds, err := hostEdits(hypervisor.NetworkDHCPHost, dhcpHosts(&want), dhcpHosts(&have))
	if err != nil {
		return nil, "", err
	}
	dnsDels, dnsAdds, err := hostEdits(hypervisor.NetworkDNSHost, dnsHosts(&want), dnsHosts(&have))
	if err != nil {
		return nil, "", err
	}
	// Deletions first: a changed reservation frees its MAC and address.
	edits = append(append(dhcpDels, dnsDels...), append(dhcpAdds, dnsAdds...)...)
	return edits, "", nil
}

// networkShape is what of network n cannot be edited live: bridge,
// forward mode, domain, addresses, DHCP ranges and (withOptions) dnsmasq
// options.
func networkShape(n *libvirtxml.Network, withOptions bool) string {
	var b strings.Builder
	if n.Bridge != nil {
		fmt.Fprintf(&b, "bridge %s; ", n.Bridge.Name)
	}
	if n.Forward != nil {
		fmt.Fprintf(&b, "forward %s; ", n.Forward.Mode)
	}
	if n.Domain != nil {
		fmt.Fprintf(&b, "domain %s; ", n.Domain.Name)
	}
	for _, ip := range n.IPs {
		fmt.Fprintf(&b, "ip %s/%d; ", ip.Address, ip.Prefix)
		if ip.DHCP != nil {
			for _, r := range ip.DHCP.Ranges {
				fmt.Fprintf(&b, "range %s-%s; ", r.Start, r.End)
			}
		}
	}
	if withOptions && n.DnsmasqOptions != nil {
		for _, o := range n.DnsmasqOptions.Option {
			fmt.Fprintf(&b, "option %s; ", o.Value)
		}
	}
	return b.String()
}

// dhcpHosts are network n's DHCP reservations by MAC, name and address.
func dhcpHosts(n *libvirtxml.Network) map[string]libvirtxml.NetworkDHCPHost {
	m := map[string]libvirtxml.NetworkDHCPHost{}
	for _, ip := range n.IPs {
		if ip.DHCP == nil {
			continue
		}
		for _, h := range ip.DHCP.Hosts {
			m[strings.ToLower(h.MAC)+"|"+h.Name+"|"+h.IP] = h
		}
	}
	return m
}

// dnsHosts are network n's DNS host records by address and names.
func dnsHosts(n *libvirtxml.Network) map[string]libvirtxml.NetworkDNSHost {
	m := map[string]libvirtxml.NetworkDNSHost{}
	if n.DNS == nil {
		return m
	}
	for _, h := range n.DNS.Host {
		names := make([]string, 0, len(h.Hostnames))
		for _, hn := range h.Hostnames {
			names = append(names, hn.Hostname)
		}
		m[h.IP+"|"+strings.Join(names, ",")] = h
	}
	return m
}

// hostEdits are the live edits of section sec that turn the hosts have
// into want: deletions of those only have has, additions of those only
// want has, each in key order.
func hostEdits[V any](sec hypervisor.NetworkSection, want, have map[string]V) (dels, adds []hypervisor.NetworkEdit, err error) {
	edit := func(del bool, v V) (hypervisor.NetworkEdit, error) {
		x, err := xml.Marshal(v)
		return hypervisor.NetworkEdit{Delete: del, Section: sec, XML: string(x)}, err
	}
	for _, k := range sortedKeys(have) {
		if _, ok := want[k]; !ok {
			e, err := edit(true, have[k])
			if err != nil {
				return nil, nil, err
			}
			dels = append(dels, e)
		}
	}
	for _, k := range sortedKeys(want) {
		if _, ok := have[k]; !ok {
			e, err := edit(false, want[k])
			if err != nil {
				return nil, nil, err
			}
			adds = append(adds, e)
		}
	}
	return dels, adds, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
