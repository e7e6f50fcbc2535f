package plan

import (
	"fmt"
	"net/netip"

	"github.com/bootlab/bootlab/lab/spec"

	"libvirt.org/go/libvirtxml"
)

func networkXML(s *spec.Spec) (string, error) {
	prefix, err := netip.ParsePrefix(s.Network.CIDR)
	if err != nil {
		return "", fmt.Errorf("plan network: network.cidr: %w", err)
	}
	prefix = prefix.Masked()
	start, end := dhcpRange(prefix)
	domain := s.Cluster.Domain()
	n := &libvirtxml.Network{
		Name: s.NetworkName(),
		// No spanning tree: the lab's bridge holds only its VMs' taps, one
		// each, so it has no loop to break, and with STP on the kernel
		// holds every new port 4 s in listening and learning (its least
		// forward delay is 2 s, whatever delay libvirt asks for): the
		// network was dead for the first 4 s of every boot and of every
		// checkpoint restore (QEMU starts again, with a new tap).
		Bridge: &libvirtxml.NetworkBridge{Name: s.Network.Bridge, STP: "off", Delay: "0"},
		Domain: &libvirtxml.NetworkDomain{Name: domain, LocalOnly: "yes"},
		DNS:    &libvirtxml.NetworkDNS{},
		IPs: []libvirtxml.NetworkIP{{
			Address: s.Network.Gateway,
			Prefix:  uint(prefix.Bits()),
			DHCP: &libvirtxml.NetworkDHCP{
				Ranges: []libvirtxml.NetworkDHCPRange{{Start: start, End: end}},
			},
		}},
		DnsmasqOptions: &libvirtxml.NetworkDnsmasqOptions{Option: []libvirtxml.NetworkDnsmasqOption{
			{Value: "address=/apps." + domain + "/" + s.Network.IngressAddress},
		}},
	}
	if s.Network.Mode == spec.NetworkNAT {
		n.Forward = &libvirtxml.NetworkForward{Mode: "nat"}
	}
	n.DNS.Host = append(n.DNS.Host, libvirtxml.NetworkDNSHost{
		IP: s.Network.APIAddress,
		Hostnames: []libvirtxml.NetworkDNSHostHostname{
			{Hostname: "api." + domain}, {Hostname: "api-int." + domain},
		},
	})
	for _, node := range s.Nodes {
		n.DNS.Host = append(n.DNS.Host, libvirtxml.NetworkDNSHost{
			IP:        node.IP,
			Hostnames: []libvirtxml.NetworkDNSHostHostname{{Hostname: s.FQDN(node)}},
		})
		n.IPs[0].DHCP.Hosts = append(n.IPs[0].DHCP.Hosts, libvirtxml.NetworkDHCPHost{
			MAC: node.MAC, Name: node.Name, IP: node.IP,
		})
	}
	x, err := n.Marshal()
	if err != nil {
		return "", fmt.Errorf("plan network %s: %w", n.Name, err)
	}
	return x, nil
}

// dhcpRange is the upper half of the prefix (reservations sit low, from .10).
func dhcpRange(p netip.Prefix) (string, string) {
	bits := p.Addr().BitLen() - p.Bits()
	size := 1 << bits
	if bits > 16 {
		size = 1 << 16
	}
	start := spec.NthHost(p, size/2)
	end := spec.NthHost(p, size-2)
	return start, end
}

func poolXML(s *spec.Spec) (string, error) {
	p := &libvirtxml.StoragePool{
		Type:   "dir",
		Name:   s.PoolName(),
		Target: &libvirtxml.StoragePoolTarget{Path: s.Storage.PoolDir},
	}
	x, err := p.Marshal()
	if err != nil {
		return "", fmt.Errorf("plan pool %s: %w", p.Name, err)
	}
	return x, nil
}
