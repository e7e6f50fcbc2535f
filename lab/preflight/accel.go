package preflight

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"
)

// kvmProblem returns why KVM is not usable for the qemu user, or "".
func kvmProblem(ctx context.Context, host hypervisor.HostInfo, h HostFacts) string {
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
	c := check.Result{Name: CheckKVMDevice, State: check.StatePassed}
	fo, err := h.Stat(h.DevKVM)
	if err != nil {
		c.Detail = h.DevKVM + " absent: nothing to fix"
		return c
	}
	if p := kvmDeviceProblem(fo, h); p != "" {
		c.State = check.StateFailed
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
// facts are the host facts preflight was given (the zero HostFacts reads
// this machine).
func ChooseAccelerator(ctx context.Context, s *spec.Spec, host hypervisor.HostInfo, facts HostFacts, log *slog.Logger) (spec.Accelerator, string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return chooseAccelerator(ctx, s, host, facts.withDefaults(), log)
}

// accelChoice is an accelerator chosen and why. Unproven: auto fell back
// to TCG only for want of a kernel to prove KVM with (lab up chooses
// again once the lab's own boot files exist).
type accelChoice struct {
	accel    spec.Accelerator
	reason   string
	unproven bool
}

func chooseAccelerator(ctx context.Context, s *spec.Spec, host hypervisor.HostInfo, h HostFacts, log *slog.Logger) (spec.Accelerator, string, error) {
	c, err := choose(ctx, s, host, h, true, log)
	return c.accel, c.reason, err
}

// choose picks the accelerator. prove boots a test guest where KVM must
// be proven (a dry run passes false: KVM is then planned where it looks
// usable, and the reason says the real up proves it).
func choose(ctx context.Context, s *spec.Spec, host hypervisor.HostInfo, h HostFacts, prove bool, log *slog.Logger) (accelChoice, error) {
	want, source := s.Accelerator, "accelerator: "+string(s.Accelerator)
	if env := h.Getenv("BOOTLAB_ACCEL"); env != "" {
		want, source = spec.Accelerator(env), "BOOTLAB_ACCEL="+env
	}
	if want == "" {
		want, source = spec.AccelAuto, "accelerator: auto"
	}
	if !capabilities(host).RunsGuests {
		return accelChoice{accel: spec.AccelTCG, reason: "tcg: the test driver runs no VM"}, nil
	}
	remote := s.URIKind().Remote()
	switch want {
	case spec.AccelTCG:
		return accelChoice{accel: spec.AccelTCG, reason: "tcg (" + source + ")"}, nil
	case spec.AccelKVM:
		if remote {
			return accelChoice{accel: spec.AccelKVM, reason: "kvm (" + source + "; remote host, not checked here)"}, nil
		}
		if p := kvmProblem(ctx, host, h); p != "" {
			return accelChoice{}, fmt.Errorf("%s, but KVM is not usable: %s", source, p)
		}
		// Asked for, KVM is still proven: on some hosts it hangs every guest,
		// and a lab that never boots is a worse answer than a refusal now.
		kernel := proofKernel(s, h)
		if kernel == "" {
			return accelChoice{accel: spec.AccelKVM, reason: "kvm (" + source + "; no kernel here to prove it boots guests)"}, nil
		}
		if !prove {
			return accelChoice{accel: spec.AccelKVM, reason: "kvm (" + source + "; the real up proves it with a test guest first; a dry run boots none)"}, nil
		}
		log.Debug("KVM smoke test", "kernel", kernel)
		if err := h.KVMSmoke(ctx, kernel); err != nil {
			if ctx.Err() != nil {
				return accelChoice{}, ctx.Err()
			}
			return accelChoice{}, fmt.Errorf("%s, but a test guest (%s) did not boot under KVM: %v", source, kernel, err)
		}
		return accelChoice{accel: spec.AccelKVM, reason: "kvm (" + source + "; a test guest booted under KVM)"}, nil
	case spec.AccelAuto:
	default:
		return accelChoice{}, fmt.Errorf("%s: must be auto, kvm or tcg", source)
	}
	if remote {
		if host != nil {
			if types, err := host.DomainTypes(ctx); err == nil && slices.Contains(types, "kvm") {
				return accelChoice{accel: spec.AccelKVM, reason: "kvm: the remote libvirt offers it"}, nil
			}
		}
		return accelChoice{accel: spec.AccelTCG, reason: "tcg: the remote libvirt offers no kvm domain type"}, nil
	}
	if p := kvmProblem(ctx, host, h); p != "" {
		return accelChoice{accel: spec.AccelTCG, reason: "tcg: " + p}, nil
	}
	kernel := proofKernel(s, h)
	if kernel == "" {
		return accelChoice{accel: spec.AccelTCG, reason: "tcg: KVM looks usable but no kernel (image.kernel, " + h.BootDir + "/vmlinuz* or a cached probe kernel: `bootlab lab probe-image build`) was found to prove it boots guests; set accelerator: kvm to use it anyway", unproven: true}, nil
	}
	if !prove {
		return accelChoice{accel: spec.AccelKVM, reason: "kvm planned (" + source + ": KVM looks usable; the real up proves it with a test guest first and takes tcg if that does not boot; a dry run boots none)", unproven: true}, nil
	}
	log.Debug("KVM smoke test", "kernel", kernel)
	if err := h.KVMSmoke(ctx, kernel); err != nil {
		if ctx.Err() != nil {
			return accelChoice{}, ctx.Err()
		}
		return accelChoice{accel: spec.AccelTCG, reason: "tcg: KVM looks usable but a test guest did not boot under it (" + err.Error() + ")"}, nil
	}
	return accelChoice{accel: spec.AccelKVM, reason: "kvm: a test guest booted under KVM"}, nil
}

// proofKernel is the kernel the KVM smoke test boots: the lab's own, the
// host's, or the cached probe kernel.
func proofKernel(s *spec.Spec, h HostFacts) string {
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
