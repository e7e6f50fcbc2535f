package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/guestcluster/kubelet/node"
	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/rhcos"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
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

// Agent is the probe agent of one node: it runs the checks in order,
// reports them on the console and serves the node's part.
type Agent struct {
	log *slog.Logger
	rep *reporter

	ifname string
	mac    net.HardwareAddr
	lease  *Lease
	dialer *net.Dialer
	// etcd is set on a rehearsal lab's master: it joins the bootstrap's
	// etcd member and gets the release's kube-apiserver from its
	// installer stand-in.
	etcd *wire.EtcdJoin
	// dnsTimes are the DNS checks' waits (zero: defaultDNSTimes).
	dnsTimes dnsTimes
	// disk is a rehearsal node's own disk, where it keeps its state
	// (nil: the node keeps nothing across a reboot).
	disk *nodeDisk
	// fetched says this boot fetched its merged config (a pointer
	// config): a node with a node disk keeps it (appliedconfig.go).
	fetched bool
	// kubelet is the node's kubelet stand-in, once it runs: a shutdown
	// stops its pods.
	kubelet atomic.Pointer[kubelet.Kubelet]
}

// etcdLeader is true on the master that plays the etcd operator's
// bootstrap teardown: the first by name (a real cluster elects one
// operator pod).
func etcdLeader(pc *wire.Config, self wire.NodeExpect) bool {
	for _, n := range pc.SortedNodes() {
		if n.Role == wire.RoleMaster {
			return n.Name == self.Name
		}
	}
	return false
}

// New returns the agent of the node whose console is console.
func New(console *Console) *Agent {
	return &Agent{log: newLogger(console), rep: newReporter(console)}
}

// Run performs the checks in order and starts the node's servers. It
// returns when there is nothing left to do but serve.
func (a *Agent) Run(ctx context.Context) {
	go a.rep.heartbeat()
	go a.watchPower()
	a.rep.pending("waiting", chkModules, chkNIC, chkDHCP, chkFwCfg, chkFetch, chkAddress, chkHostname)
	a.checkModules()
	if !a.upNIC() || !a.upDHCP(ctx) {
		return
	}
	a.mountKeptDisk(ctx)
	merged, ok := a.readConfig(ctx)
	if !ok {
		return
	}
	pc, err := probeConfig(merged)
	if err != nil {
		a.failRest(chkFetch, err.Error())
		return
	}
	self, ok := pc.Self(a.mac.String())
	if !ok {
		a.rep.set(chkAddress, failed, "MAC %s is not a node of the served config (nodes: %d)", a.mac, len(pc.Nodes))
		a.rep.set(chkHostname, failed, "MAC %s is not in the served config", a.mac)
		return
	}
	a.rep.identity(self.Name, self.Role, "", "")
	rehearsal := pc.Rehearsal && self.Role == wire.RoleBootstrap
	if self.Role == wire.RoleMaster && pc.Etcd != nil {
		a.etcd = pc.Etcd
	}
	if rehearsal || a.etcd != nil {
		a.keepNodeState(ctx)
		if a.fetched {
			a.keepAppliedConfig(merged)
		}
	}
	a.declareChecks(pc, self, rehearsal)
	a.checkLease(self)

	// Serve first: the load balancer and the other nodes wait on us. A
	// rehearsal bootstrap serves SSH only: the stages start the rest.
	if rehearsal {
		a.rehearse(self, merged)
	} else {
		a.startServers(self, merged)
	}
	var kl *kubelet.Kubelet
	if a.etcd != nil {
		kl = a.runRehearsalMaster(ctx, pc, self, merged)
	}
	if self.Role == wire.RoleMaster {
		// A rehearsal master joins as a Node once a real API serves, and
		// publishes its kubelet stand-in's static pods as mirror pods.
		var pods func() []node.StaticPod
		if kl != nil {
			pods = kl.StaticPods
		}
		go a.joinWhenRealAPI(ctx, self, merged, pods)
	}
	a.checkAllDNS(ctx, pc, self)
}

// keepNodeState mounts the node disk, where a rehearsal node keeps what
// RHCOS keeps across a reboot. Without it the node runs in RAM as a probe
// node does, and says why.
func (a *Agent) keepNodeState(ctx context.Context) {
	if a.disk != nil {
		return // mounted before the config was read (mountKeptDisk)
	}
	// The kernel starts /init with no PATH: mke2fs is found on RHCOS's.
	_ = os.Setenv("PATH", rhcos.DefaultPath)
	d, err := mountNodeDisk(ctx)
	if d != nil {
		a.disk = d
	}
	if err != nil {
		a.log.Error("the node disk: this node keeps nothing across a reboot", "err", err)
		return
	}
	a.log.Info("the node keeps /etc, /var and /opt/openshift on its disk", "disk", d.Dev, "firstBoot", d.FirstBoot)
}

// checkModules loads the initramfs's kernel modules.
func (a *Agent) checkModules() {
	n, err := loadModules()
	if err != nil {
		a.rep.set(chkModules, failed, "%v", err)
	} else {
		a.rep.set(chkModules, passed, "loaded %d modules", n)
	}
}

// upNIC finds the node's NIC and brings it (and lo) up.
func (a *Agent) upNIC() bool {
	a.rep.start(chkNIC)
	ifname, mac, err := findNIC(20 * time.Second)
	if err != nil {
		a.failRest(chkNIC, err.Error())
		return false
	}
	a.ifname, a.mac = ifname, mac
	a.rep.identity("", "", mac.String(), "")
	_ = linkUp("lo")
	if err := linkUp(ifname); err != nil {
		a.failRest(chkNIC, err.Error())
		return false
	}
	a.rep.set(chkNIC, passed, "%s %s up", ifname, mac)
	return true
}

// upDHCP takes a DHCP lease, sets its address and hostname, and makes the
// dialer that resolves with its DNS servers.
func (a *Agent) upDHCP(ctx context.Context) bool {
	a.rep.start(chkDHCP)
	dctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	lease, err := dhcpLease(dctx, a.ifname, a.mac)
	cancel()
	if err != nil {
		a.failRest(chkDHCP, "no lease on "+a.ifname+": "+err.Error())
		return false
	}
	a.lease = lease
	ones, _ := lease.Mask.Size()
	if err := setAddr(a.ifname, lease.IP, lease.Mask); err != nil {
		a.failRest(chkDHCP, err.Error())
		return false
	}
	if lease.Hostname != "" {
		_ = setHostname(lease.Hostname)
	}
	a.rep.identity("", "", "", lease.IP.String())
	a.rep.set(chkDHCP, passed, "lease %s/%d from %s, hostname %q, DNS %v", lease.IP, ones, lease.Server, lease.Hostname, lease.DNS)
	a.dialer = a.newDialer()
	return true
}

// probeConfig is the probe config the host put at wire.ConfigPath in a
// (merged) Ignition config.
func probeConfig(cfg types.Config) (*wire.Config, error) {
	data, ok, err := ignition.FileContents(cfg, wire.ConfigPath)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("the Ignition config has no %s: is this a bootlab probe lab config?", wire.ConfigPath)
	}
	var c wire.Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("parse %s: %w", wire.ConfigPath, err)
	}
	return &c, nil
}

// readConfig reads the Ignition config from fw_cfg and resolves what it
// points to, as Ignition does.
func (a *Agent) readConfig(ctx context.Context) (types.Config, bool) {
	a.rep.start(chkFwCfg)
	raw, err := readFwCfg(15 * time.Second)
	if err != nil {
		a.failRest(chkFwCfg, err.Error())
		return types.Config{}, false
	}
	cfg, err := ignition.Parse(raw)
	if err != nil {
		a.failRest(chkFwCfg, fmt.Sprintf("read %d bytes from fw_cfg: %v", len(raw), err))
		return types.Config{}, false
	}
	kind := "a full config"
	if len(cfg.Ignition.Config.Merge) > 0 {
		kind = "a pointer config to " + deref(cfg.Ignition.Config.Merge[0].Source)
	}
	a.rep.set(chkFwCfg, passed, "%d bytes, spec %s, %s", len(raw), cfg.Ignition.Version, kind)

	a.rep.start(chkFetch)
	if len(cfg.Ignition.Config.Merge) > 0 {
		if kept, ok := a.appliedConfig(); ok {
			a.rep.set(chkFetch, passed, "not fetched: Ignition ran on this node's first boot, and the config it applied is on the node disk (%s)", appliedConfigPath)
			return kept, true
		}
	}
	merged, err := a.fetch(ctx, cfg)
	if err != nil {
		a.failRest(chkFetch, err.Error())
		return types.Config{}, false
	}
	a.fetched = len(cfg.Ignition.Config.Merge) > 0
	return merged, true
}

// declareChecks adds the node's DNS and serve checks as pending, so the
// report is complete only when all are done.
func (a *Agent) declareChecks(pc *wire.Config, self wire.NodeExpect, rehearsal bool) {
	var dnsChecks []string
	for _, ne := range pc.Resolve {
		dnsChecks = append(dnsChecks, "dns "+dnsLabel(ne))
	}
	dnsChecks = append(dnsChecks, "dns "+self.FQDN)
	serve := serveChecks(self)
	if rehearsal {
		serve = []string{chkSSH}
	}
	if a.etcd != nil {
		serve = append(serve, chkEtcd)
	}
	a.rep.pending("waiting", append(dnsChecks, serve...)...)
}

// checkLease compares the lease with the node's reservation: its address
// and its hostname.
func (a *Agent) checkLease(self wire.NodeExpect) {
	lease := a.lease
	if lease.IP.String() == self.IP {
		a.rep.set(chkAddress, passed, "%s is the reserved address", lease.IP)
	} else {
		a.rep.set(chkAddress, failed, "DHCP gave %s, the reservation for %s is %s", lease.IP, a.mac, self.IP)
	}
	short, _, _ := strings.Cut(lease.Hostname, ".")
	switch {
	case lease.Hostname == "":
		a.rep.set(chkHostname, failed, "DHCP gave no hostname, expected %s", self.Name)
	case short == self.Name && (short == lease.Hostname || lease.Hostname == self.FQDN):
		a.rep.set(chkHostname, passed, "DHCP hostname %s", lease.Hostname)
	default:
		a.rep.set(chkHostname, failed, "DHCP hostname %q, expected %s", lease.Hostname, self.Name)
	}
}

// checkAllDNS checks the config's names and the node's own, in parallel,
// and returns when all are done.
func (a *Agent) checkAllDNS(ctx context.Context, pc *wire.Config, self wire.NodeExpect) {
	var wg sync.WaitGroup
	for _, ne := range pc.Resolve {
		wg.Add(1)
		go func(ne wire.NameExpect) { defer wg.Done(); a.checkDNS(ctx, ne) }(ne)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.checkDNS(ctx, wire.NameExpect{Name: self.FQDN, Address: self.IP})
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
func (a *Agent) failRest(name, detail string) {
	a.log.Error("check failed", "check", name, "detail", detail)
	a.rep.set(name, failed, "%s", detail)
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

func (a *Agent) newDialer() *net.Dialer {
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

func (a *Agent) fetch(ctx context.Context, cfg types.Config) (types.Config, error) {
	if len(cfg.Ignition.Config.Merge) == 0 {
		a.rep.set(chkFetch, passed, "full config: nothing to fetch")
		return cfg, nil
	}
	f := &Fetcher{
		DialContext: a.dialer.DialContext,
		Retry:       time.Second,
		OnAttempt: func(src string, n int, err error) {
			a.rep.set(chkFetch, retrying, "GET %s: attempt %d: %v (retrying)", src, n, err)
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
	a.rep.set(chkFetch, passed, "merged %s", strings.Join(parts, ", "))
	return merged, nil
}

func dnsLabel(ne wire.NameExpect) string {
	if ne.Wildcard {
		return "*." + ne.Name
	}
	return ne.Name
}

// dnsTimes are checkDNS's waits: how long a name is asked before its check
// fails, each try's timeout, the pause between tries, and how often a name
// whose check failed is asked again after that.
type dnsTimes struct {
	deadline, try, pause, recheck time.Duration
}

var defaultDNSTimes = dnsTimes{deadline: 30 * time.Second, try: 5 * time.Second, pause: 2 * time.Second, recheck: 10 * time.Second}

func (a *Agent) checkDNS(ctx context.Context, ne wire.NameExpect) {
	check := "dns " + dnsLabel(ne)
	name := ne.Name
	if ne.Wildcard {
		var b [3]byte
		_, _ = rand.Read(b[:])
		name = "probe-" + hex.EncodeToString(b[:]) + "." + ne.Name
	}
	tm := a.dnsTimes
	if tm == (dnsTimes{}) {
		tm = defaultDNSTimes
	}
	a.rep.start(check)
	began := time.Now()
	for {
		addrs, err := a.lookupExpect(ctx, tm.try, name, ne.Address)
		if err == nil {
			a.rep.set(check, passed, "%s -> %s", name, addrs)
			return
		}
		if time.Since(began) > tm.deadline {
			a.rep.set(check, failed, "%v", err)
			go a.recheckDNS(ctx, tm, check, name, ne.Address, began)
			return
		}
		a.rep.set(check, retrying, "%v (retrying)", err)
		if !timing.Sleep(ctx, tm.pause) {
			return
		}
	}
}

// recheckDNS keeps asking a name whose check failed, every tm.recheck: the
// check stays failed, with the latest reason, until the right answer
// comes, then passes and says how long that took. A DNS server that was
// slow to answer while the node booted (a loaded host) then does not leave
// the lab failing verify for good; a wrong record still fails.
func (a *Agent) recheckDNS(ctx context.Context, tm dnsTimes, check, name, want string, began time.Time) {
	for timing.Sleep(ctx, tm.recheck) {
		addrs, err := a.lookupExpect(ctx, tm.try, name, want)
		if err == nil {
			a.rep.set(check, passed, "%s -> %s (answered %s after the first try; failed before)", name, addrs, time.Since(began).Round(time.Second))
			return
		}
		a.rep.set(check, failed, "%v", err)
	}
}

// lookupExpect asks for name once (within try) and returns its addresses
// when want is among them.
func (a *Agent) lookupExpect(ctx context.Context, try time.Duration, name, want string) (string, error) {
	lctx, cancel := context.WithTimeout(ctx, try)
	defer cancel()
	addrs, err := a.dialer.Resolver.LookupHost(lctx, name)
	if err != nil {
		return "", err
	}
	if !slices.Contains(addrs, want) {
		return "", fmt.Errorf("%s resolves to %s, expected %s", name, strings.Join(addrs, ","), want)
	}
	return strings.Join(addrs, ","), nil
}

// etcdOperator is the etcd operator stand-in of a rehearsal master, which
// reports on the etcd member check.
func (a *Agent) etcdOperator() *etcd.Operator {
	return etcd.NewOperator(a.log, func(p etcd.Progress, detail string) {
		a.rep.set(chkEtcd, etcdCheckState(p), "%s", detail)
	})
}

// etcdCheckState is the etcd member check's state for the etcd operator
// stand-in's progress.
func etcdCheckState(p etcd.Progress) checkState {
	switch p {
	case etcd.Joined:
		return passed
	case etcd.Waiting:
		return retrying
	default:
		return failed
	}
}

// chkEtcd is the report line of a rehearsal master's etcd member.
const chkEtcd = "etcd member"

// Names of the serve checks: the MCS and API stand-ins (the bootstrap's
// once stages 12 and 13 start them on a rehearsal lab) and the ingress
// stand-in.
const (
	chkMCS          = "serve mcs :22623"
	chkAPI          = "serve api :6443"
	chkIngressHTTP  = "serve ingress :80"
	chkIngressHTTPS = "serve ingress :443"
)
