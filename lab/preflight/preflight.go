package preflight

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"
)

// Report is every check, in a fixed order. A check's OK is false
// when `lab up` would fail or misbehave; its Host is the machine it looked
// at ("localhost", or the remote hypervisor's user@host:port).
type Report struct {
	Checks []check.Result `json:"checks"`
	// Accelerator is what `lab up` would use, and AcceleratorReason why.
	Accelerator       spec.Accelerator `json:"accelerator,omitempty"`
	AcceleratorReason string           `json:"acceleratorReason,omitempty"`
	// AcceleratorUnproven: auto fell back to TCG only because no kernel
	// was at hand to prove KVM boots guests; lab up chooses again once the
	// lab's own boot files exist.
	AcceleratorUnproven bool `json:"-"`
}

// OK is true when no check failed (warnings pass).
func (r *Report) OK() bool { return check.OK(r.Checks) }

// Failed returns the failed checks.
func (r *Report) Failed() []check.Result { return check.Failed(r.Checks) }

// Err is nil when the report passed, else an error naming the failed checks
// and their fixes (exit code 3).
func (r *Report) Err() error {
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
	return &Error{msg: b.String()}
}

// Error is a failed preflight (the CLI exits 3 for it, like invalid input).
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Options configure Run.
type Options struct {
	Log    *slog.Logger
	Status *status.Status
	// ConnectError is why the hypervisor could not be reached (host is then nil).
	ConnectError error
	// Facts replace how the host is looked at (unit tests). Unset, a
	// remote hypervisor's machine is looked at through its Host (the
	// Hypervisor's, or Machine), this machine directly.
	Facts HostFacts
	// Machine is the hypervisor's machine when the HostInfo given to
	// Run is not a Hypervisor (nil: the Hypervisor's Host).
	Machine host.Host
	// NoTestGuest is a dry run's preflight: it boots no test guest to
	// prove KVM. Where one would, KVM that looks usable is planned
	// (AcceleratorUnproven), and the reason says the real up proves it.
	NoTestGuest bool
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

// Run checks that the host can run the lab s, and says how to fix
// what it cannot. host may be nil when the connection failed (pass the
// reason in opts.ConnectError). Host facts of remote and test:// URIs are
// not checked here: they are not this machine's.
func Run(ctx context.Context, s *spec.Spec, hvInfo hypervisor.HostInfo, opts Options) (*Report, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	kind := s.URIKind()
	caps := capabilities(hvInfo)
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
	r := &Report{}
	add := func(c check.Result) {
		c.Host = h.Where
		log.Debug("preflight check", "name", c.Name, "state", c.State, "detail", c.Detail, "host", c.Host)
		r.Checks = append(r.Checks, c)
	}
	host := hvInfo

	add(checkLibvirt(ctx, s, host, opts.ConnectError))
	c, err := acceleratorCheck(ctx, s, host, h, caps, !opts.NoTestGuest, opts.Status, log, r)
	if err != nil {
		return nil, err
	}
	add(c)
	if kind == spec.URILocalSystem {
		add(checkKVMDevice(h))
	}
	if kind.Remote() && opts.Facts.LookPath == nil {
		if c, unreachable := remoteUnchecked(s, machine, libvirtOnly); unreachable {
			add(c)
			return r, nil
		}
	}

	add(checkTool(h, CheckHAProxy, "haproxy", "apt-get install -y haproxy   (Fedora/RHEL: dnf install -y haproxy)"))
	add(checkTool(h, CheckQEMUImg, "qemu-img", "apt-get install -y qemu-utils   (Fedora/RHEL: dnf install -y qemu-img)"))

	add(checkNetwork(ctx, s, host, h))
	if caps.HostNetwork {
		add(checkLoadBalancer(ctx, s, h, machine))
	}
	if !caps.RunsGuests {
		add(check.Result{Name: CheckMemory, State: check.StatePassed, Detail: "not needed: the test driver runs no VM"})
		return r, nil
	}
	add(checkMemory(s, h))
	add(checkDisk(s, h))
	if kind == spec.URILocalSystem || kind.Remote() {
		add(checkAccess(CheckPoolAccess, "storage.poolDir", s.Storage.PoolDir, h))
	}
	if kind == spec.URILocalSystem {
		add(checkAccess(CheckLabAccess, "labDir", s.LabDir, h))
	}
	return r, nil
}

// acceleratorCheck chooses the accelerator (the only slow check: the KVM
// smoke test boots a kernel, unless prove is false, so it shows progress)
// and records the choice in r; an error only when ctx ended.
func acceleratorCheck(ctx context.Context, s *spec.Spec, host hypervisor.HostInfo, h HostFacts, caps hypervisor.Capabilities, prove bool, st *status.Status, log *slog.Logger, r *Report) (check.Result, error) {
	st.Start("Choosing the accelerator")
	choice, err := choose(ctx, s, host, h, prove, log)
	accel, reason := choice.accel, choice.reason
	if ctx.Err() != nil {
		st.End(false)
		return check.Result{}, ctx.Err()
	}
	c := check.Result{Name: CheckAccel, State: check.PassIf(err == nil), Detail: reason}
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "use `accelerator: tcg` (or --accel tcg), or make KVM usable: load kvm_intel/kvm_amd and check `virsh -c " + s.Libvirt.URI + " domcapabilities --virttype kvm`"
	} else {
		r.Accelerator, r.AcceleratorReason, r.AcceleratorUnproven = accel, reason, choice.unproven
		if accel == spec.AccelTCG && s.Accelerator != spec.AccelTCG && caps.RunsGuests {
			c.State = check.StateWarning
			c.Fix = "guests run under software emulation (TCG), several times slower; on a host with working KVM set accelerator: kvm"
		}
	}
	st.End(c.Passed())
	return c, nil
}

// remoteUnchecked is the check a remote host gets when nothing of it can
// be looked at (a transport that carries libvirt only, or no connection),
// and true then: the host's own checks are skipped.
func remoteUnchecked(s *spec.Spec, machine host.Host, libvirtOnly bool) (check.Result, bool) {
	if libvirtOnly {
		return check.Result{Name: CheckMemory, State: check.StateFailed, Detail: "the remote host of " + s.Libvirt.URI + " cannot be checked: its transport carries libvirt only",
			Fix: "use qemu+ssh://user@host/system: bootlab runs the load balancer and keeps files there over SSH"}, true
	}
	if machine == nil || !machine.Remote() {
		return check.Result{Name: CheckMemory, State: check.StateWarning,
			Detail: "the remote host of " + s.Libvirt.URI + " was not checked (no connection)",
			Fix:    "fix the libvirt check above: this host is checked once bootlab can connect to it"}, true
	}
	return check.Result{}, false
}

// capabilities are the hypervisor's; without a connection, a hypervisor
// that runs guests is assumed, so every check that could apply is shown.
func capabilities(hv hypervisor.HostInfo) hypervisor.Capabilities {
	if hv == nil {
		return hypervisor.Full()
	}
	return hv.Capabilities()
}
