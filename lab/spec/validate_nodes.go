package spec

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The largest sizes a node may ask for: far past any lab host, and small
// enough that MiB and GiB counts cannot overflow when turned into bytes.
const (
	maxMemoryMiB = 1 << 20
	maxDiskGiB   = 16 << 10
)

func (s *Spec) validateNodes(e *errs, prefix netip.Prefix, prefixOK bool) {
	if len(s.Nodes) == 0 {
		e.add("nodes", "no nodes: a lab needs one bootstrap and at least one master")
		return
	}
	seen := nodesSeen{names: map[string]int{}, macs: map[string]int{}, ips: map[string]int{}}
	count := map[Role]int{}
	for i, n := range s.Nodes {
		f := func(sub string) string { return fmt.Sprintf("nodes[%d].%s", i, sub) }
		seen.name(e, f, i, n)
		switch n.Role {
		case RoleBootstrap, RoleMaster, RoleWorker:
			count[n.Role]++
		default:
			// Sizes and addresses of an unknown role were never defaulted:
			// reporting them would only bury the real mistake.
			e.add(f("role"), "unknown role %q: use bootstrap, master or worker", n.Role)
			continue
		}
		if _, known := profileSizes[s.Profile]; !known {
			continue // Validate already reported the profile
		}
		s.validateSize(e, f, n)
		seen.mac(e, f, i, n, s.Nodes)
		if !prefixOK {
			continue // addresses were derived from a CIDR that is itself wrong
		}
		if n.IP == "" {
			seen.unaddressed = append(seen.unaddressed, n.Name)
			continue // reported once below: the network is too small
		}
		seen.ip(e, f, i, n, prefix, s.Network.Gateway)
	}
	if len(seen.unaddressed) > 0 {
		larger := "a larger network, e.g. a /24, or fewer nodes"
		if prefix.Bits() <= 24 {
			larger = "fewer nodes, or list the nodes with an ip: each (derived addresses start at .10)" // not a /24: it has one
		}
		e.add("network.cidr", "%s has no free address for %d node(s) (%s, ...): use %s", prefix, len(seen.unaddressed), seen.unaddressed[0], larger)
	}

	if count[RoleBootstrap] != 1 {
		e.add("nodes", "a lab needs exactly one bootstrap node, found %d", count[RoleBootstrap])
	}
	if count[RoleMaster] == 0 {
		e.add("nodes", "zero masters: a lab needs at least one master (three for OpenShift)")
	} else if msg := mastersError(count[RoleMaster]); s.Profile == ProfileOpenShift && msg != "" {
		e.add("nodes", "%s", msg)
	}
}

// nodesSeen is what validateNodes has seen of the nodes so far: the index
// of each name, MAC and address, and the nodes left without an address.
type nodesSeen struct {
	names, macs, ips map[string]int
	unaddressed      []string
}

// name checks node i's name: a DNS label, not one of the cluster's, unique.
func (v nodesSeen) name(e *errs, f func(string) string, i int, n Node) {
	switch {
	case len(n.Name) > 63 || !labelRE.MatchString(n.Name):
		e.add(f("name"), "%q is not a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit", n.Name)
	case n.Name == "api" || n.Name == "api-int" || n.Name == "apps":
		e.add(f("name"), "%q is reserved for the cluster's own DNS names: choose another", n.Name)
	default:
		if j, dup := v.names[n.Name]; dup {
			e.add(f("name"), "%q is already used by nodes[%d]", n.Name, j)
		}
		v.names[n.Name] = i
	}
}

// mac checks node i's MAC: unicast, unique among the other nodes.
func (v nodesSeen) mac(e *errs, f func(string) string, i int, n Node, nodes []Node) {
	mac := strings.ToLower(n.MAC)
	switch {
	case !macRE.MatchString(mac):
		e.add(f("mac"), "%q is not a MAC address: use six hex pairs, e.g. 52:54:00:12:34:56", n.MAC)
	case mustHex(mac[:2])&1 == 1:
		e.add(f("mac"), "%s is a multicast address: the first byte must be even (QEMU's range is 52:54:00:...)", n.MAC)
	default:
		if j, dup := v.macs[mac]; dup && nodes[j].Name != n.Name {
			e.add(f("mac"), "%s is already used by nodes[%d]", n.MAC, j)
		}
		v.macs[mac] = i
	}
}

// ip checks node i's address: IPv4, a host of prefix, not the gateway,
// unique.
func (v nodesSeen) ip(e *errs, f func(string) string, i int, n Node, prefix netip.Prefix, gateway string) {
	a, err := netip.ParseAddr(n.IP)
	switch {
	case err != nil || !a.Is4():
		e.add(f("ip"), "%q is not an IPv4 address", n.IP)
	case !usableHost(prefix, a):
		e.add(f("ip"), "%s is outside network.cidr %s (or is its network or broadcast address)", n.IP, prefix)
	case n.IP == gateway:
		e.add(f("ip"), "%s is the gateway (the host's bridge address): choose another", n.IP)
	default:
		if j, dup := v.ips[n.IP]; dup {
			e.add(f("ip"), "%s is already used by nodes[%d]", n.IP, j)
		}
		v.ips[n.IP] = i
	}
}

// validateSize checks node n's vCPUs, memory and disk against the bounds
// and the profile's floors.
func (s *Spec) validateSize(e *errs, f func(string) string, n Node) {
	if n.VCPUs < 1 || n.VCPUs > 64 {
		e.add(f("vcpus"), "%d is out of range: use 1 to 64", n.VCPUs)
	}
	if n.MemoryMiB > maxMemoryMiB {
		e.add(f("memoryMiB"), "%d MiB is more than any lab host has: use at most %d (1 TiB)", n.MemoryMiB, maxMemoryMiB)
	} else if floor := MinMemoryMiB(s.Profile, n.Role); n.MemoryMiB < floor {
		e.add(f("memoryMiB"), "%d MiB is below the %s profile's floor of %d MiB for a %s", n.MemoryMiB, s.Profile, floor, n.Role)
	} else if n.Role == RoleBootstrap && s.Rehearsal() && n.MemoryMiB < RehearsalBootstrapMinMemoryMiB {
		e.add(f("memoryMiB"), "%d MiB is too little for a rehearsal bootstrap (openshift.manualBootstrap on a probe lab runs real etcd and the bootstrap control plane): give it at least %d MiB, or leave memoryMiB out for %d", n.MemoryMiB, RehearsalBootstrapMinMemoryMiB, RehearsalBootstrapMemoryMiB)
	}
	if n.DiskGiB > maxDiskGiB {
		e.add(f("diskGiB"), "%d GiB is more than a lab disk needs: use at most %d (16 TiB)", n.DiskGiB, maxDiskGiB)
	} else if floor := minDiskGiB(s.Profile); n.DiskGiB < floor {
		e.add(f("diskGiB"), "%d GiB is below the %s profile's floor of %d GiB", n.DiskGiB, s.Profile, floor)
	}
}

func minDiskGiB(p Profile) int {
	if p == ProfileOpenShift {
		return 100
	}
	return 1
}

func mustHex(s string) int {
	v, _ := strconv.ParseUint(s, 16, 8)
	return int(v)
}
