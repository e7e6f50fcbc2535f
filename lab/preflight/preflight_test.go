package preflight

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"
)

type fakeHost struct {
	version string
	types   []string
	nets    []hypervisor.NetworkInfo
	err     error
	// testDriver: the host answers as libvirt's test driver (no guests).
	testDriver bool
}

func (f *fakeHost) Capabilities() hypervisor.Capabilities {
	if f.testDriver {
		return hypervisor.Capabilities{}
	}
	return hypervisor.Full()
}

func (f *fakeHost) LibvirtVersion(context.Context) (string, error) { return f.version, f.err }
func (f *fakeHost) DomainTypes(context.Context) ([]string, error)  { return f.types, f.err }
func (f *fakeHost) Networks(context.Context) ([]hypervisor.NetworkInfo, error) {
	return f.nets, f.err
}

const (
	qemuUID = 64055
	kvmGID  = 108
)

// goodHost is a host on which every check passes: KVM works, tools are
// installed, 32 GiB free memory, 500 GiB free disk, every directory 0755 root.
type goodHost struct {
	files   map[string]*FileOwner
	tools   map[string]bool
	env     map[string]string
	free    uint64
	meminfo string
	smoke   error
	smoked  []string
	routes  []HostRoute
	ifaces  []string
	users   map[string]*HostUser
	listen  []netip.AddrPort
	cfgErr  error
	checked []byte
	spare   string
}

func newGoodHost(t *testing.T) *goodHost {
	dir := t.TempDir()
	mem := filepath.Join(dir, "meminfo")
	require.NoError(t, os.WriteFile(mem, []byte("MemTotal:       33554432 kB\nMemFree:        30000000 kB\nMemAvailable:   33554432 kB\n"), 0o644))
	return &goodHost{
		files: map[string]*FileOwner{
			"/dev/kvm":                {Mode: fs.ModeCharDevice | 0o660, UID: 0, GID: kvmGID},
			"/boot/vmlinuz-6.1.0":     {Mode: 0o644},
			"/":                       {Mode: fs.ModeDir | 0o755},
			"/var":                    {Mode: fs.ModeDir | 0o755},
			"/var/lib":                {Mode: fs.ModeDir | 0o755},
			"/var/lib/libvirt":        {Mode: fs.ModeDir | 0o755},
			"/var/lib/libvirt/images": {Mode: fs.ModeDir | 0o711},
			"/var/lib/bootlab":        {Mode: fs.ModeDir | 0o755},
		},
		tools:   map[string]bool{"haproxy": true, "qemu-img": true},
		env:     map[string]string{},
		free:    500 << 30,
		meminfo: mem,
		listen:  []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:22"), netip.MustParseAddrPort("0.0.0.0:8080"), netip.MustParseAddrPort("[::]:6444")},
		routes:  []HostRoute{{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Dev: "eth0"}, {Prefix: netip.MustParsePrefix("10.0.0.0/24"), Dev: "eth0"}},
		ifaces:  []string{"lo", "eth0", "virbr0"},
		users:   map[string]*HostUser{"libvirt-qemu": {Name: "libvirt-qemu", UID: qemuUID, GIDs: []int{kvmGID, qemuUID}}},
	}
}

func (g *goodHost) facts() HostFacts {
	return HostFacts{
		DevKVM:      "/dev/kvm",
		MemInfo:     g.meminfo,
		BootDir:     "/nonexistent-boot",
		SpareKernel: g.spare,
		Getenv:      func(k string) string { return g.env[k] },
		LookPath: func(name string) (string, error) {
			if g.tools[name] {
				return "/usr/bin/" + name, nil
			}
			return "", errors.New("not found")
		},
		LookupUser: func(name string) (*HostUser, error) {
			if u, ok := g.users[name]; ok {
				return u, nil
			}
			return nil, errors.New("unknown user")
		},
		Stat: func(p string) (*FileOwner, error) {
			if fo, ok := g.files[p]; ok {
				return fo, nil
			}
			return nil, fs.ErrNotExist
		},
		FreeBytes:  func(string) (uint64, error) { return g.free, nil },
		Routes:     func() ([]HostRoute, error) { return g.routes, nil },
		Interfaces: func() ([]string, error) { return g.ifaces, nil },
		KVMSmoke: func(_ context.Context, kernel string) error {
			g.smoked = append(g.smoked, kernel)
			return g.smoke
		},
		Listeners: func() ([]netip.AddrPort, error) { return g.listen, nil },
		HAProxyCheck: func(_ context.Context, _, cfgPath string) error {
			g.checked, _ = os.ReadFile(cfgPath)
			return g.cfgErr
		},
	}
}

func preflightSpec(t *testing.T, mutate func(*spec.Spec)) *spec.Spec {
	s := &spec.Spec{Name: "pf", LabDir: "/var/lib/bootlab/labs/pf"}
	s.Image.Kernel = "/var/lib/bootlab/probe/vmlinuz"
	if mutate != nil {
		mutate(s)
	}
	s.Defaults()
	return s
}

func kvmHost() *fakeHost { return &fakeHost{version: "9.0.0", types: []string{"qemu", "kvm"}} }

func checkOf(t *testing.T, r *Report, name string) check.Result {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in report: %+v", name, r.Checks)
	return check.Result{}
}

func run(t *testing.T, s *spec.Spec, host hypervisor.HostInfo, g *goodHost) *Report {
	t.Helper()
	r, err := Run(context.Background(), s, host, Options{Facts: g.facts()})
	require.NoError(t, err)
	return r
}

func TestPreflightAllGood(t *testing.T) {
	t.Parallel()
	g := newGoodHost(t)
	r := run(t, preflightSpec(t, nil), kvmHost(), g)
	for _, c := range r.Checks {
		assert.True(t, c.Passed(), "%s: %s", c.Name, c.Detail)
		assert.NotEqual(t, check.StateWarning, c.State, "%s: %s", c.Name, c.Detail)
	}
	assert.True(t, r.OK())
	assert.NoError(t, r.Err())
	assert.Equal(t, spec.AccelKVM, r.Accelerator)
	assert.Equal(t, []string{"/var/lib/bootlab/probe/vmlinuz"}, g.smoked, "the smoke test boots the spec's kernel")
	names := []string{}
	for _, c := range r.Checks {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{CheckLibvirt, CheckAccel, CheckKVMDevice, CheckHAProxy, CheckQEMUImg, CheckNetwork, CheckLB, CheckMemory, CheckDisk, CheckPoolAccess, CheckLabAccess}, names)
	assert.Equal(t, "libvirt 9.0.0 at qemu:///system", checkOf(t, r, CheckLibvirt).Detail)
	assert.Contains(t, string(g.checked), "listen api", "haproxy -c saw the lab's config")
}

// Every failing check names the problem and the fix.
func TestPreflightFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		host       func() hypervisor.HostInfo
		connErr    error
		mutateHost func(*goodHost)
		mutateSpec func(*spec.Spec)
		check      string
		detail     string
		fix        string
	}{
		{name: "libvirt unreachable", host: func() hypervisor.HostInfo { return nil }, connErr: errors.New("dial unix /var/run/libvirt/libvirt-sock: connect: no such file or directory"),
			check: CheckLibvirt, detail: "cannot connect to qemu:///system: dial unix", fix: "virtlogd -d && setsid -f tini -s -- libvirtd"},
		{name: "libvirt not answering", host: func() hypervisor.HostInfo { return &fakeHost{err: errors.New("rpc error")} },
			check: CheckLibvirt, detail: "qemu:///system does not answer: rpc error", fix: "virsh -c qemu:///system version"},
		{name: "kvm required but absent", host: func() hypervisor.HostInfo { return &fakeHost{version: "9.0.0", types: []string{"qemu"}} },
			mutateSpec: func(s *spec.Spec) { s.Accelerator = spec.AccelKVM },
			check:      CheckAccel, detail: "accelerator: kvm, but KVM is not usable: libvirt offers no kvm domain type (only qemu)", fix: "accelerator: tcg"},
		{name: "kvm device closed to qemu (68 s trap)", mutateHost: func(g *goodHost) { g.files["/dev/kvm"] = &FileOwner{Mode: fs.ModeCharDevice | 0o600} },
			check: CheckKVMDevice, detail: "the qemu user libvirt-qemu cannot open it; libvirt then re-probes qemu on every domain start (~68 s each", fix: "chgrp kvm /dev/kvm && chmod 0660 /dev/kvm"},
		{name: "haproxy missing", mutateHost: func(g *goodHost) { delete(g.tools, "haproxy") },
			check: CheckHAProxy, detail: "haproxy not found on PATH", fix: "apt-get install -y haproxy"},
		{name: "qemu-img missing", mutateHost: func(g *goodHost) { delete(g.tools, "qemu-img") },
			check: CheckQEMUImg, detail: "qemu-img not found on PATH", fix: "apt-get install -y qemu-utils"},
		{name: "cidr overlaps a host route", mutateHost: func(g *goodHost) {
			g.routes = append(g.routes, HostRoute{Prefix: netip.MustParsePrefix("192.168.0.0/16"), Dev: "wlan0"})
		}, check: CheckNetwork, detail: "network.cidr: 192.168.126.0/24 overlaps the host route 192.168.0.0/16 on wlan0", fix: "--cidr"},
		{name: "bridge is the host's uplink", mutateSpec: func(s *spec.Spec) { s.Network.Bridge = "eth0" },
			check: CheckNetwork, detail: "network.bridge: eth0 is already an interface of this host and not this lab's bridge", fix: "bridge"},
		{name: "bridge is another interface of the host", mutateSpec: func(s *spec.Spec) { s.Network.Bridge = "virbr0" },
			check: CheckNetwork, detail: "network.bridge: virbr0 is already an interface of this host", fix: "bridge"},
		{name: "cidr overlaps a libvirt network", host: func() hypervisor.HostInfo {
			h := kvmHost()
			h.nets = []hypervisor.NetworkInfo{{Name: "default", Bridge: "virbr0", Prefixes: []netip.Prefix{netip.MustParsePrefix("192.168.126.0/24")}}}
			return h
		}, check: CheckNetwork, detail: `overlaps libvirt network "default"`, fix: "--cidr"},
		{name: "api port taken", mutateHost: func(g *goodHost) { g.listen = append(g.listen, netip.MustParseAddrPort("0.0.0.0:6443")) },
			check: CheckLB, detail: "ports the load balancer needs are taken: 6443 (listening on 0.0.0.0:6443)", fix: "ss -ltnp"},
		{name: "stats port taken on the api address", mutateHost: func(g *goodHost) { g.listen = append(g.listen, netip.MustParseAddrPort("192.168.126.1:9000")) },
			check: CheckLB, detail: "9000 (listening on 192.168.126.1:9000)", fix: "bootlab lab down"},
		{name: "api port taken on the api address", mutateHost: func(g *goodHost) { g.listen = append(g.listen, netip.MustParseAddrPort("192.168.126.1:6443")) },
			check: CheckLB, detail: "6443 (listening on 192.168.126.1:6443)", fix: "ss -ltnp"},
		{name: "haproxy rejects the config", mutateHost: func(g *goodHost) { g.cfgErr = errors.New("haproxy -c -f x rejected the configuration") },
			check: CheckLB, detail: "rejected the configuration", fix: "bootlab bug"},
		{name: "admin socket path too long", mutateSpec: func(s *spec.Spec) { s.LabDir = "/var/lib/bootlab/" + strings.Repeat("x", 90) },
			check: CheckLB, detail: "more than the 107 a unix socket allows: choose a shorter labDir", fix: "labDir"},
		{name: "not enough memory", mutateSpec: func(s *spec.Spec) { s.Profile = spec.ProfileOpenShift; s.OpenShift.PullSecretFile = "/ps" },
			check: CheckMemory, detail: "the nodes need 80.0 GiB, the host has 32.0 GiB available", fix: "--workers 0"},
		{name: "not enough disk", mutateHost: func(g *goodHost) { g.free = 10 << 20 },
			check: CheckDisk, detail: "/var/lib/libvirt/images/bootlab-pf needs 96 MiB (no base image + 6 overlays × 16 MiB), /var/lib/libvirt/images has 10 MiB free", fix: "set storage.poolDir to a larger filesystem"},
		{name: "not enough memory for a rehearsal lab", mutateHost: func(g *goodHost) {
			require.NoError(t, os.WriteFile(g.meminfo, []byte("MemTotal: 4194304 kB\nMemAvailable: 4194304 kB\n"), 0o644))
		},
			mutateSpec: func(s *spec.Spec) { s.OpenShift.ManualBootstrap = true; s.Defaults() },
			check:      CheckMemory, detail: "the nodes need", fix: "1536 MiB for the bootstrap and 1024 MiB per master"},
		{name: "not enough disk for a rehearsal lab's Kubernetes volume", mutateHost: func(g *goodHost) { g.free = 100 << 20 },
			mutateSpec: func(s *spec.Spec) { s.OpenShift.ManualBootstrap = true },
			check:      CheckDisk, detail: "/var/lib/libvirt/images/bootlab-pf needs 144 MiB (no base image + Kubernetes volume ~48 MiB + 6 overlays × 16 MiB), /var/lib/libvirt/images has 100 MiB free", fix: "set storage.poolDir to a larger filesystem"},
		{name: "pool dir not traversable", mutateHost: func(g *goodHost) { g.files["/var/lib/libvirt/images"] = &FileOwner{Mode: fs.ModeDir | 0o700} },
			check: CheckPoolAccess, detail: "the qemu user libvirt-qemu cannot traverse /var/lib/libvirt/images (mode 0700)", fix: "chmod o+x /var/lib/libvirt/images"},
		{name: "lab dir under /root", mutateHost: func(g *goodHost) { g.files["/root"] = &FileOwner{Mode: fs.ModeDir | 0o700} },
			mutateSpec: func(s *spec.Spec) { s.LabDir = "/root/labs/pf" },
			check:      CheckLabAccess, detail: "cannot traverse /root (mode 0700)", fix: "move labDir under a directory qemu can reach"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGoodHost(t)
			if tc.mutateHost != nil {
				tc.mutateHost(g)
			}
			var host hypervisor.HostInfo = kvmHost()
			if tc.host != nil {
				host = tc.host()
			}
			s := preflightSpec(t, tc.mutateSpec)
			r, err := Run(context.Background(), s, host, Options{Facts: g.facts(), ConnectError: tc.connErr})
			require.NoError(t, err)
			c := checkOf(t, r, tc.check)
			assert.True(t, c.Failed(), "%s should fail: %s", tc.check, c.Detail)
			assert.Contains(t, c.Detail, tc.detail)
			assert.Contains(t, c.Fix, tc.fix)
			assert.False(t, r.OK())
			err = r.Err()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.check+": ")
			assert.Contains(t, err.Error(), "fix: "+c.Fix)
			var pe *Error
			require.ErrorAs(t, err, &pe)
			for _, other := range r.Checks {
				if other.Name != tc.check && other.Name != CheckAccel && other.Name != CheckNetwork {
					assert.True(t, other.Passed(), "only %s should fail, but %s did: %s", tc.check, other.Name, other.Detail)
				}
			}
		})
	}
}

// A remote hypervisor's machine is checked like this one (memory, disk,
// tools, routes, ports, pool access), and every check names it.
func TestPreflightChecksTheRemoteHost(t *testing.T) {
	t.Parallel()
	g := newGoodHost(t)
	g.free = 0
	remote := preflightSpec(t, func(s *spec.Spec) { s.Libvirt.URI = "qemu+ssh://root@lab-host/system" })
	facts := g.facts()
	facts.Where = "root@lab-host:22"
	r, err := Run(context.Background(), remote, kvmHost(), Options{Facts: facts})
	require.NoError(t, err)
	assert.False(t, r.OK())
	assert.True(t, checkOf(t, r, CheckDisk).Failed(), "the remote disk is checked")
	assert.True(t, checkOf(t, r, CheckMemory).Passed())
	assert.True(t, checkOf(t, r, CheckPoolAccess).Passed())
	assert.True(t, checkOf(t, r, CheckHAProxy).Passed())
	for _, c := range r.Checks {
		assert.Equal(t, "root@lab-host:22", c.Host, c.Name)
	}
	assert.Equal(t, spec.AccelKVM, r.Accelerator, "what the remote libvirt offers")
	assert.Empty(t, g.smoked, "no test guest is booted for a remote lab")

	// Without a connection, the remote machine cannot be looked at: said so.
	r, err = Run(context.Background(), remote, nil, Options{ConnectError: errors.New("ssh: refused")})
	require.NoError(t, err)
	assert.True(t, checkOf(t, r, CheckLibvirt).Failed())
	assert.Contains(t, checkOf(t, r, CheckMemory).Detail, "was not checked (no connection)")
}

func TestPreflightTestURI(t *testing.T) {
	t.Parallel()
	g := newGoodHost(t)
	r := run(t, preflightSpec(t, func(s *spec.Spec) { s.Libvirt.URI = "test:///default" }), &fakeHost{version: "9.0.0", types: []string{"test"}, testDriver: true}, g)
	assert.True(t, r.OK(), "%+v", r.Checks)
	assert.Equal(t, spec.AccelTCG, r.Accelerator)
	assert.Equal(t, check.StatePassed, checkOf(t, r, CheckAccel).State)
}

func TestChooseAccelerator(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		accel     spec.Accelerator
		env       string
		types     []string
		mutate    func(*goodHost, *spec.Spec)
		smoke     error
		want      spec.Accelerator
		reason    string
		errSubstr string
	}{
		{name: "tcg asked", accel: spec.AccelTCG, want: spec.AccelTCG, reason: "tcg (accelerator: tcg)"},
		{name: "kvm asked and usable", accel: spec.AccelKVM, want: spec.AccelKVM, reason: "kvm (accelerator: kvm; a test guest booted under KVM)"},
		// Asked for by name, KVM is proven all the same: a host where it hangs
		// guests is refused now, not found out by a lab that never boots.
		{name: "kvm asked, KVM hangs guests", accel: spec.AccelKVM, smoke: errors.New("no kernel output on the serial console in 5s"),
			errSubstr: "accelerator: kvm, but a test guest (/var/lib/bootlab/probe/vmlinuz) did not boot under KVM: no kernel output"},
		{name: "kvm asked, no device", accel: spec.AccelKVM, mutate: func(g *goodHost, _ *spec.Spec) { delete(g.files, "/dev/kvm") },
			errSubstr: "accelerator: kvm, but KVM is not usable: /dev/kvm is missing"},
		{name: "auto, smoke passes", accel: spec.AccelAuto, want: spec.AccelKVM, reason: "kvm: a test guest booted under KVM"},
		{name: "auto, KVM hangs guests", accel: spec.AccelAuto, smoke: errors.New("no kernel output on the serial console in 5s"),
			want: spec.AccelTCG, reason: "tcg: KVM looks usable but a test guest did not boot under it (no kernel output on the serial console in 5s)"},
		{name: "auto, no kernel to try", accel: spec.AccelAuto, mutate: func(_ *goodHost, s *spec.Spec) { s.Image.Kernel = "" },
			want: spec.AccelTCG, reason: "no kernel (image.kernel, /nonexistent-boot/vmlinuz* or a cached probe kernel"},
		{name: "auto, the cached probe kernel proves it", accel: spec.AccelAuto, mutate: func(g *goodHost, s *spec.Spec) { s.Image.Kernel = ""; g.spare = "/var/cache/bootlab/probe/x/vmlinuz" },
			want: spec.AccelKVM, reason: "kvm: a test guest booted under KVM"},
		{name: "auto, no kvm type", accel: spec.AccelAuto, types: []string{"qemu"}, want: spec.AccelTCG, reason: "tcg: libvirt offers no kvm domain type (only qemu)"},
		{name: "auto, device closed to qemu", accel: spec.AccelAuto, mutate: func(g *goodHost, _ *spec.Spec) { g.files["/dev/kvm"] = &FileOwner{Mode: 0o600} },
			want: spec.AccelTCG, reason: "the qemu user libvirt-qemu cannot open it"},
		{name: "env forces tcg", accel: spec.AccelKVM, env: "tcg", want: spec.AccelTCG, reason: "tcg (BOOTLAB_ACCEL=tcg)"},
		{name: "env forces kvm", accel: spec.AccelAuto, env: "kvm", want: spec.AccelKVM, reason: "kvm (BOOTLAB_ACCEL=kvm; a test guest booted"},
		{name: "env forces kvm, no kernel to prove it", accel: spec.AccelAuto, env: "kvm", mutate: func(_ *goodHost, s *spec.Spec) { s.Image.Kernel = "" },
			want: spec.AccelKVM, reason: "kvm (BOOTLAB_ACCEL=kvm; no kernel here to prove it boots guests)"},
		{name: "env nonsense", accel: spec.AccelAuto, env: "hvf", errSubstr: "BOOTLAB_ACCEL=hvf: must be auto, kvm or tcg"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGoodHost(t)
			g.smoke = tc.smoke
			if tc.env != "" {
				g.env["BOOTLAB_ACCEL"] = tc.env
			}
			s := preflightSpec(t, func(s *spec.Spec) { s.Accelerator = tc.accel })
			if tc.mutate != nil {
				tc.mutate(g, s)
			}
			host := kvmHost()
			if tc.types != nil {
				host.types = tc.types
			}
			got, reason, err := chooseAccelerator(context.Background(), s, host, g.facts().withDefaults(), slog.New(slog.DiscardHandler))
			if tc.errSubstr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errSubstr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Contains(t, reason, tc.reason)
		})
	}
}

func TestMemAvailable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "meminfo")
	require.NoError(t, os.WriteFile(p, []byte("MemTotal: 100 kB\nMemAvailable:    2048 kB\n"), 0o644))
	got, err := memAvailable(os.ReadFile, p)
	require.NoError(t, err)
	assert.Equal(t, uint64(2048*1024), got)
	require.NoError(t, os.WriteFile(p, []byte("MemTotal: 100 kB\n"), 0o644))
	_, err = memAvailable(os.ReadFile, p)
	assert.ErrorContains(t, err, "no MemAvailable line")
}

func TestCanAccess(t *testing.T) {
	t.Parallel()
	u := &HostUser{Name: "q", UID: 10, GIDs: []int{20}}
	assert.True(t, canAccess(&FileOwner{Mode: 0o700, UID: 10}, u, 01), "owner")
	assert.False(t, canAccess(&FileOwner{Mode: 0o070, UID: 10}, u, 01), "owner bits decide for the owner")
	assert.True(t, canAccess(&FileOwner{Mode: 0o710, UID: 0, GID: 20}, u, 01), "group")
	assert.False(t, canAccess(&FileOwner{Mode: 0o701, UID: 0, GID: 20}, u, 01), "group bits decide for members")
	assert.True(t, canAccess(&FileOwner{Mode: 0o701}, u, 01), "other")
	assert.False(t, canAccess(&FileOwner{Mode: 0o660}, u, 06), "other cannot rw")
	assert.True(t, canAccess(&FileOwner{Mode: 0}, &HostUser{UID: 0}, 07), "root")
}

func TestPreflightIPv6WildcardWarns(t *testing.T) {
	t.Parallel()
	g := newGoodHost(t)
	g.listen = append(g.listen, netip.MustParseAddrPort("[::]:443"), netip.MustParseAddrPort("10.9.9.9:6443"))
	r := run(t, preflightSpec(t, nil), kvmHost(), g)
	c := checkOf(t, r, CheckLB)
	assert.True(t, c.Passed(), c.Detail)
	assert.Equal(t, check.StateWarning, c.State)
	assert.Contains(t, c.Detail, "443 (listening on [::]:443)")
	assert.NotContains(t, c.Detail, "6443", "a listener on another address does not conflict")
}

func TestParseProcTCP(t *testing.T) {
	t.Parallel()
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0109DF0A:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 167866 1
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 167868 1
   2: 0100007F:8E3A 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 0 1
`
	got, err := parseProcTCP(tcp)
	require.NoError(t, err)
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("10.223.9.1:9000"), netip.MustParseAddrPort("0.0.0.0:8080")}, got, "only LISTEN (0A) sockets")

	tcp6 := `  sl  local_address                         remote_address                        st
   0: 00000000000000000000000000000000:1A0B 00000000000000000000000000000000:0000 0A
   1: 0000000000000000FFFF00000100007F:0050 00000000000000000000000000000000:0000 0A
`
	got, err = parseProcTCP(tcp6)
	require.NoError(t, err)
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("[::]:6667"), netip.MustParseAddrPort("127.0.0.1:80")}, got)

	_, err = parseProcTCP("head\n 0: zz:1 0 0A\n")
	assert.Error(t, err)
}

// Auto without a kernel to prove KVM falls back to TCG and says the choice
// is unproven (lab up chooses again once the boot files exist); a choice
// proven either way is not.
func TestPreflightMarksAnUnprovenAccelerator(t *testing.T) {
	g := newGoodHost(t)
	r := run(t, preflightSpec(t, func(s *spec.Spec) { s.Image.Kernel = "" }), kvmHost(), g)
	assert.Equal(t, spec.AccelTCG, r.Accelerator)
	assert.True(t, r.AcceleratorUnproven, r.AcceleratorReason)

	r = run(t, preflightSpec(t, nil), kvmHost(), newGoodHost(t))
	assert.Equal(t, spec.AccelKVM, r.Accelerator)
	assert.False(t, r.AcceleratorUnproven)
}

// A dry run's preflight boots no test guest: KVM that looks usable is
// planned, with a reason that says the real up proves it; KVM asked for
// is taken the same way. What needs no test guest is decided as ever.
func TestPreflightWithoutTestGuest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		accel spec.Accelerator
		want  string
	}{
		{spec.AccelAuto, "kvm planned (accelerator: auto: KVM looks usable; the real up proves it with a test guest first and takes tcg if that does not boot; a dry run boots none)"},
		{spec.AccelKVM, "kvm (accelerator: kvm; the real up proves it with a test guest first; a dry run boots none)"},
		{spec.AccelTCG, "tcg (accelerator: tcg)"},
	} {
		g := newGoodHost(t)
		g.smoke = errors.New("a test guest was booted")
		s := preflightSpec(t, func(s *spec.Spec) { s.Accelerator = tc.accel })
		r, err := Run(context.Background(), s, kvmHost(), Options{Facts: g.facts(), NoTestGuest: true})
		require.NoError(t, err)
		assert.Empty(t, g.smoked, "%s: no test guest", tc.accel)
		assert.True(t, r.OK(), "%s: %+v", tc.accel, r.Failed())
		assert.Equal(t, tc.want, r.AcceleratorReason)
	}
}
