package preflight

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// checkLoadBalancer renders the lab's haproxy.cfg, has haproxy check it, and
// makes sure no other program already listens on its ports.
func checkLoadBalancer(ctx context.Context, s *spec.Spec, h HostFacts, machine host.Host) check.Result {
	c := check.Result{Name: CheckLB, State: check.StateFailed}
	cfg := loadbalancer.LabConfigOn(machine, s, false)
	data, err := loadbalancer.Render(cfg)
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "fix the spec field named above (labDir, network.apiAddress, network.ingressAddress or the node list)"
		return c
	}
	if bin, err := h.LookPath("haproxy"); err == nil {
		if tmp, remove, err := h.WriteTemp(data); err == nil {
			defer remove()
			if err := h.HAProxyCheck(ctx, bin, tmp); err != nil {
				c.Detail = err.Error()
				c.Fix = "report this as a bootlab bug: the rendered haproxy.cfg is invalid for this haproxy version"
				return c
			}
		}
	}
	if st, err := loadbalancer.Inspect(ctx, cfg); err == nil && st.Running {
		c.State = check.StatePassed
		c.Detail = fmt.Sprintf("haproxy.cfg valid; this lab's haproxy (pid %d) already holds its ports", st.PID)
		return c
	}
	listeners, err := h.Listeners()
	if err != nil {
		c.State = check.StateWarning
		c.Detail = "haproxy.cfg valid; listening ports not checked: " + err.Error()
		return c
	}
	// An IPv4 wildcard or exact listener blocks haproxy's bind. An IPv6
	// wildcard blocks it only when dual-stack, which /proc does not show.
	var busy, maybe []string
	for _, want := range lbBinds(cfg) {
		for _, l := range listeners {
			if l.Port() != want.Port() {
				continue
			}
			switch {
			case l.Addr() == want.Addr() || (l.Addr().Is4() && l.Addr().IsUnspecified()):
				busy = append(busy, fmt.Sprintf("%d (listening on %s)", want.Port(), l))
			case l.Addr().Is6() && l.Addr().IsUnspecified():
				maybe = append(maybe, fmt.Sprintf("%d (listening on %s)", want.Port(), l))
			default:
				continue
			}
			break
		}
	}
	fix := "stop what listens there (`ss -ltnp` names it), or, for another bootlab lab, `bootlab lab down --name <lab>`"
	if len(busy) > 0 {
		c.Detail = "ports the load balancer needs are taken: " + strings.Join(busy, ", ")
		c.Fix = fix
		return c
	}
	c.State = check.StatePassed
	c.Detail = fmt.Sprintf("haproxy.cfg valid; ports free on %s", cfg.BindAddress)
	if len(maybe) > 0 {
		c.State = check.StateWarning
		c.Detail = "haproxy.cfg valid; an IPv6 wildcard listener may hold ports the load balancer needs (unless IPV6_V6ONLY): " + strings.Join(maybe, ", ")
		c.Fix = fix
	}
	return c
}

// lbBinds lists every address:port the load balancer listens on.
func lbBinds(c loadbalancer.Config) []netip.AddrPort {
	api, _ := netip.ParseAddr(c.BindAddress)
	out := []netip.AddrPort{netip.AddrPortFrom(api, uint16(c.StatsPort))}
	for _, f := range c.Frontends {
		a := api
		if f.Address != "" {
			a, _ = netip.ParseAddr(f.Address)
		}
		out = append(out, netip.AddrPortFrom(a, uint16(f.Port)))
	}
	return out
}

// tcpListeners reads the listening TCP sockets from /proc/net/tcp{,6}.
func tcpListeners(readFile func(string) ([]byte, error)) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := readFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		l, err := parseProcTCP(string(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, l...)
	}
	return out, nil
}

// parseProcTCP returns the local addresses of sockets in state LISTEN (0A).
// Addresses are hex, in 32-bit words of host (little-endian) byte order.
func parseProcTCP(text string) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 4 || f[3] != "0A" {
			continue
		}
		hexAddr, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			return nil, fmt.Errorf("bad local address %q", f[1])
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("bad port in %q", f[1])
		}
		var raw []byte
		for w := 0; w+8 <= len(hexAddr); w += 8 {
			v, err := strconv.ParseUint(hexAddr[w:w+8], 16, 32)
			if err != nil {
				return nil, fmt.Errorf("bad address in %q", f[1])
			}
			raw = append(raw, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
		a, ok := netip.AddrFromSlice(raw)
		if !ok {
			return nil, fmt.Errorf("bad address length in %q", f[1])
		}
		out = append(out, netip.AddrPortFrom(a.Unmap(), uint16(port)))
	}
	return out, nil
}
