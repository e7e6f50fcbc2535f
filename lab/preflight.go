package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// PreflightReport is every check, in a fixed order. A check's OK is false
// when `lab up` would fail or misbehave; its Host is the machine it looked
// at ("localhost", or the remote hypervisor's user@host:port).
type PreflightReport struct {
	Checks []check.Result `json:"checks"`
	// Accelerator is what `lab up` would use, and AcceleratorReason why.
	Accelerator       Accelerator `json:"accelerator,omitempty"`
	AcceleratorReason string      `json:"acceleratorReason,omitempty"`
}

// OK is true when no check failed (warnings pass).
func (r *PreflightReport) OK() bool { return check.OK(r.Checks) }

// Failed returns the failed checks.
func (r *PreflightReport) Failed() []check.Result { return check.Failed(r.Checks) }

// Err is nil when the report passed, else an error naming the failed checks
// and their fixes (exit code 3).
func (r *PreflightReport) Err() error {
	failed := r.Failed()
	if len(failed) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "preflight: %d check(s) failed:", len(failed))
	for _, c := range failed {
		fmt.Fprintf(&b, "\n  - %s: %s", c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(&b, "\n    fix: %s", c.Fix)
		}
	}
	return &PreflightError{msg: b.String()}
}

// PreflightError is a failed preflight (the CLI exits 3 for it, like invalid input).
type PreflightError struct{ msg string }

func (e *PreflightError) Error() string { return e.msg }

// HostUser is a local user as the traversal checks need it.
type HostUser struct {
	Name string
	UID  int
	GIDs []int
}

// FileOwner is the part of a file's metadata the traversal checks need.
type FileOwner struct {
	Mode fs.FileMode
	UID  int
	GID  int
}

// HostFacts are the ways preflight looks at the host. Zero fields read the
// real host; unit tests replace them to reach every failing check.
type HostFacts struct {
	// DevKVM is the KVM device (default /dev/kvm).
	DevKVM string
	// MemInfo is the meminfo file (default /proc/meminfo).
	MemInfo string
	// BootDir holds host kernels for the KVM smoke test (default /boot).
	BootDir    string
	Getenv     func(string) string
	LookPath   func(string) (string, error)
	LookupUser func(name string) (*HostUser, error)
	// Stat follows symlinks.
	Stat func(path string) (*FileOwner, error)
	// FreeBytes is the space available on path's filesystem.
	FreeBytes func(path string) (uint64, error)
	Routes    func() ([]HostRoute, error)
	// Listeners lists the host's listening TCP sockets.
	Listeners func() ([]netip.AddrPort, error)
	// HAProxyCheck is `haproxy -c -f cfgPath` (loadbalancer.Check).
	HAProxyCheck func(ctx context.Context, binary, cfgPath string) error
	// KVMSmoke boots kernel under KVM for a few seconds and returns nil when
	// it printed to the serial console.
	KVMSmoke func(ctx context.Context, kernel string) error
	// SpareKernel is a kernel to prove KVM with when the spec and the host
	// have none (the cached probe kernel: the caller knows the cache).
	SpareKernel string
	// ReadFile reads a file of the host (/proc/meminfo, /proc/net/tcp).
	ReadFile func(path string) ([]byte, error)
	// WriteTemp writes data to a temporary file on the host (the rendered
	// haproxy.cfg that haproxy checks) and returns it and its remover.
	WriteTemp func(data []byte) (path string, remove func(), err error)
	// Where names the host in every check (default "localhost").
	Where string
}

func (h HostFacts) withDefaults() HostFacts {
	if h.DevKVM == "" {
		h.DevKVM = "/dev/kvm"
	}
	if h.MemInfo == "" {
		h.MemInfo = "/proc/meminfo"
	}
	if h.BootDir == "" {
		h.BootDir = "/boot"
	}
	if h.Getenv == nil {
		h.Getenv = os.Getenv
	}
	if h.LookPath == nil {
		h.LookPath = exec.LookPath
	}
	if h.LookupUser == nil {
		h.LookupUser = lookupHostUser
	}
	if h.Stat == nil {
		h.Stat = statOwner
	}
	if h.FreeBytes == nil {
		h.FreeBytes = freeBytes
	}
	if h.Routes == nil {
		h.Routes = HostRoutes
	}
	if h.KVMSmoke == nil {
		h.KVMSmoke = kvmSmoke
	}
	if h.HAProxyCheck == nil {
		h.HAProxyCheck = func(ctx context.Context, binary, cfgPath string) error {
			return loadbalancer.Check(ctx, nil, binary, cfgPath)
		}
	}
	if h.ReadFile == nil {
		h.ReadFile = os.ReadFile
	}
	if h.Listeners == nil {
		h.Listeners = func() ([]netip.AddrPort, error) { return tcpListeners(h.ReadFile) }
	}
	if h.WriteTemp == nil {
		h.WriteTemp = writeLocalTemp
	}
	if h.Where == "" {
		h.Where = "localhost"
	}
	return h
}

func writeLocalTemp(data []byte) (string, func(), error) {
	tmp, err := os.CreateTemp("", "bootlab-preflight-*.cfg")
	if err != nil {
		return "", nil, err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	remove := func() { os.Remove(tmp.Name()) }
	if err := errors.Join(werr, cerr); err != nil {
		remove()
		return "", nil, err
	}
	return tmp.Name(), remove, nil
}

// PreflightOptions configure Preflight.
type PreflightOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// ConnectError is why the hypervisor could not be reached (host is then nil).
	ConnectError error
	// Facts replace how the host is looked at (unit tests). Unset, a
	// remote hypervisor's machine is looked at through its Host (the
	// Hypervisor's, or Machine), this machine directly.
	Facts HostFacts
	// Machine is the hypervisor's machine when the HostInfo given to
	// Preflight is not a Hypervisor (nil: the Hypervisor's Host).
	Machine host.Host
}

// Names of the preflight checks, in report order.
const (
	CheckLibvirt    = "libvirt"
	CheckAccel      = "accelerator"
	CheckKVMDevice  = "kvm device"
	CheckHAProxy    = "haproxy"
	CheckQEMUImg    = "qemu-img"
	CheckNetwork    = "network range"
	CheckLB         = "load balancer"
	CheckMemory     = "memory"
	CheckDisk       = "disk"
	CheckPoolAccess = "pool directory access"
	CheckLabAccess  = "lab directory access"
)

// Preflight checks that the host can run the lab s, and says how to fix
// what it cannot. host may be nil when the connection failed (pass the
// reason in opts.ConnectError). Host facts of remote and test:// URIs are
// not checked here: they are not this machine's.
func Preflight(ctx context.Context, s *Spec, hvInfo HostInfo, opts PreflightOptions) (*PreflightReport, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	kind := s.URIKind()
	machine := opts.Machine
	if hv, ok := hvInfo.(interface{ Host() host.Host }); ok && machine == nil {
		machine = hv.Host()
	}
	_, libvirtOnly := machine.(host.LibvirtOnly)
	facts := opts.Facts
	if kind.Remote() && machine != nil && machine.Remote() && !libvirtOnly {
		facts = remoteFacts(ctx, machine, facts)
	}
	h := facts.withDefaults()
	r := &PreflightReport{}
	add := func(c check.Result) {
		c.Host = h.Where
		log.Debug("preflight check", "name", c.Name, "ok", c.OK, "warning", c.Warning, "detail", c.Detail, "host", c.Host)
		r.Checks = append(r.Checks, c)
	}
	host := hvInfo
	st := opts.Status

	add(checkLibvirt(ctx, s, host, opts.ConnectError))

	// The only slow check (the KVM smoke test boots a kernel): show progress.
	st.Start("Choosing the accelerator")
	accel, reason, err := chooseAccelerator(ctx, s, host, h, log)
	if ctx.Err() != nil {
		st.End(false)
		return nil, ctx.Err()
	}
	c := check.Result{Name: CheckAccel, OK: err == nil, Detail: reason}
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "use `accelerator: tcg` (or --accel tcg), or make KVM usable: load kvm_intel/kvm_amd and check `virsh -c " + s.Libvirt.URI + " domcapabilities --virttype kvm`"
	} else {
		r.Accelerator, r.AcceleratorReason = accel, reason
		if accel == AccelTCG && s.Accelerator != AccelTCG && kind != spec.URITest {
			c.Warning = true
			c.Fix = "guests run under software emulation (TCG), several times slower; on a host with working KVM set accelerator: kvm"
		}
	}
	st.End(c.OK)
	add(c)
	if kind == spec.URILocalSystem {
		add(checkKVMDevice(h))
	}

	if kind.Remote() && opts.Facts.LookPath == nil {
		if libvirtOnly {
			add(check.Result{Name: CheckMemory, Detail: "the remote host of " + s.Libvirt.URI + " cannot be checked: its transport carries libvirt only",
				Fix: "use qemu+ssh://user@host/system: bootlab runs the load balancer and keeps files there over SSH"})
			return r, nil
		}
		if machine == nil || !machine.Remote() {
			// No connection: nothing of that machine can be looked at.
			add(check.Result{Name: CheckMemory, OK: true, Warning: true,
				Detail: "the remote host of " + s.Libvirt.URI + " was not checked (no connection)",
				Fix:    "fix the libvirt check above and run `bootlab lab preflight` again"})
			return r, nil
		}
	}

	add(checkTool(h, CheckHAProxy, "haproxy", "apt-get install -y haproxy   (Fedora/RHEL: dnf install -y haproxy)"))
	add(checkTool(h, CheckQEMUImg, "qemu-img", "apt-get install -y qemu-utils   (Fedora/RHEL: dnf install -y qemu-img)"))

	add(checkNetwork(ctx, s, host, h))
	if kind != spec.URITest {
		add(checkLoadBalancer(ctx, s, h, machine))
	}

	switch kind {
	case spec.URILocalSystem, spec.URILocalSession, spec.URIRemoteSSH, spec.URIRemoteLibvirtOnly, spec.URIInvalid:
		add(checkMemory(s, h))
		add(checkDisk(s, h))
		if kind == spec.URILocalSystem || kind.Remote() {
			add(checkAccess(CheckPoolAccess, "storage.poolDir", s.Storage.PoolDir, h))
		}
		if kind == spec.URILocalSystem {
			add(checkAccess(CheckLabAccess, "labDir", s.LabDir, h))
		}
	case spec.URITest:
		add(check.Result{Name: CheckMemory, OK: true, Detail: "not needed: the test driver runs no VM"})
	}
	return r, nil
}

func checkLibvirt(ctx context.Context, s *Spec, host HostInfo, connErr error) check.Result {
	c := check.Result{Name: CheckLibvirt}
	fix := "start the daemons: `virtlogd -d && libvirtd -d` (without systemd) or `systemctl enable --now libvirtd`; " +
		"install them with `apt-get install -y libvirt-daemon-system libvirt-clients qemu-system-x86`; then try `virsh -c " + s.Libvirt.URI + " version`"
	if host == nil {
		c.Detail = fmt.Sprintf("cannot connect to %s", s.Libvirt.URI)
		if connErr != nil {
			c.Detail += ": " + connErr.Error()
		}
		c.Fix = fix
		return c
	}
	v, err := host.LibvirtVersion(ctx)
	if err != nil {
		c.Detail = fmt.Sprintf("%s does not answer: %v", s.Libvirt.URI, err)
		c.Fix = fix
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("libvirt %s at %s", v, s.Libvirt.URI)
	return c
}

// kvmProblem returns why KVM is not usable for the qemu user, or "".
func kvmProblem(ctx context.Context, host HostInfo, h HostFacts) string {
	if host != nil {
		types, err := host.DomainTypes(ctx)
		if err != nil {
			return fmt.Sprintf("cannot read the hypervisor's domain types: %v", err)
		}
		if !slices.Contains(types, "kvm") {
			return fmt.Sprintf("libvirt offers no kvm domain type (only %s)", strings.Join(types, ", "))
		}
	}
	fo, err := h.Stat(h.DevKVM)
	if err != nil {
		return fmt.Sprintf("%s is missing (no KVM module loaded, or nested virtualisation is off)", h.DevKVM)
	}
	if p := kvmDeviceProblem(fo, h); p != "" {
		return p
	}
	return ""
}

// kvmDeviceProblem checks that the qemu user can open the KVM device.
func kvmDeviceProblem(fo *FileOwner, h HostFacts) string {
	u := qemuUser(h)
	if u == nil {
		return ""
	}
	if !canAccess(fo, u, 06) {
		return fmt.Sprintf("%s is mode %04o owner %d group %d: the qemu user %s cannot open it", h.DevKVM, fo.Mode.Perm(), fo.UID, fo.GID, u.Name)
	}
	return ""
}

// checkKVMDevice catches the 68-second trap: libvirtd (root) sees KVM but
// the qemu user cannot open /dev/kvm, so libvirt re-probes qemu's
// capabilities on every domain start, ~68 s each, under TCG too.
func checkKVMDevice(h HostFacts) check.Result {
	c := check.Result{Name: CheckKVMDevice, OK: true}
	fo, err := h.Stat(h.DevKVM)
	if err != nil {
		c.Detail = h.DevKVM + " absent: nothing to fix"
		return c
	}
	if p := kvmDeviceProblem(fo, h); p != "" {
		c.OK = false
		c.Detail = p + "; libvirt then re-probes qemu on every domain start (~68 s each, even under TCG)"
		c.Fix = "chgrp kvm " + h.DevKVM + " && chmod 0660 " + h.DevKVM + "   (Debian's normal setting; the qemu user is in group kvm)"
		return c
	}
	c.Detail = fmt.Sprintf("%s mode %04o is open to the qemu user", h.DevKVM, fo.Mode.Perm())
	return c
}

// qemuUser is the user qemu:///system runs guests as (Debian libvirt-qemu, Fedora qemu).
func qemuUser(h HostFacts) *HostUser {
	for _, name := range []string{"libvirt-qemu", "qemu"} {
		if u, err := h.LookupUser(name); err == nil {
			return u
		}
	}
	return nil
}

// canAccess applies the owner/group/other permission bits of fo for u;
// want is an rwx mask (04 read, 02 write, 01 execute). root may do anything.
func canAccess(fo *FileOwner, u *HostUser, want fs.FileMode) bool {
	if u.UID == 0 {
		return true
	}
	perm := fo.Mode.Perm()
	switch {
	case fo.UID == u.UID:
		return (perm>>6)&want == want
	case slices.Contains(u.GIDs, fo.GID):
		return (perm>>3)&want == want
	default:
		return perm&want == want
	}
}

// ChooseAccelerator picks kvm or tcg for s on this host and says why.
// accelerator: kvm requires KVM; tcg is taken as asked; auto takes KVM only
// when libvirt offers it, the qemu user can open /dev/kvm and a kernel really
// prints to the serial console under KVM within a few seconds (on some hosts
// KVM looks usable but hangs every guest). BOOTLAB_ACCEL=kvm|tcg overrides.
func ChooseAccelerator(ctx context.Context, s *Spec, host HostInfo, log *slog.Logger) (Accelerator, string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return chooseAccelerator(ctx, s, host, HostFacts{}.withDefaults(), log)
}

func chooseAccelerator(ctx context.Context, s *Spec, host HostInfo, h HostFacts, log *slog.Logger) (Accelerator, string, error) {
	want, source := s.Accelerator, "accelerator: "+string(s.Accelerator)
	if env := h.Getenv("BOOTLAB_ACCEL"); env != "" {
		want, source = Accelerator(env), "BOOTLAB_ACCEL="+env
	}
	if want == "" {
		want, source = AccelAuto, "accelerator: auto"
	}
	if s.URIKind() == spec.URITest {
		return AccelTCG, "tcg: the test driver runs no VM", nil
	}
	remote := s.URIKind().Remote()
	switch want {
	case AccelTCG:
		return AccelTCG, "tcg (" + source + ")", nil
	case AccelKVM:
		if remote {
			return AccelKVM, "kvm (" + source + "; remote host, not checked here)", nil
		}
		if p := kvmProblem(ctx, host, h); p != "" {
			return "", "", fmt.Errorf("%s, but KVM is not usable: %s", source, p)
		}
		// Asked for, KVM is still proven: on some hosts it hangs every guest,
		// and a lab that never boots is a worse answer than a refusal now.
		kernel := proofKernel(s, h)
		if kernel == "" {
			return AccelKVM, "kvm (" + source + "; no kernel here to prove it boots guests)", nil
		}
		log.Debug("KVM smoke test", "kernel", kernel)
		if err := h.KVMSmoke(ctx, kernel); err != nil {
			if ctx.Err() != nil {
				return "", "", ctx.Err()
			}
			return "", "", fmt.Errorf("%s, but a test guest (%s) did not boot under KVM: %v", source, kernel, err)
		}
		return AccelKVM, "kvm (" + source + "; a test guest booted under KVM)", nil
	case AccelAuto:
	default:
		return "", "", fmt.Errorf("%s: must be auto, kvm or tcg", source)
	}
	if remote {
		if host != nil {
			if types, err := host.DomainTypes(ctx); err == nil && slices.Contains(types, "kvm") {
				return AccelKVM, "kvm: the remote libvirt offers it", nil
			}
		}
		return AccelTCG, "tcg: the remote libvirt offers no kvm domain type", nil
	}
	if p := kvmProblem(ctx, host, h); p != "" {
		return AccelTCG, "tcg: " + p, nil
	}
	kernel := proofKernel(s, h)
	if kernel == "" {
		return AccelTCG, NoProofKernel + " (image.kernel, " + h.BootDir + "/vmlinuz* or a cached probe kernel: `bootlab lab probe-image build`) was found to prove it boots guests; set accelerator: kvm to use it anyway", nil
	}
	log.Debug("KVM smoke test", "kernel", kernel)
	if err := h.KVMSmoke(ctx, kernel); err != nil {
		if ctx.Err() != nil {
			return "", "", ctx.Err()
		}
		return AccelTCG, "tcg: KVM looks usable but a test guest did not boot under it (" + err.Error() + ")", nil
	}
	return AccelKVM, "kvm: a test guest booted under KVM", nil
}

// NoProofKernel starts the reason auto gives for TCG when KVM looks usable
// but no kernel was at hand to prove it: `lab up` chooses again once the
// lab's own boot files exist.
const NoProofKernel = "tcg: KVM looks usable but no kernel"

// proofKernel is the kernel the KVM smoke test boots: the lab's own, the
// host's, or the cached probe kernel.
func proofKernel(s *Spec, h HostFacts) string {
	if s.Image.Kernel != "" {
		return s.Image.Kernel
	}
	if k := hostKernel(h.BootDir); k != "" {
		return k
	}
	return h.SpareKernel
}

// hostKernel returns the newest-named readable kernel in bootDir, or "".
func hostKernel(bootDir string) string {
	matches, _ := filepath.Glob(filepath.Join(bootDir, "vmlinuz*"))
	sort.Sort(sort.Reverse(sort.StringSlice(matches)))
	for _, m := range matches {
		if f, err := os.Open(m); err == nil {
			f.Close()
			return m
		}
	}
	return ""
}

// kvmSmokeTimeout bounds the KVM smoke test: a working KVM prints the kernel
// banner in well under a second; a hanging one prints nothing.
const kvmSmokeTimeout = 5 * time.Second

// kvmSmoke boots kernel under KVM with no disk and no initrd and waits for
// its banner on the serial console; the guest then panics and exits.
func kvmSmoke(ctx context.Context, kernel string) error {
	return bootPrints(ctx, "kvm", kernel, kvmSmokeTimeout)
}

// bootPrints runs qemu with accel and kernel for at most timeout and returns
// nil as soon as the kernel banner appears on the serial console.
func bootPrints(ctx context.Context, accel, kernel string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", "-accel", accel, "-machine", "q35", "-m", "128",
		"-display", "none", "-nodefaults", "-no-reboot", "-serial", "stdio",
		"-kernel", kernel, "-append", "console=ttyS0 panic=-1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run qemu-system-x86_64: %w", err)
	}
	// The reader closes found at the banner and exited at EOF; seen is
	// safe to read once exited is closed.
	found, exited := make(chan struct{}), make(chan struct{})
	seen := false
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), "Linux version") {
				seen = true
				close(found)
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case <-found:
	case <-ctx.Done():
	case <-exited:
	}
	_ = cmd.Process.Kill()
	<-exited // stdout reaches EOF once qemu is gone; only then may Wait close it
	ok := seen
	_ = cmd.Wait()
	if ok {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("no kernel output on the serial console in %s", timeout)
	}
	// qemu exited by itself before the kernel spoke: its last words say why.
	msg := strings.TrimSpace(stderr.String())
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	return fmt.Errorf("qemu exited without kernel output on the serial console: %s", msg)
}

func checkTool(h HostFacts, name, binary, fix string) check.Result {
	p, err := h.LookPath(binary)
	if err != nil {
		return check.Result{Name: name, Detail: binary + " not found on PATH", Fix: fix}
	}
	return check.Result{Name: name, OK: true, Detail: p}
}

func checkNetwork(ctx context.Context, s *Spec, host HostInfo, h HostFacts) check.Result {
	c := check.Result{Name: CheckNetwork}
	routes, err := h.Routes()
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "make /proc/net/route readable"
		return c
	}
	var nets []NetworkInfo
	if host != nil {
		if nets, err = host.Networks(ctx); err != nil {
			c.Detail = fmt.Sprintf("cannot list libvirt networks: %v", err)
			c.Fix = "check `virsh -c " + s.Libvirt.URI + " net-list --all`"
			return c
		}
	}
	if err := ValidateHost(s, routes, nets); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			var msgs []string
			for _, fe := range ve.Errs {
				msgs = append(msgs, fe.String())
			}
			c.Detail = strings.Join(msgs, "; ")
		} else {
			c.Detail = err.Error()
		}
		c.Fix = "choose a free range with --cidr (or network.cidr), or a different lab name for another bridge"
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("%s overlaps no host route or other libvirt network", s.Network.CIDR)
	if host == nil {
		c.Warning = true
		c.Detail = fmt.Sprintf("%s overlaps no host route; libvirt networks not checked (no connection)", s.Network.CIDR)
	}
	return c
}

// memAvailable reads MemAvailable from a meminfo file, in bytes.
func memAvailable(readFile func(string) ([]byte, error), path string) (uint64, error) {
	data, err := readFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: bad MemAvailable %q", path, fields[1])
			}
			return kb * 1024, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no MemAvailable line", path)
}

const (
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

func checkMemory(s *Spec, h HostFacts) check.Result {
	c := check.Result{Name: CheckMemory}
	need := LabNeeds(s).MemoryBytes
	avail, err := memAvailable(h.ReadFile, h.MemInfo)
	if err != nil {
		c.Detail = fmt.Sprintf("cannot read available memory: %v", err)
		c.Fix = "check " + h.MemInfo
		return c
	}
	if need > avail {
		c.Detail = fmt.Sprintf("the nodes need %s, the host has %s available", human(need), human(avail))
		c.Fix = "lower nodes[].memoryMiB, use fewer workers (--workers 0) or masters, or stop other VMs"
		if s.Profile == ProfileOpenShift {
			c.Fix += "; the openshift profile's sizes are the documented minimums, a probe lab (--profile probe) needs 256 MiB per node"
		}
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("the nodes need %s of %s available", human(need), human(avail))
	return c
}

// overlayGrowth is how much one node's overlay grows during a lab's life:
// a probe node boots from its initramfs and barely writes its disk; an RHCOS
// node pulls the release images (~10 GiB on the bootstrap and each master
// by bootstrap-complete).
func overlayGrowth(p Profile) uint64 {
	if p == ProfileProbe {
		return 16 * mib
	}
	return 10 * gib
}

// baseImageEstimate is the size assumed for a base image not yet on disk
// (an RHCOS qcow2 is ~2.5 GiB uncompressed qcow2 data).
const baseImageEstimate = 3 * gib

func checkDisk(s *Spec, h HostFacts) check.Result {
	c := check.Result{Name: CheckDisk}
	need := LabNeeds(s).DiskBytes
	_, base := baseImageNeed(s)
	dir := nearestExisting(s.Storage.PoolDir, h)
	free, err := h.FreeBytes(dir)
	if err != nil {
		c.Detail = fmt.Sprintf("cannot read free space of %s: %v", dir, err)
		c.Fix = "check storage.poolDir " + s.Storage.PoolDir
		return c
	}
	detail := fmt.Sprintf("%s needs %s (%s + %d overlays × %s), %s has %s free",
		s.Storage.PoolDir, human(need), base, len(s.Nodes), human(overlayGrowth(s.Profile)), dir, human(free))
	if need > free {
		c.Detail = detail
		c.Fix = "free space on " + dir + " or set storage.poolDir to a larger filesystem"
		return c
	}
	c.OK = true
	c.Detail = detail
	return c
}

// nearestExisting returns path or its closest existing parent.
func nearestExisting(path string, h HostFacts) string {
	p := filepath.Clean(path)
	for {
		if _, err := h.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}

// checkAccess checks that the qemu user can traverse every existing
// directory from / down to dir (qemu opens disks, kernels and Ignition
// files there). Directories not yet created are made 0755 by bootlab.
func checkAccess(name, field, dir string, h HostFacts) check.Result {
	c := check.Result{Name: name}
	u := qemuUser(h)
	if u == nil {
		c.OK, c.Warning = true, true
		c.Detail = "no libvirt-qemu or qemu user on this host: access of " + dir + " not checked"
		return c
	}
	clean := filepath.Clean(dir)
	var blocked []string
	p := "/"
	parts := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	for i := 0; ; i++ {
		fo, err := h.Stat(p)
		if err != nil {
			break // created later by bootlab, 0755
		}
		if !canAccess(fo, u, 01) {
			blocked = append(blocked, fmt.Sprintf("%s (mode %04o)", p, fo.Mode.Perm()))
		}
		if i >= len(parts) || parts[i] == "" {
			break
		}
		p = filepath.Join(p, parts[i])
	}
	if len(blocked) > 0 {
		c.Detail = fmt.Sprintf("the qemu user %s cannot traverse %s", u.Name, strings.Join(blocked, ", "))
		c.Fix = fmt.Sprintf("chmod o+x %s   (or move %s under a directory qemu can reach, e.g. /var/lib/bootlab)", strings.Join(dirsOf(blocked), " "), field)
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("%s can reach %s", u.Name, clean)
	return c
}

func dirsOf(blocked []string) []string {
	out := make([]string, len(blocked))
	for i, b := range blocked {
		out[i] = strings.SplitN(b, " ", 2)[0]
	}
	return out
}

func human(b uint64) string {
	switch {
	case b >= gib:
		return fmt.Sprintf("%.1f GiB", float64(b)/float64(gib))
	default:
		return fmt.Sprintf("%d MiB", b/mib)
	}
}

func lookupHostUser(name string) (*HostUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, err
	}
	hu := &HostUser{Name: name, UID: uid}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if g, err := strconv.Atoi(id); err == nil {
			hu.GIDs = append(hu.GIDs, g)
		}
	}
	return hu, nil
}

func statOwner(path string) (*FileOwner, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	fo := &FileOwner{Mode: fi.Mode()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		fo.UID, fo.GID = int(st.Uid), int(st.Gid)
	}
	return fo, nil
}

func freeBytes(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// checkLoadBalancer renders the lab's haproxy.cfg, has haproxy check it, and
// makes sure no other program already listens on its ports.
func checkLoadBalancer(ctx context.Context, s *Spec, h HostFacts, machine host.Host) check.Result {
	c := check.Result{Name: CheckLB}
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
		c.OK = true
		c.Detail = fmt.Sprintf("haproxy.cfg valid; this lab's haproxy (pid %d) already holds its ports", st.PID)
		return c
	}
	listeners, err := h.Listeners()
	if err != nil {
		c.OK, c.Warning = true, true
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
	c.OK = true
	c.Detail = fmt.Sprintf("haproxy.cfg valid; ports free on %s", cfg.BindAddress)
	if len(maybe) > 0 {
		c.Warning = true
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
