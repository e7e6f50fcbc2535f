package verify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// hostChecks checks DNS, the load balancer frontends and its backends;
// reports (nil on a real lab) are the nodes' probe reports and vms their
// VMs' states, which explain a backend that is down. settling says that a
// failed backend is catching up (catchingUp): its check changes without
// anything else happening.
func hostChecks(ctx context.Context, s *spec.Spec, pivoted bool, reports map[string]*wire.Report, vms map[string]NodeVM, machine host.Host, dial DialFunc) (_ []check.Result, settling bool) {
	var out []check.Result
	domain := s.Cluster.Domain()
	net := s.NetworkName()
	names := []struct{ name, want string }{
		{"api." + domain, s.Network.APIAddress},
		{"api-int." + domain, s.Network.APIAddress},
		{"probe-" + randHex() + ".apps." + domain, s.Network.IngressAddress},
	}
	for _, n := range s.Nodes {
		names = append(names, struct{ name, want string }{s.FQDN(n), n.IP})
	}
	r := labResolver(s.Network.Gateway, dial)
	for _, nm := range names {
		start := time.Now()
		label := nm.name
		if strings.Contains(nm.name, ".apps.") {
			label = "*.apps." + domain
		}
		c := check.Result{Group: HostGroup, Name: "dns " + label, State: check.StateFailed}
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		addrs, err := r.LookupHost(lctx, nm.name)
		cancel()
		switch {
		case err != nil:
			c.Detail = fmt.Sprintf("%s via %s:53: %v", nm.name, s.Network.Gateway, err)
		case !contains(addrs, nm.want):
			c.Detail = fmt.Sprintf("%s resolves to %s, expected %s", nm.name, strings.Join(addrs, ","), nm.want)
		default:
			c.State = check.StatePassed
			c.Detail = fmt.Sprintf("%s -> %s", nm.name, strings.Join(addrs, ","))
		}
		if c.Failed() {
			c.Fix = fmt.Sprintf("the lab network's DNS (dnsmasq of libvirt network %s, see `virsh net-dumpxml %s`) must answer %s with %s: fix the record with `virsh net-update %s ... dns-host`, or rebuild with `bootlab lab down && bootlab lab up`", net, net, nm.name, nm.want, net)
		}
		c.DurationMS = time.Since(start).Milliseconds()
		out = append(out, c)
	}

	lbc := loadbalancer.LabConfigOn(machine, s, pivoted)
	start := time.Now()
	st, err := loadbalancer.Inspect(ctx, lbc)
	stats := haproxyStats{st: st, err: err, took: time.Since(start)}
	for _, fe := range lbc.Frontends {
		if c, unchecked, ok := unproven(fe, stats); ok {
			out = append(out, c)
			settling = settling || unchecked
			continue
		}
		out = append(out, frontendCheck(ctx, s, lbc, fe, pivoted, dial))
	}
	backends, moving := backendChecks(ctx, s, lbc, stats, pivoted, reports, vms, dial)
	return append(out, backends...), settling || moving
}

// noServerPassed starts the detail of a frontend check unproven fails.
const noServerPassed = "no server has passed haproxy's check yet"

// haproxyStats is what loadbalancer.Inspect said, once per pass.
type haproxyStats struct {
	st   *loadbalancer.Status
	err  error
	took time.Duration
}

// unproven fails an HTTPS frontend fe (one whose check is a request that a
// server answers) without a request when haproxy's stats say none of its
// servers has passed a check: haproxy would send the request
// to a server it has not checked yet (a VM still booting, which leaves a
// connection hanging for seconds) or to none. A pass then stays short, and
// the request is made once a server has passed. Without stats (haproxy not
// running, a frontend it does not list) the request decides. unchecked
// says a server is still to have its first check: haproxy's next checks
// change the answer by themselves.
func unproven(fe loadbalancer.Frontend, stats haproxyStats) (_ check.Result, unchecked, ok bool) {
	if fe.Check != loadbalancer.CheckReadyz && fe.Check != loadbalancer.CheckHealthz {
		// A TCP frontend's check is haproxy accepting the connection.
		return check.Result{}, false, false
	}
	if stats.err != nil || stats.st == nil || !stats.st.Running {
		return check.Result{}, false, false
	}
	var seen []string
	for _, b := range stats.st.Backends {
		if b.Frontend != fe.Name {
			continue
		}
		if b.Proven() {
			return check.Result{}, false, false
		}
		unchecked = unchecked || b.Up()
		seen = append(seen, strings.TrimSpace(b.Server+" "+b.Status+" "+b.LastCheck))
	}
	if len(seen) == 0 {
		return check.Result{}, false, false
	}
	return check.Result{Group: HostGroup, Name: fmt.Sprintf("lb %s :%d", fe.Name, fe.Port), State: check.StateFailed,
		Detail: noServerPassed + " (" + strings.Join(seen, ", ") + ")",
		Fix:    "the backend checks below say why each server fails; `bootlab lab status` shows the VMs"}, unchecked, true
}

func frontendCheck(ctx context.Context, s *spec.Spec, lbc loadbalancer.Config, fe loadbalancer.Frontend, pivoted bool, dial DialFunc) (c check.Result) {
	addr := fe.Address
	if addr == "" {
		addr = lbc.BindAddress
	}
	hp := net.JoinHostPort(addr, strconv.Itoa(fe.Port))
	c = check.Result{Group: HostGroup, Name: fmt.Sprintf("lb %s :%d", fe.Name, fe.Port), State: check.StateFailed}
	start := time.Now()
	defer func() { c.DurationMS = time.Since(start).Milliseconds() }()
	var err error
	switch fe.Check {
	case loadbalancer.CheckReadyz, loadbalancer.CheckHealthz:
		path := "/" + fe.Check
		// One request per server: haproxy round-robins new connections, so
		// on a probe lab the answering nodes show who serves behind it.
		answered := map[string]bool{}
		var body string
		for i := 0; i < max(1, len(fe.Servers)); i++ {
			var node string
			body, node, err = httpsGet(ctx, s, hp, fe.Port, path, dial)
			if err != nil {
				break
			}
			if node != "" {
				answered[node] = true
			}
		}
		if err == nil {
			c.Detail = strings.TrimSpace(fmt.Sprintf("GET https://%s%s: 200 %s", hp, path, strings.TrimSpace(body)))
			if len(answered) > 0 {
				c.Detail += ", answered by " + strings.Join(sortedKeys(answered), " ")
			}
			if pivoted && answered["bootstrap"] {
				err = fmt.Errorf("the bootstrap still answers %s after `lab pivot`", hp)
			}
		}
	default:
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		var conn net.Conn
		conn, err = dial(dctx, "tcp", hp)
		cancel()
		if err == nil {
			conn.Close()
			c.Detail = "TCP connect " + hp
		}
	}
	if err != nil {
		c.Detail = fmt.Sprintf("%s (%s): %v", hp, fe.Check, err)
		c.Fix = fmt.Sprintf("haproxy must listen on %s and have a live backend: `bootlab lab status`; `bootlab lab up` restarts haproxy (config %s)", hp, labdir.HAProxyConfig(s))
		return c
	}
	c.State = check.StatePassed
	return c
}

// httpsGet fetches path through the frontend. On a probe lab the MCS port is
// verified like a node does it: the lab CA, server name api-int.
func httpsGet(ctx context.Context, s *spec.Spec, hp string, port int, path string, dial DialFunc) (body, node string, err error) {
	tcfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the API's CA is not the host's; reachability is checked here
	if s.Profile == spec.ProfileProbe && port == loadbalancer.PortMachineConfig {
		if pool, err := labCAPool(s); err == nil {
			tcfg = &tls.Config{RootCAs: pool, ServerName: "api-int." + s.Cluster.Domain()}
		}
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tcfg, DisableKeepAlives: true, DialContext: dial}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+hp+path, nil)
	if err != nil {
		return "", "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", "", cleanURLErr(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(data)))
	}
	return string(data), resp.Header.Get(wire.NodeHeader), nil
}

func labCAPool(s *spec.Spec) (*x509.CertPool, error) {
	data, err := os.ReadFile(filepath.Join(labdir.PKI(s), pki.CACertFile))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("no certificate in lab CA")
	}
	return pool, nil
}

func backendChecks(ctx context.Context, s *spec.Spec, lbc loadbalancer.Config, stats haproxyStats, pivoted bool, reports map[string]*wire.Report, vms map[string]NodeVM, dial DialFunc) (_ []check.Result, settling bool) {
	st, err := stats.st, stats.err
	if err != nil || st == nil || !st.Running {
		detail := haproxyDown + " (no live process for " + lbc.PIDPath() + ")"
		if err != nil {
			detail = "haproxy stats: " + err.Error()
		}
		return []check.Result{{Group: HostGroup, Name: "lb haproxy", State: check.StateFailed, Detail: detail, DurationMS: stats.took.Milliseconds(),
			Fix: "`bootlab lab up` starts the lab's haproxy again (config " + labdir.HAProxyConfig(s) + ")"}}, false
	}
	out := []check.Result{{Group: HostGroup, Name: "lb haproxy", State: check.StatePassed, Detail: fmt.Sprintf("running, pid %d", st.PID), DurationMS: stats.took.Milliseconds()}}
	seen := map[string]loadbalancer.BackendStatus{}
	for _, b := range st.Backends {
		seen[b.Frontend+"/"+b.Server] = b
	}
	rechecked := recheckTimeouts(ctx, dial, lbc, seen, vms)
	for _, fe := range lbc.Frontends {
		for _, srv := range fe.Servers {
			c := check.Result{Group: HostGroup, Name: fmt.Sprintf("backend %s/%s", fe.Name, srv.Name), State: check.StateFailed}
			b, ok := seen[fe.Name+"/"+srv.Name]
			delete(seen, fe.Name+"/"+srv.Name)
			switch {
			case !ok:
				c.Detail = "not in haproxy's stats"
				c.Fix = "haproxy runs an old config: `bootlab lab up` reloads it"
			case healthy(b):
				c.State = check.StatePassed
				c.Detail = strings.TrimSpace(fmt.Sprintf("%s %s %s", b.Address, b.Status, b.LastCheck))
			default:
				if r, ok := rechecked[fe.Name+"/"+srv.Name]; ok {
					b = r
				}
				settling = settling || catchingUp(b, reports[srv.Name], fe.Port)
				c.Detail = strings.TrimSpace(fmt.Sprintf("%s %s %s", b.Address, b.Status, b.LastCheck))
				c.Fix = backendFix(s, fe, srv, b, reports[srv.Name])
				if fix := rehearsalBackendFix(s, srv.Name, fe.Port); fix != "" {
					c.Fix = fix
				}
				if vm, ok := vms[srv.Name]; ok && vm.State != "running" {
					c.Fix = fmt.Sprintf("%s is %s: nothing can answer on port %d until it runs again", srv.Name, vm.State, fe.Port)
				}
			}
			out = append(out, c)
		}
	}
	var extra []string
	for k := range seen {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	for _, k := range extra {
		c := check.Result{Group: HostGroup, Name: "backend " + k, State: check.StateFailed, Detail: "haproxy still lists it; the lab spec does not"}
		c.Fix = "`bootlab lab up` reloads haproxy with the lab's config"
		if pivoted && strings.HasSuffix(k, "/bootstrap") {
			c.Detail = "the bootstrap is still a backend after `lab pivot`"
			c.Fix = "`bootlab lab pivot` removes it (it rewrites and reloads haproxy)"
		}
		out = append(out, c)
	}
	return out, settling
}

// recheckTimeouts gives recheckTimeout's second look to every backend of
// lbc that haproxy lists down with a timed-out check on a node that runs
// (or that verify cannot see), all at once: each may wait out dialTimeout,
// and a lab that boots has several such backends. The result is keyed
// "frontend/server", for the backends it looked at.
func recheckTimeouts(ctx context.Context, dial DialFunc, lbc loadbalancer.Config, seen map[string]loadbalancer.BackendStatus, vms map[string]NodeVM) map[string]loadbalancer.BackendStatus {
	out := map[string]loadbalancer.BackendStatus{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, fe := range lbc.Frontends {
		for _, srv := range fe.Servers {
			key := fe.Name + "/" + srv.Name
			b, ok := seen[key]
			if !ok || healthy(b) || dial == nil || !strings.Contains(b.LastCheck, "L4TOUT") {
				continue
			}
			if vm, ok := vms[srv.Name]; ok && vm.State != "running" {
				continue
			}
			hp := net.JoinHostPort(srv.Address, strconv.Itoa(fe.Port))
			wg.Go(func() {
				r := recheckTimeout(ctx, dial, b, hp)
				mu.Lock()
				out[key] = r
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return out
}

// recheckTimeout looks again, with one connect of its own, at a backend
// whose last haproxy check timed out (L4TOUT). haproxy keeps a result until
// its next check, seconds apart: a node checked while it booted (or while a
// checkpoint paused it) shows a timeout well after it answers again. A
// refusal now says the node is up and nothing listens on that port, which
// the stage gate and backendFix read as such (nothingListens); any other
// outcome leaves haproxy's word as it was. The backend stays down either
// way: only the reason changes.
func recheckTimeout(ctx context.Context, dial DialFunc, b loadbalancer.BackendStatus, hp string) loadbalancer.BackendStatus {
	if dial == nil || !strings.Contains(b.LastCheck, "L4TOUT") {
		return b
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := dial(dctx, "tcp", hp)
	if err == nil {
		_ = conn.Close()
		return b
	}
	if nothingListens(err.Error()) {
		b.LastCheck += "; connect to " + hp + " just now: connection refused"
	}
	return b
}

// backendFix says why srv fails haproxy's check on fe and what to do. A
// refused connection (haproxy's L4CON, the same test as the stage gate's
// nothingListens) means nothing listens on that port of the node: on a
// probe lab its report tells whether its server failed, has not started yet
// or was never meant to run there (the node's agent and the load balancer
// disagree on who serves it); rep is nil on a real lab or without a report.
func backendFix(s *spec.Spec, fe loadbalancer.Frontend, srv loadbalancer.Server, b loadbalancer.BackendStatus, rep *wire.Report) string {
	hp := net.JoinHostPort(srv.Address, strconv.Itoa(fe.Port))
	console := fmt.Sprintf("`bootlab lab console %s`", srv.Name)
	if !nothingListens(b.LastCheck) {
		if failing := firstFailing(rep); failing != "" {
			return fmt.Sprintf("%s does not pass haproxy's %s check on %s (%s): its report above says why (%q), or %s", srv.Name, fe.Check, hp, b.LastCheck, failing, console)
		}
		return fmt.Sprintf("%s does not pass haproxy's %s check on %s (%s): is the VM running? `bootlab lab status`; then %s", srv.Name, fe.Check, hp, b.LastCheck, console)
	}
	nothing := fmt.Sprintf("nothing listens on %s on %s (haproxy's %s check: %s)", hp, srv.Name, fe.Name, b.LastCheck)
	if s.Profile != spec.ProfileProbe {
		if fe.Port == loadbalancer.PortIngressHTTP || fe.Port == loadbalancer.PortIngressHTTPS {
			return nothing + ": the router pods listen there once the ingress operator schedules them on it (`oc -n openshift-ingress get pods -o wide`)"
		}
		return nothing + ": its service has not started there yet; follow it with " + console + " or `bootlab lab ssh " + srv.Name + "`"
	}
	if rep == nil {
		return nothing + " and it has no probe report yet: is the VM running? `bootlab lab status`; watch it boot with " + console
	}
	suffix := " :" + strconv.Itoa(fe.Port)
	if c, ok := serveCheck(rep, fe.Port); ok {
		switch {
		case c.Pending:
			return fmt.Sprintf("%s: its %q is still pending (%s): wait for it, or %s", nothing, c.Name, c.Detail, console)
		case !c.OK:
			return fmt.Sprintf("%s: its %q check failed, see its report above, or %s", nothing, c.Name, console)
		}
		return fmt.Sprintf("%s, although its report says %q (%s): did the VM restart? `bootlab lab status`, %s", nothing, c.Name, c.Detail, console)
	}
	if failing := firstFailing(rep); failing != "" {
		return fmt.Sprintf("%s: its probe has not got as far as serving (%q, see its report above)", nothing, failing)
	}
	return fmt.Sprintf("%s: its report is clean but lists no \"serve ...%s\", so its probe agent does not serve %s although the load balancer routes %s to it; "+
		"the lab's probe configs or image come from another bootlab: `bootlab lab probe-image build`, then `bootlab lab down && bootlab lab up`", nothing, suffix, fe.Name, fe.Name)
}

// serveCheck is rep's check of its server on port ("serve api :6443").
func serveCheck(rep *wire.Report, port int) (wire.Check, bool) {
	if rep == nil {
		return wire.Check{}, false
	}
	suffix := " :" + strconv.Itoa(port)
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Name, "serve ") && strings.HasSuffix(c.Name, suffix) {
			return c, true
		}
	}
	return wire.Check{}, false
}

// catchingUp says that haproxy will put the server in rotation by itself:
// it is in one of haproxy's transitions, or its probe node reports that it
// serves on that port, which haproxy's next checks (every 250 ms on a probe
// lab) will see.
func catchingUp(b loadbalancer.BackendStatus, rep *wire.Report, port int) bool {
	c, ok := serveCheck(rep, port)
	return b.Settling() || ok && c.OK && !c.Pending
}

// firstFailing names the first failed or pending check of rep, or "".
func firstFailing(rep *wire.Report) string {
	if rep == nil {
		return ""
	}
	for _, c := range rep.Checks {
		if !c.OK || c.Pending {
			return c.Name
		}
	}
	return ""
}

// rehearsalBackendFix names the stage a rehearsal lab's bootstrap backend
// waits for: its services start only when the stages start them.
func rehearsalBackendFix(s *spec.Spec, server string, port int) string {
	n, ok := s.Node(server)
	if !s.Rehearsal() || !ok || n.Role != spec.RoleBootstrap {
		return ""
	}
	switch port {
	case 22623:
		return "on a rehearsal lab the bootstrap MCS starts when stage 12 lands its pod: run `bootlab stage run 12` (`bootlab stage status` names the next stage); after stage 14 it is gone, as on a real bootstrap"
	case 6443:
		return "on a rehearsal lab the bootstrap API answers only while stage 13 (cluster-bootstrap) runs the temporary control plane; after it the masters serve 6443 and `bootlab lab pivot` takes the bootstrap out of the load balancer"
	}
	return ""
}

// healthy is true when haproxy's own check passed: status exactly UP (not
// "UP 1/3", which is failing on its way down) and a check has run since
// haproxy (re)started (not INI).
func healthy(b loadbalancer.BackendStatus) bool {
	if b.Status == "no check" {
		return true
	}
	return b.Status == "UP" && !strings.HasPrefix(b.LastCheck, "INI")
}

// labResolver asks the lab's dnsmasq (on the network gateway) directly,
// over TCP: a tunnel through an SSH connection carries streams only (Go's
// resolver speaks DNS over TCP on a connection that is not a PacketConn).
func labResolver(gateway string, dial DialFunc) *net.Resolver {
	server := net.JoinHostPort(gateway, "53")
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dial(ctx, "tcp", server)
	}}
}
