package preflight

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"
)

// HostRoute is one IPv4 route of the host.
type HostRoute struct {
	Prefix netip.Prefix
	Dev    string
}

// HostRoutes reads the host's IPv4 routes from /proc/net/route.
func HostRoutes() ([]HostRoute, error) {
	data, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return nil, fmt.Errorf("read host routes: %w", err)
	}
	return parseProcRoutes(string(data))
}

func parseProcRoutes(text string) ([]HostRoute, error) {
	var out []HostRoute
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 8 {
			continue
		}
		dst, err1 := strconv.ParseUint(f[1], 16, 32)
		mask, err2 := strconv.ParseUint(f[7], 16, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("parse /proc/net/route line %q", line)
		}
		// The kernel prints these in host (little-endian) byte order.
		a := netip.AddrFrom4([4]byte{byte(dst), byte(dst >> 8), byte(dst >> 16), byte(dst >> 24)})
		bits := 0
		for m := uint32(mask); m != 0; m >>= 1 {
			bits += int(m & 1)
		}
		out = append(out, HostRoute{Prefix: netip.PrefixFrom(a, bits), Dev: f[0]})
	}
	return out, nil
}

// ValidateHost checks the spec against the host: the lab network must not
// overlap a host route (other than the default route and the lab's own
// bridge) or another libvirt network. The lab's own network is ignored, so a
// second `up` passes.
func ValidateHost(s *spec.Spec, routes []HostRoute, nets []hypervisor.NetworkInfo) error {
	var list []spec.FieldError
	add := func(field, format string, args ...any) {
		list = append(list, spec.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	prefix, err := netip.ParsePrefix(s.Network.CIDR)
	if err != nil {
		return nil // Validate reports it
	}
	for _, n := range nets {
		if n.Name == s.NetworkName() {
			continue
		}
		if n.Bridge == s.Network.Bridge {
			add("network.bridge", "%s is already the bridge of libvirt network %q: choose another bridge or lab name", n.Bridge, n.Name)
		}
		for _, p := range n.Prefixes {
			if p.Overlaps(prefix) {
				add("network.cidr", "%s overlaps libvirt network %q (%s): choose a free range, e.g. with --cidr", prefix, n.Name, p)
			}
		}
	}
	for _, r := range routes {
		if r.Prefix.Bits() == 0 || r.Dev == s.Network.Bridge {
			continue
		}
		if r.Prefix.Overlaps(prefix) {
			add("network.cidr", "%s overlaps the host route %s on %s: choose a free range, e.g. with --cidr", prefix, r.Prefix, r.Dev)
		}
	}
	if len(list) == 0 {
		return nil
	}
	return &spec.ValidationError{Errs: list}
}

// hostInterfaces reads the names of the host's network interfaces from
// /proc/net/dev ("  eth0: 123 ..." after two header lines).
func hostInterfaces(readFile func(string) ([]byte, error)) ([]string, error) {
	data, err := readFile("/proc/net/dev")
	if err != nil {
		return nil, fmt.Errorf("read host interfaces: %w", err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if name = strings.TrimSpace(name); ok && name != "" && !strings.Contains(name, "|") {
			out = append(out, name)
		}
	}
	return out, nil
}

// ValidateBridge refuses a network.bridge that is already an interface of
// the host and not the bridge of this lab's own libvirt network: libvirt
// would fail to create it, or worse, a lab would be wired into the host's
// uplink (bridge: eth0).
func ValidateBridge(s *spec.Spec, ifaces []string, nets []hypervisor.NetworkInfo) error {
	for _, n := range nets {
		if n.Name == s.NetworkName() && n.Bridge == s.Network.Bridge {
			return nil // this lab's own bridge: a second up
		}
	}
	for _, name := range ifaces {
		if name == s.Network.Bridge {
			return &spec.ValidationError{Errs: []spec.FieldError{{Field: "network.bridge",
				Msg: fmt.Sprintf("%s is already an interface of this host and not this lab's bridge: leave network.bridge out (bootlab names one) or choose a name no interface has (ip -br link)", name)}}}
		}
	}
	return nil
}
