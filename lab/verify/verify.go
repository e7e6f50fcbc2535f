// Package verify checks a lab from the host and, on a probe lab, collects
// what each probe node found about itself: DNS through the lab's dnsmasq,
// every load balancer frontend through haproxy, each backend's health in
// haproxy's stats, and the nodes' console reports. Each failure carries the
// reason and the fix.
package verify

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/pki"
	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/spec"
)

// HostGroup is the Group of checks run from the host.
const HostGroup = "host"

// Result is one verify run.
type Result struct {
	Lab       string         `json:"name"`
	Profile   string         `json:"profile"`
	Pivoted   bool           `json:"bootstrapRemoved"`
	OK        bool           `json:"ok"`
	Checks    []check.Result `json:"checks"`
	ElapsedMS int64          `json:"elapsedMs"`
	// Reports are the nodes' last console reports (probe labs).
	Reports map[string]*probe.Report `json:"reports,omitempty"`
	// Passes counts the rounds of checks run.
	Passes int `json:"-"`
}

// Failed returns the failed checks.
func (r *Result) Failed() []check.Result { return check.Failed(r.Checks) }

// haproxyDown starts the detail of the "lb haproxy" check when haproxy
// is not running.
const haproxyDown = "haproxy is not running"

// final is true for a failure that waiting cannot mend: haproxy not
// running (nothing restarts it while verify waits). A failure to read its
// stats is not final.
func final(c check.Result) bool {
	return c.Failed() && c.Group == HostGroup && c.Name == "lb haproxy" && strings.HasPrefix(c.Detail, haproxyDown)
}

// Options tune Run.
type Options struct {
	// Timeout bounds the wait for all checks to pass (node reports complete,
	// backends up). 0 means one pass.
	Timeout time.Duration
	// Interval between passes (default 2s).
	Interval time.Duration
	Log      *slog.Logger
	Status   *status.Status
	// Nodes is each node's VM as the hypervisor has it, read by the caller
	// before verifying (nil: not known). A node that is not running is named
	// as such, and its console reports are not trusted.
	Nodes map[string]NodeVM
	// Accelerator is the one the lab runs under (from the lab state): a
	// console that stays silent after boot is most often its fault.
	Accelerator spec.Accelerator
	// Host is the hypervisor's machine (Hypervisor.Host): console logs are
	// read and the load balancer inspected there. nil: this machine.
	Host host.Host
	// Dial opens every connection to the lab network: DNS (TCP to the lab's
	// dnsmasq), the load balancer's frontends. nil dials directly from here
	// for a local Host and through a remote Host's SSH connection, the only
	// way to a remote lab's network.
	Dial DialFunc
}

func (o Options) host() host.Host {
	if o.Host == nil {
		return host.Local{}
	}
	return o.Host
}

// DialFunc opens a connection to addr, like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dialTimeout bounds one direct dial.
const dialTimeout = 3 * time.Second

// dialer is opts.Dial; else the remote Host's tunnel, or a direct dial.
func (o Options) dialer() DialFunc {
	switch {
	case o.Dial != nil:
		return o.Dial
	case o.host().Remote():
		return o.host().Dial
	}
	d := &net.Dialer{Timeout: dialTimeout}
	return d.DialContext
}

// NodeVM is what the hypervisor says of a node's VM.
type NodeVM struct {
	// State is "running", "shut off", "paused", "absent", ...
	State string
	// Since is when the VM's current run started (zero: unknown). Reports
	// from an earlier boot are stale.
	Since time.Time
}

// staleSlack allows for the guest clock being a little behind the host's.
const staleSlack = 30 * time.Second

// silentAfter is how long a running node may print nothing on its console
// before verify blames the boot (the accelerator, the image).
const silentAfter = 90 * time.Second

// Run verifies the lab s with its state st, repeating until every check
// passes or opts.Timeout is reached, and returns the last pass.
func Run(ctx context.Context, s *spec.Spec, st *labdir.State, opts Options) (*Result, error) {
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	deadline := start.Add(opts.Timeout)
	pivoted := st != nil && st.BootstrapRemoved
	opts.Status.Start("Verifying lab %s", s.Name)
	finalBefore := map[string]bool{}
	for pass := 1; ; pass++ {
		res := &Result{Lab: s.Name, Profile: string(s.Profile), Pivoted: pivoted, Passes: pass}
		if s.Profile == spec.ProfileProbe {
			res.Reports = map[string]*probe.Report{}
			res.Checks = append(res.Checks, nodeChecks(ctx, s, pivoted, res.Reports, opts)...)
		}
		res.Checks = append(res.Checks, hostChecks(ctx, s, pivoted, res.Reports, opts.Nodes, opts.host(), opts.dialer())...)
		res.ElapsedMS = time.Since(start).Milliseconds()
		failed := res.Failed()
		res.OK = len(failed) == 0
		// A failure that waiting cannot mend, seen on two passes in a row
		// (not a moment of haproxy's reload), ends the wait at once.
		hopeless, finalNow := false, map[string]bool{}
		for _, c := range failed {
			if final(c) {
				finalNow[c.Group+" "+c.Name] = true
				hopeless = hopeless || finalBefore[c.Group+" "+c.Name]
			}
		}
		finalBefore = finalNow
		if res.OK || hopeless || time.Now().After(deadline) || ctx.Err() != nil {
			opts.Status.End(res.OK)
			if ctx.Err() == nil {
				saveRecord(s, res, log)
			}
			return res, nil
		}
		log.Debug("verify pass", "pass", pass, "failed", len(failed), "first", failed[0].Group+" "+failed[0].Name+": "+failed[0].Detail)
		opts.Status.Update("%d/%d checks pass, waiting for %s %s", len(res.Checks)-len(failed), len(res.Checks), failed[0].Group, failed[0].Name)
		t := time.NewTimer(opts.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			opts.Status.End(false)
			return res, ctx.Err()
		case <-t.C:
		}
	}
}

// nodeChecks turns each node's last console report into checks.
func nodeChecks(ctx context.Context, s *spec.Spec, pivoted bool, reports map[string]*probe.Report, opts Options) []check.Result {
	var out []check.Result
	for _, n := range s.Nodes {
		if pivoted && n.Role == spec.RoleBootstrap {
			continue // removed by `lab pivot`: nothing expects it any more
		}
		vm, known := opts.Nodes[n.Name]
		if known && vm.State != "running" {
			// Its console still holds the reports of its last run: not
			// evidence of anything now.
			out = append(out, check.Result{Group: n.Name, Name: "vm", Detail: fmt.Sprintf("%s is %s (domain %s)", n.Name, vm.State, s.DomainName(n)),
				Fix: notRunningFix(s, n, vm.State)})
			continue
		}
		path := labdir.ConsoleLog(s, n)
		data, err := opts.host().ReadFile(ctx, path)
		exists := err == nil
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		var rep *probe.Report
		var panicLine string
		if err == nil {
			rep, panicLine, err = readReport(data)
		}
		if rep != nil && !vm.Since.IsZero() && rep.Boot.Before(vm.Since.Add(-staleSlack)) {
			// The last report is from an earlier run of the VM.
			err = fmt.Errorf("no probe report since the VM started at %s UTC (the last one in %s is from a boot at %s UTC)",
				vm.Since.UTC().Format(time.TimeOnly), path, rep.Boot.UTC().Format(time.TimeOnly))
			rep = nil
		}
		if err != nil || rep == nil {
			detail := "no probe report in " + path + " yet"
			fix := fmt.Sprintf("is the VM running? `bootlab lab status`; watch it boot with `bootlab lab console %s`", n.Name)
			if n.Role == spec.RoleWorker {
				fix += "; workers start with `bootlab lab up --start-workers`"
			}
			if panicLine != "" {
				detail = "the kernel panicked before the agent reported: " + panicLine
				fix = "the probe image does not boot: rebuild it (`bootlab lab probe-image build`; the agent must be static, CGO_ENABLED=0), then `bootlab lab down && bootlab lab up`"
			} else if silent(exists, len(data), vm) {
				up := time.Since(vm.Since).Round(time.Second)
				detail = fmt.Sprintf("%s has run for %s and printed nothing on its serial console (%s)", n.Name, up, path)
				fix = silentFix(opts.Accelerator)
			}
			if err != nil {
				detail = err.Error()
			}
			out = append(out, check.Result{Group: n.Name, Name: "report", Detail: detail, Fix: fix})
			continue
		}
		reports[n.Name] = rep
		if rep.MAC != "" && !strings.EqualFold(rep.MAC, n.MAC) {
			out = append(out, check.Result{Group: n.Name, Name: "report", Detail: fmt.Sprintf("report from MAC %s, the spec says %s", rep.MAC, n.MAC),
				Fix: "the console log belongs to another VM: `bootlab lab down` then `bootlab lab up`"})
		}
		for _, c := range rep.Checks {
			vc := check.Result{Group: n.Name, Name: c.Name, OK: c.OK && !c.Pending, Detail: c.Detail, DurationMS: c.DurationMS}
			if c.Pending {
				vc.Detail = "still pending: " + c.Detail
			}
			if !vc.OK {
				vc.Fix = nodeFix(s, n, c)
			}
			out = append(out, vc)
		}
	}
	return out
}

// notRunningFix says how to bring a node's VM back.
func notRunningFix(s *spec.Spec, n spec.Node, state string) string {
	switch {
	case state == "absent":
		return "`bootlab lab up` creates it again"
	case n.Role == spec.RoleWorker && s.Profile == spec.ProfileOpenShift:
		return "`bootlab lab up --start-workers` starts the workers"
	}
	return "`bootlab lab up` starts it again (or `virsh start " + s.DomainName(n) + "`)"
}

// silent is true when a node's VM has run past silentAfter with an empty
// console log: not even the kernel printed.
func silent(exists bool, size int, vm NodeVM) bool {
	if vm.Since.IsZero() || time.Since(vm.Since) < silentAfter {
		return false
	}
	return !exists || size == 0
}

// silentFix blames the likeliest cause of a console that stays silent.
func silentFix(accel spec.Accelerator) string {
	if accel == spec.AccelKVM {
		return "under KVM the guest never reached its kernel: on some hosts KVM hangs guests in firmware. Rebuild the lab under TCG: `bootlab lab down`, then `bootlab lab up --accel tcg` (`bootlab lab preflight --accel kvm` tests KVM with the probe kernel)"
	}
	return "the VM printed nothing: check the probe image (`bootlab lab probe-image build`) and the domain (`virsh dumpxml`), then `bootlab lab down && bootlab lab up`"
}

// readReport returns the last report in a console log; without one, the
// first line of a kernel panic, if the log has one.
func readReport(data []byte) (*probe.Report, string, error) {
	rep, err := probe.ParseConsole(bytes.NewReader(data))
	if rep != nil || err != nil {
		return rep, "", err
	}
	var why string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "Failed to execute /init") || strings.Contains(line, "Kernel panic") {
			if _, rest, ok := strings.Cut(line, "] "); ok {
				line = rest
			}
			if why == "" {
				why = line
			} else if !strings.Contains(why, line) {
				why += "; " + line
				break
			}
		}
	}
	return nil, why, nil
}

func nodeFix(s *spec.Spec, n spec.Node, c probe.Check) string {
	net := s.NetworkName()
	d := strings.ToLower(c.Detail)
	switch {
	case c.Name == "modules" || c.Name == "nic":
		return "the probe image lacks working virtio modules: `bootlab lab probe-image build`, then `bootlab lab down && bootlab lab up`"
	case c.Name == "dhcp", c.Name == "address", c.Name == "hostname":
		return fmt.Sprintf("the DHCP reservation for %s (%s, %s) in libvirt network %s (see `virsh net-dumpxml %s`): rebuild with `bootlab lab down && bootlab lab up`", n.Name, n.MAC, n.IP, net, net)
	case c.Name == "ignition-fwcfg":
		return fmt.Sprintf("the Ignition file %s passed through fw_cfg (domain %s): `bootlab lab up` rewrites it", labdir.Ignition(s, n), s.DomainName(n))
	case c.Name == "etcd member" && s.Rehearsal():
		return "a master's etcd joins the bootstrap's member (started by stage 07) once the master has its config (stage 12): the etcd operator stand-in adds one learner at a time and promotes it when in sync; `bootlab stage status` names the next stage, `bootlab lab ssh bootstrap -- sudo crictl ps` shows whether the bootstrap's etcd runs"
	case c.Name == "ignition-fetch" && s.Rehearsal() && n.Role == spec.RoleMaster:
		return "masters wait for the MCS: run `bootlab stage run 12` (on a rehearsal lab the bootstrap MCS starts when stage 12 lands its pod; `bootlab stage status` names the next stage)"
	case c.Name == "ignition-fetch":
		switch {
		case strings.Contains(d, "unknown authority") || strings.Contains(d, "certificate"):
			return fmt.Sprintf("the CA in %s (ignition.security.tls.certificateAuthorities) does not sign the MCS certificate for api-int: `bootlab lab up` rewrites the pointer configs from %s", labdir.Ignition(s, n), filepath.Join(s.LabDir, "pki"))
		case strings.Contains(d, "no such host") || strings.Contains(d, "server misbehaving") || strings.Contains(d, "lookup"):
			return fmt.Sprintf("api-int.%s does not resolve on the lab network: check its DNS host in `virsh net-dumpxml %s`, or rebuild with `bootlab lab down && bootlab lab up`", s.Cluster.Domain(), net)
		case strings.Contains(d, "refusing to serve bootstrap configuration"):
			return "workers get /config/worker only from the masters' MCS: wait for the masters (the node retries), check `bootlab lab verify` on the masters"
		case strings.Contains(d, "connection refused") || strings.Contains(d, "timeout") || strings.Contains(d, "eof"):
			return fmt.Sprintf("nothing serves %s:22623 behind haproxy: is haproxy running and the bootstrap up? `bootlab lab status`", s.Network.APIAddress)
		}
		return fmt.Sprintf("see the node's console: `bootlab lab console %s`", n.Name)
	case strings.HasPrefix(c.Name, "dns "):
		return fmt.Sprintf("the DNS records of libvirt network %s (see `virsh net-dumpxml %s`): fix them with `virsh net-update %s ... dns-host`, or rebuild with `bootlab lab down && bootlab lab up`", net, net, net)
	case c.Name == "report":
		return fmt.Sprintf("`bootlab lab console %s`", n.Name)
	}
	return fmt.Sprintf("see the node's console: `bootlab lab console %s`", n.Name)
}

// hostChecks checks DNS, the load balancer frontends and its backends;
// reports (nil on a real lab) are the nodes' probe reports and vms their
// VMs' states, which explain a backend that is down.
func hostChecks(ctx context.Context, s *spec.Spec, pivoted bool, reports map[string]*probe.Report, vms map[string]NodeVM, machine host.Host, dial DialFunc) []check.Result {
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
		c := check.Result{Group: HostGroup, Name: "dns " + label}
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		addrs, err := r.LookupHost(lctx, nm.name)
		cancel()
		switch {
		case err != nil:
			c.Detail = fmt.Sprintf("%s via %s:53: %v", nm.name, s.Network.Gateway, err)
		case !contains(addrs, nm.want):
			c.Detail = fmt.Sprintf("%s resolves to %s, expected %s", nm.name, strings.Join(addrs, ","), nm.want)
		default:
			c.OK = true
			c.Detail = fmt.Sprintf("%s -> %s", nm.name, strings.Join(addrs, ","))
		}
		if !c.OK {
			c.Fix = fmt.Sprintf("the lab network's DNS (dnsmasq of libvirt network %s, see `virsh net-dumpxml %s`) must answer %s with %s: fix the record with `virsh net-update %s ... dns-host`, or rebuild with `bootlab lab down && bootlab lab up`", net, net, nm.name, nm.want, net)
		}
		c.DurationMS = time.Since(start).Milliseconds()
		out = append(out, c)
	}

	lbc := loadbalancer.LabConfigOn(machine, s, pivoted)
	for _, fe := range lbc.Frontends {
		out = append(out, frontendCheck(ctx, s, lbc, fe, pivoted, dial))
	}
	out = append(out, backendChecks(ctx, s, lbc, pivoted, reports, vms)...)
	return out
}

func frontendCheck(ctx context.Context, s *spec.Spec, lbc loadbalancer.Config, fe loadbalancer.Frontend, pivoted bool, dial DialFunc) check.Result {
	addr := fe.Address
	if addr == "" {
		addr = lbc.BindAddress
	}
	hp := net.JoinHostPort(addr, strconv.Itoa(fe.Port))
	c := check.Result{Group: HostGroup, Name: fmt.Sprintf("lb %s :%d", fe.Name, fe.Port)}
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
	c.OK = true
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
	return string(data), resp.Header.Get(probe.NodeHeader), nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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

func backendChecks(ctx context.Context, s *spec.Spec, lbc loadbalancer.Config, pivoted bool, reports map[string]*probe.Report, vms map[string]NodeVM) []check.Result {
	start := time.Now()
	st, err := loadbalancer.Inspect(ctx, lbc)
	if err != nil || st == nil || !st.Running {
		detail := haproxyDown + " (no live process for " + lbc.PIDPath() + ")"
		if err != nil {
			detail = "haproxy stats: " + err.Error()
		}
		return []check.Result{{Group: HostGroup, Name: "lb haproxy", Detail: detail, DurationMS: time.Since(start).Milliseconds(),
			Fix: "`bootlab lab up` starts the lab's haproxy again (config " + labdir.HAProxyConfig(s) + ")"}}
	}
	out := []check.Result{{Group: HostGroup, Name: "lb haproxy", OK: true, Detail: fmt.Sprintf("running, pid %d", st.PID), DurationMS: time.Since(start).Milliseconds()}}
	seen := map[string]loadbalancer.BackendStatus{}
	for _, b := range st.Backends {
		seen[b.Frontend+"/"+b.Server] = b
	}
	for _, fe := range lbc.Frontends {
		for _, srv := range fe.Servers {
			c := check.Result{Group: HostGroup, Name: fmt.Sprintf("backend %s/%s", fe.Name, srv.Name)}
			b, ok := seen[fe.Name+"/"+srv.Name]
			delete(seen, fe.Name+"/"+srv.Name)
			switch {
			case !ok:
				c.Detail = "not in haproxy's stats"
				c.Fix = "haproxy runs an old config: `bootlab lab up` reloads it"
			case healthy(b):
				c.OK = true
				c.Detail = strings.TrimSpace(fmt.Sprintf("%s %s %s", b.Address, b.Status, b.LastCheck))
			default:
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
		c := check.Result{Group: HostGroup, Name: "backend " + k, Detail: "haproxy still lists it; the lab spec does not"}
		c.Fix = "`bootlab lab up` reloads haproxy with the lab's config"
		if pivoted && strings.HasSuffix(k, "/bootstrap") {
			c.Detail = "the bootstrap is still a backend after `lab pivot`"
			c.Fix = "`bootlab lab pivot` removes it (it rewrites and reloads haproxy)"
		}
		out = append(out, c)
	}
	return out
}

// backendFix says why srv fails haproxy's check on fe and what to do. A
// refused connection means nothing listens on that port of the node: on a
// probe lab its report tells whether its server failed, has not started yet
// or was never meant to run there (the node's agent and the load balancer
// disagree on who serves it); rep is nil on a real lab or without a report.
func backendFix(s *spec.Spec, fe loadbalancer.Frontend, srv loadbalancer.Server, b loadbalancer.BackendStatus, rep *probe.Report) string {
	hp := net.JoinHostPort(srv.Address, strconv.Itoa(fe.Port))
	console := fmt.Sprintf("`bootlab lab console %s`", srv.Name)
	if !strings.Contains(strings.ToLower(b.LastCheck), "refused") {
		if failing := firstFailing(rep); failing != "" {
			return fmt.Sprintf("%s does not pass haproxy's %s check on %s (%s): its report above says why (%q), or %s", srv.Name, fe.Check, hp, b.LastCheck, failing, console)
		}
		return fmt.Sprintf("%s does not pass haproxy's %s check on %s (%s): is the VM running? `bootlab lab status`; then %s", srv.Name, fe.Check, hp, b.LastCheck, console)
	}
	nothing := fmt.Sprintf("nothing listens on %s on %s (haproxy's %s check: connection refused)", hp, srv.Name, fe.Name)
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
	for _, c := range rep.Checks {
		if !strings.HasPrefix(c.Name, "serve ") || !strings.HasSuffix(c.Name, suffix) {
			continue
		}
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

// firstFailing names the first failed or pending check of rep, or "".
func firstFailing(rep *probe.Report) string {
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func randHex() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func cleanURLErr(err error) error {
	type unwrapper interface{ Unwrap() error }
	if u, ok := err.(unwrapper); ok && strings.HasPrefix(err.Error(), "Get ") {
		return u.Unwrap()
	}
	return err
}
