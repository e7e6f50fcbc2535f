package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/bootlab/bootlab/lab/ignition"
	"github.com/bootlab/bootlab/lab/probe"
)

// Check names, in report order.
const (
	chkModules  = "modules"
	chkNIC      = "nic"
	chkDHCP     = "dhcp"
	chkFwCfg    = "ignition-fwcfg"
	chkFetch    = "ignition-fetch"
	chkAddress  = "address"
	chkHostname = "hostname"
)

// reporter keeps the checks and writes the report line whenever they change,
// and every 15 s so a torn console line is soon followed by a whole one.
type reporter struct {
	mu     sync.Mutex
	out    *consoleWriter
	rep    probe.Report
	boot   time.Time
	starts map[string]time.Time
}

func newReporter(out *consoleWriter) *reporter {
	now := time.Now().UTC()
	return &reporter{out: out, boot: now, rep: probe.Report{Boot: now}, starts: map[string]time.Time{}}
}

// pending adds checks (if new) as pending with detail.
func (r *reporter) pending(detail string, names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if r.index(n) >= 0 {
			continue
		}
		now := time.Now().UTC()
		r.starts[n] = now
		r.rep.Checks = append(r.rep.Checks, probe.Check{Name: n, Pending: true, Detail: detail, Start: now})
	}
	r.emitLocked()
}

// start restarts a check's clock.
func (r *reporter) start(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts[name] = time.Now().UTC()
	if i := r.index(name); i >= 0 {
		r.rep.Checks[i].Start = r.starts[name]
	}
}

// set records a check result; pending=true keeps it open (retrying).
func (r *reporter) set(name string, ok, pending bool, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	detail := fmt.Sprintf(format, args...)
	i := r.index(name)
	if i < 0 {
		r.starts[name] = time.Now().UTC()
		r.rep.Checks = append(r.rep.Checks, probe.Check{Name: name, Start: r.starts[name]})
		i = len(r.rep.Checks) - 1
	}
	c := &r.rep.Checks[i]
	if c.OK == ok && c.Pending == pending && c.Detail == detail {
		return
	}
	c.OK, c.Pending, c.Detail = ok, pending, detail
	c.DurationMS = time.Since(r.starts[name]).Milliseconds()
	r.emitLocked()
}

func (r *reporter) identity(node, role, mac, ip string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if node != "" {
		r.rep.Node = node
	}
	if role != "" {
		r.rep.Role = role
	}
	if mac != "" {
		r.rep.MAC = mac
	}
	if ip != "" {
		r.rep.IP = ip
	}
}

func (r *reporter) index(name string) int {
	for i, c := range r.rep.Checks {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func (r *reporter) emitLocked() {
	r.rep.Seq++
	r.rep.UptimeMS = time.Since(r.boot).Milliseconds()
	_, _ = r.out.Write(r.rep.Line())
}

func (r *reporter) heartbeat() {
	for {
		time.Sleep(15 * time.Second)
		r.mu.Lock()
		r.emitLocked()
		r.mu.Unlock()
	}
}

type agent struct {
	log *slog.Logger
	rep *reporter

	ifname string
	mac    net.HardwareAddr
	lease  *Lease
	dialer *net.Dialer
	// etcd is set on a rehearsal lab's master: it joins the bootstrap's
	// etcd member and its API stand-in answers stage 14.
	etcd *probe.EtcdJoin
}

// etcdLeader is true on the master that plays the etcd operator's
// bootstrap teardown: the first by name (a real cluster elects one
// operator pod).
func etcdLeader(pc *probe.Config, self probe.NodeExpect) bool {
	for _, n := range pc.SortedNodes() {
		if n.Role == probe.RoleMaster {
			return n.Name == self.Name
		}
	}
	return false
}

// masterAPI is the API stand-in a master serves.
func (a *agent) masterAPI(self probe.NodeExpect) http.Handler {
	if a.etcd == nil {
		return probe.APIStandIn(self.Name)
	}
	local := masterEtcdctl("https://" + self.IP + ":2379")
	return newClusterAPI(self.Name, local.members)
}

func newAgent(console *consoleWriter) *agent {
	return &agent{log: newLogger(console), rep: newReporter(console)}
}

// run performs the checks in order and starts the node's servers. It
// returns when there is nothing left to do but serve.
func (a *agent) run(ctx context.Context) {
	go a.rep.heartbeat()
	a.rep.pending("waiting", chkModules, chkNIC, chkDHCP, chkFwCfg, chkFetch, chkAddress, chkHostname)

	n, err := loadModules()
	if err != nil {
		a.rep.set(chkModules, false, false, "%v", err)
	} else {
		a.rep.set(chkModules, true, false, "loaded %d modules", n)
	}

	a.rep.start(chkNIC)
	ifname, mac, err := findNIC(20 * time.Second)
	if err != nil {
		a.failRest(chkNIC, err.Error())
		return
	}
	a.ifname, a.mac = ifname, mac
	a.rep.identity("", "", mac.String(), "")
	_ = linkUp("lo")
	if err := linkUp(ifname); err != nil {
		a.failRest(chkNIC, err.Error())
		return
	}
	a.rep.set(chkNIC, true, false, "%s %s up", ifname, mac)

	a.rep.start(chkDHCP)
	dctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	lease, err := dhcpLease(dctx, ifname, mac)
	cancel()
	if err != nil {
		a.failRest(chkDHCP, "no lease on "+ifname+": "+err.Error())
		return
	}
	a.lease = lease
	ones, _ := lease.Mask.Size()
	if err := setAddr(ifname, lease.IP, lease.Mask); err != nil {
		a.failRest(chkDHCP, err.Error())
		return
	}
	if lease.Hostname != "" {
		_ = setHostname(lease.Hostname)
	}
	a.rep.identity("", "", "", lease.IP.String())
	a.rep.set(chkDHCP, true, false, "lease %s/%d from %s, hostname %q, DNS %v", lease.IP, ones, lease.Server, lease.Hostname, lease.DNS)
	a.dialer = a.newDialer()

	a.rep.start(chkFwCfg)
	raw, err := readFwCfg(15 * time.Second)
	if err != nil {
		a.failRest(chkFwCfg, err.Error())
		return
	}
	cfg, err := ignition.Parse(raw)
	if err != nil {
		a.failRest(chkFwCfg, fmt.Sprintf("read %d bytes from fw_cfg: %v", len(raw), err))
		return
	}
	kind := "a full config"
	if len(cfg.Ignition.Config.Merge) > 0 {
		kind = "a pointer config to " + deref(cfg.Ignition.Config.Merge[0].Source)
	}
	a.rep.set(chkFwCfg, true, false, "%d bytes, spec %s, %s", len(raw), cfg.Ignition.Version, kind)

	a.rep.start(chkFetch)
	merged, err := a.fetch(ctx, cfg)
	if err != nil {
		a.failRest(chkFetch, err.Error())
		return
	}
	pc, err := probe.ParseProbeConfig(merged)
	if err != nil {
		a.failRest(chkFetch, err.Error())
		return
	}
	self, ok := pc.Self(mac.String())
	if !ok {
		a.rep.set(chkAddress, false, false, "MAC %s is not a node of the served config (nodes: %d)", mac, len(pc.Nodes))
		a.rep.set(chkHostname, false, false, "MAC %s is not in the served config", mac)
		return
	}
	a.rep.identity(self.Name, self.Role, "", "")

	// Declare the rest so the report is complete only when all are done.
	var dnsChecks []string
	for _, ne := range pc.Resolve {
		dnsChecks = append(dnsChecks, "dns "+dnsLabel(ne))
	}
	dnsChecks = append(dnsChecks, "dns "+self.FQDN)
	serve := serveChecks(self)
	rehearsal := pc.Rehearsal && self.Role == probe.RoleBootstrap
	if rehearsal {
		serve = []string{chkSSH}
	}
	if self.Role == probe.RoleMaster && pc.Etcd != nil {
		a.etcd = pc.Etcd
		serve = append(serve, chkEtcd)
	}
	a.rep.pending("waiting", append(dnsChecks, serve...)...)

	if lease.IP.String() == self.IP {
		a.rep.set(chkAddress, true, false, "%s is the reserved address", lease.IP)
	} else {
		a.rep.set(chkAddress, false, false, "DHCP gave %s, the reservation for %s is %s", lease.IP, mac, self.IP)
	}
	short, _, _ := strings.Cut(lease.Hostname, ".")
	switch {
	case lease.Hostname == "":
		a.rep.set(chkHostname, false, false, "DHCP gave no hostname, expected %s", self.Name)
	case short == self.Name && (short == lease.Hostname || lease.Hostname == self.FQDN):
		a.rep.set(chkHostname, true, false, "DHCP hostname %s", lease.Hostname)
	default:
		a.rep.set(chkHostname, false, false, "DHCP hostname %q, expected %s", lease.Hostname, self.Name)
	}

	// Serve first: the load balancer and the other nodes wait on us. A
	// rehearsal bootstrap serves SSH only: the stages start the rest.
	if rehearsal {
		a.rehearse(self, merged)
	} else {
		a.startServers(self, merged)
	}
	if a.etcd != nil {
		go a.joinEtcd(ctx, self, a.etcd, etcdLeader(pc, self), merged)
	}

	var wg sync.WaitGroup
	for _, ne := range pc.Resolve {
		wg.Add(1)
		go func(ne probe.NameExpect) { defer wg.Done(); a.checkDNS(ctx, ne) }(ne)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.checkDNS(ctx, probe.NameExpect{Name: self.FQDN, Address: self.IP})
	}()
	wg.Wait()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// failRest fails check name and marks every still-pending check as not run.
func (a *agent) failRest(name, detail string) {
	a.log.Error("check failed", "check", name, "detail", detail)
	a.rep.set(name, false, false, "%s", detail)
	a.rep.mu.Lock()
	changed := false
	for i := range a.rep.rep.Checks {
		c := &a.rep.rep.Checks[i]
		if c.Pending {
			c.Pending, c.OK, c.Detail = false, false, "not run: "+name+" failed"
			changed = true
		}
	}
	if changed {
		a.rep.emitLocked()
	}
	a.rep.mu.Unlock()
}

func (a *agent) newDialer() *net.Dialer {
	var servers []string
	for _, d := range a.lease.DNS {
		servers = append(servers, netip.AddrPortFrom(d, 53).String())
	}
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		if len(servers) == 0 {
			return nil, errors.New("DHCP gave no DNS server")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, servers[0])
	}}
	return &net.Dialer{Timeout: 10 * time.Second, Resolver: r}
}

func (a *agent) fetch(ctx context.Context, cfg types.Config) (types.Config, error) {
	if len(cfg.Ignition.Config.Merge) == 0 {
		a.rep.set(chkFetch, true, false, "full config: nothing to fetch")
		return cfg, nil
	}
	f := &probe.Fetcher{
		DialContext: a.dialer.DialContext,
		Retry:       time.Second,
		Deadline:    fetchDeadline(),
		OnAttempt: func(src string, n int, err error) {
			a.rep.set(chkFetch, false, true, "GET %s: attempt %d: %v (retrying)", src, n, err)
		},
	}
	merged, fetched, err := f.Resolve(ctx, cfg)
	if err != nil {
		return merged, err
	}
	var parts []string
	for _, fx := range fetched {
		parts = append(parts, fmt.Sprintf("%s (%d bytes, %d attempts)", fx.Source, fx.Bytes, fx.Attempts))
	}
	a.rep.set(chkFetch, true, false, "merged %s", strings.Join(parts, ", "))
	return merged, nil
}

func dnsLabel(ne probe.NameExpect) string {
	if ne.Wildcard {
		return "*." + ne.Name
	}
	return ne.Name
}

func (a *agent) checkDNS(ctx context.Context, ne probe.NameExpect) {
	check := "dns " + dnsLabel(ne)
	name := ne.Name
	if ne.Wildcard {
		var b [3]byte
		_, _ = rand.Read(b[:])
		name = "probe-" + hex.EncodeToString(b[:]) + "." + ne.Name
	}
	a.rep.start(check)
	deadline := time.Now().Add(30 * time.Second)
	for {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addrs, err := a.dialer.Resolver.LookupHost(lctx, name)
		cancel()
		if err == nil {
			for _, ad := range addrs {
				if ad == ne.Address {
					a.rep.set(check, true, false, "%s -> %s", name, strings.Join(addrs, ","))
					return
				}
			}
			err = fmt.Errorf("%s resolves to %s, expected %s", name, strings.Join(addrs, ","), ne.Address)
		}
		if time.Now().After(deadline) {
			a.rep.set(check, false, false, "%v", err)
			return
		}
		a.rep.set(check, false, true, "%v (retrying)", err)
		time.Sleep(2 * time.Second)
	}
}

// Names of the serve checks of the ingress stand-in.
const (
	chkIngressHTTP  = "serve ingress :80"
	chkIngressHTTPS = "serve ingress :443"
)

// serveChecks names the servers a node runs: its role's (the bootstrap and
// masters serve the API and MCS stand-ins), then ingress on the nodes the
// lab routes 80 and 443 to (self.Ingress: the workers, or the masters of a
// lab without workers).
func serveChecks(self probe.NodeExpect) []string {
	var out []string
	switch self.Role {
	case probe.RoleBootstrap:
		out = []string{"serve mcs :22623", "serve api :6443"}
	case probe.RoleMaster:
		out = []string{"serve api :6443", "serve mcs :22623"}
	}
	if self.Ingress {
		out = append(out, chkIngressHTTP, chkIngressHTTPS)
	}
	return out
}

func (a *agent) startServers(self probe.NodeExpect, cfg types.Config) {
	file := func(path string) []byte {
		data, _, _ := ignition.FileContents(cfg, path)
		return data
	}
	serveTLS := func(check string, port int, cert tls.Certificate, certErr error, h http.Handler) {
		if certErr != nil {
			a.rep.set(check, false, false, "serving certificate: %v", certErr)
			return
		}
		tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
		a.listen(check, port, tlsCfg, h)
	}
	var mcsCert tls.Certificate
	var mcsErr error
	if self.Role == probe.RoleBootstrap || self.Role == probe.RoleMaster {
		// The API and MCS stand-ins serve the lab's api-int certificate,
		// which the pointer configs' CA verifies.
		mcsCert, mcsErr = tls.X509KeyPair(file(probe.MCSCertPath), file(probe.MCSKeyPath))
	}
	switch self.Role {
	case probe.RoleBootstrap:
		mcs := &probe.MCS{Mode: probe.MCSBootstrap, Configs: map[string][]byte{"master": file(probe.MasterConfigPath)}, Log: a.log, Node: self.Name}
		mcs.OnServe = func(pool, remote string, code int) {
			served := mcs.Served()["master"]
			a.rep.set("serve mcs :22623", true, false, "bootstrap MCS (TLS, api-int cert); served /config/master to %d: %s", len(served), strings.Join(served, " "))
		}
		serveTLS("serve mcs :22623", ignition.MCSPort, mcsCert, mcsErr, mcs)
		serveTLS("serve api :6443", 6443, mcsCert, mcsErr, probe.APIStandIn(self.Name))
	case probe.RoleMaster:
		serveTLS("serve api :6443", 6443, mcsCert, mcsErr, a.masterAPI(self))
		mcs := &probe.MCS{Mode: probe.MCSCluster, Configs: map[string][]byte{"worker": file(probe.WorkerConfigPath)}, Log: a.log, Node: self.Name}
		mcs.OnServe = func(pool, remote string, code int) {
			served := mcs.Served()["worker"]
			a.rep.set("serve mcs :22623", true, false, "in-cluster MCS (TLS); served /config/worker to %d: %s", len(served), strings.Join(served, " "))
		}
		serveTLS("serve mcs :22623", ignition.MCSPort, mcsCert, mcsErr, mcs)
	}
	if self.Ingress {
		cert, err := selfSigned(self.FQDN)
		a.listen(chkIngressHTTP, 80, nil, probe.IngressStandIn(self.Name))
		serveTLS(chkIngressHTTPS, 443, cert, err, probe.IngressStandIn(self.Name))
	}
}

func (a *agent) listen(check string, port int, tlsCfg *tls.Config, h http.Handler) {
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		a.rep.set(check, false, false, "listen: %v", err)
		return
	}
	kind := "HTTP"
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		kind = "TLS"
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelDebug)}
	go func() { _ = srv.Serve(ln) }()
	a.rep.set(check, true, false, "listening on :%d (%s)", port, kind)
}

// selfSigned makes an ephemeral certificate for the ingress stand-in's 443
// (routers serve their own default certificate; nothing verifies it in the
// lab).
func selfSigned(name string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * 365 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
