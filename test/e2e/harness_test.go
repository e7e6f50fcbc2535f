//go:build e2e

// Package e2e drives the built bootlab binary against a real libvirtd on
// qemu:///system with real VMs (TCG), real dnsmasq and real haproxy, as a
// user would. Run with `make e2e` (root, libvirtd running: see .ci/run).
package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/preflight"
)

var (
	binDir     string // holds bootlab and bootlab-probe
	bootlabBin string
)

// e2eRoot holds lab directories: qemu (libvirt-qemu) must traverse it.
const e2eRoot = "/var/lib/bootlab-e2e"

func TestMain(m *testing.M) {
	if err := preconditions(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e preconditions not met: %v\n", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "bootlab-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	bootlabBin = filepath.Join(dir, "bootlab")
	if err := buildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := prepareProbeImage(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// agentBuildFlags are the flags bootlab builds the probe agent with from
// its source tree (lab/probe.FindAgent): the same source gives the same
// bytes, so the image the tests share is the one `make test-kernel`, a
// source-tree `bootlab lab probe-image build` or an earlier run cached.
var agentBuildFlags = []string{"-trimpath", "-buildvcs=false", "-tags", "netgo,osusergo", "-ldflags=-s -w"}

// buildBinaries builds bootlab and the probe agent into dir once per run.
func buildBinaries(dir string) error {
	for _, pkg := range []string{"./cmd/bootlab", "./cmd/bootlab-probe"} {
		if _, err := os.Stat(filepath.Join("..", "..", pkg)); err != nil {
			continue
		}
		args := []string{"build", "-o", filepath.Join(dir, filepath.Base(pkg))}
		if pkg == "./cmd/bootlab-probe" {
			args = append(args, agentBuildFlags...)
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", pkg, err, b)
		}
	}
	return nil
}

// prepareProbeImage builds (or finds cached) the probe image and the
// rehearsal initrd every test's labs boot, once, before any test runs:
// tests running side by side then only read the cache, and no test pays
// for the image. BOOTLAB_PROBE_AGENT, inherited by every bootlab the tests
// start, makes them all use the agent built here rather than each
// `lab up` building one from the source tree into the same cache path.
func prepareProbeImage() error {
	agent := filepath.Join(binDir, "bootlab-probe")
	if err := os.Setenv("BOOTLAB_PROBE_AGENT", agent); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bootlabBin, "lab", "probe-image", "build", "--rehearsal")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("prepare the shared probe image (bootlab lab probe-image build --rehearsal): %v\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "e2e: the shared probe image and rehearsal initrd are ready (%s)\n", time.Since(start).Round(time.Second))
	return nil
}

func preconditions() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the e2e tests create libvirt networks and VMs on qemu:///system: run them as root (sudo make e2e)")
	}
	for _, tool := range []string{"virsh", "haproxy", "qemu-img", "dig", "qemu-system-x86_64"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: apt-get install -y libvirt-clients haproxy qemu-utils dnsutils qemu-system-x86", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "virsh", "-c", "qemu:///system", "version").CombinedOutput(); err != nil {
		return fmt.Errorf("libvirtd is not answering on qemu:///system (%v: %s): start it with `mkdir -p /run/libvirt && virtlogd -d && libvirtd -d`", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// result is what one bootlab run printed and returned.
type result struct {
	Stdout, Stderr string
	Code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s\n--- stderr\n%s", r.Code, r.Stdout, r.Stderr)
}

// run executes the built bootlab with args (10 minutes at most).
func run(t *testing.T, args ...string) result {
	t.Helper()
	return runFor(t, 10*time.Minute, args...)
}

// runFor executes the built bootlab with args, for d at most: a command
// bounded by a longer wait of its own (stage 13's 20 minutes for the
// bootstrap API) gets that.
func runFor(t *testing.T, d time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, bootlabBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = bootlabEnv(t)
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run bootlab %v: %v", args, err)
	}
	t.Logf("bootlab %s -> exit %d", strings.Join(args, " "), code)
	return result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// runEnv is the environment each test's bootlab runs add to the
// process's (its BOOTLAB_HOME, BOOTLAB_LAB), by top-level test name:
// t.Setenv would change it for every test and keep the test from running
// beside the others.
var (
	runEnvMu sync.Mutex
	runEnv   = map[string]map[string]string{}
)

// setRunEnv makes the bootlab runs of t's top-level test (its subtests
// included) see key=value, until that test ends; "" unsets it for them.
func setRunEnv(t *testing.T, key, value string) {
	t.Helper()
	top, _, _ := strings.Cut(t.Name(), "/")
	runEnvMu.Lock()
	defer runEnvMu.Unlock()
	if runEnv[top] == nil {
		runEnv[top] = map[string]string{}
		t.Cleanup(func() {
			runEnvMu.Lock()
			defer runEnvMu.Unlock()
			delete(runEnv, top)
		})
	}
	runEnv[top][key] = value
}

// bootlabEnv is the environment of a bootlab run of t: the process's, the
// built binaries first on PATH, then what setRunEnv set for its test (the
// last value of a key is the one a command sees).
func bootlabEnv(t *testing.T) []string {
	env := append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
	top, _, _ := strings.Cut(t.Name(), "/")
	runEnvMu.Lock()
	defer runEnvMu.Unlock()
	for k, v := range runEnv[top] {
		if v == "" {
			env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
			continue
		}
		env = append(env, k+"="+v)
	}
	return env
}

// mustRun runs bootlab and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := run(t, args...)
	if r.Code != 0 {
		t.Fatalf("bootlab %s failed:\n%s", strings.Join(args, " "), r)
	}
	return r
}

// labEnv is one test lab: its name, spec file, network, the test's
// directory for it and its lab directory (labDir:) inside that.
type labEnv struct {
	Name     string
	SpecFile string
	CIDR     netip.Prefix
	Dir      string
	LabDir   string
}

// Gateway is the host's address on the lab bridge (.1).
func (l labEnv) Gateway() string { return l.CIDR.Addr().Next().String() }

// cidrMu guards handedOut: the /24s freeCIDR gave this run's tests, so two
// tests running side by side never get the same one before either has
// defined its network.
var (
	cidrMu    sync.Mutex
	handedOut = map[netip.Prefix]bool{}
)

// freeCIDR returns a /24 in 10.213.0.0/16 that no host route or libvirt
// network uses and no other test of this run was given.
func freeCIDR(t *testing.T) netip.Prefix {
	t.Helper()
	return freeBlock(t, 24)
}

// freePool returns a /21 address pool in 10.213.0.0/16 whose eight /24s
// are all free as freeCIDR's are, and hands them all out: a class carves
// its labs' networks from it while other tests make theirs beside it.
func freePool(t *testing.T) netip.Prefix {
	t.Helper()
	return freeBlock(t, 21)
}

// freeBlock returns a random aligned block of the given prefix length (21
// to 24) in 10.213.0.0/16 each of whose /24s no host route or libvirt
// network uses and no other test of this run was given, and hands them out.
func freeBlock(t *testing.T, bits int) netip.Prefix {
	t.Helper()
	cidrMu.Lock()
	defer cidrMu.Unlock()
	routes, err := preflight.HostRoutes()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("virsh", "-c", "qemu:///system", "net-list", "--all", "--name").Output()
	var used []string
	for _, n := range strings.Fields(string(out)) {
		x, _ := exec.Command("virsh", "-c", "qemu:///system", "net-dumpxml", n).Output()
		used = append(used, string(x))
	}
	taken := func(p netip.Prefix) bool {
		for _, r := range routes {
			if r.Prefix.Bits() > 0 && r.Prefix.Overlaps(p) {
				return true
			}
		}
		for _, x := range used {
			if strings.Contains(x, fmt.Sprintf("10.213.%d.", p.Addr().As4()[2])) {
				return true
			}
		}
		return handedOut[p]
	}
	size := byte(1) << (24 - bits)
	b := make([]byte, 1)
	for i := 0; i < 256; i++ {
		_, _ = rand.Read(b)
		first := b[0] &^ (size - 1)
		var subnets []netip.Prefix
		for j := byte(0); j < size; j++ {
			subnets = append(subnets, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 213, first + j, 0}), 24))
		}
		if !slices.ContainsFunc(subnets, taken) {
			for _, p := range subnets {
				handedOut[p] = true
			}
			return netip.PrefixFrom(subnets[0].Addr(), bits)
		}
	}
	t.Fatalf("no free /%d in 10.213.0.0/16", bits)
	return netip.Prefix{}
}

// newLab writes a probe-profile spec for a lab with a unique name on a free
// isolated /24 (TCG, lab directory traversable by qemu) and registers
// `lab down` as cleanup.
func newLab(t *testing.T) labEnv { t.Helper(); return newLabWith(t, "") }

// newLabWith is newLab with extra YAML appended to the spec (nodes, topology...).
func newLabWith(t *testing.T, extra string) labEnv {
	t.Helper()
	return newLabSpec(t, extra, true)
}

// newLabSpec is newLabWith; localPool puts the lab's storage pool under its
// e2e directory, which exists on this machine only (a lab on a remote
// hypervisor keeps the default pool directory, there).
func newLabSpec(t *testing.T, extra string, localPool bool) labEnv {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "e2e-" + hex.EncodeToString(b)
	cidr := freeCIDR(t)
	dir := filepath.Join(e2eRoot, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(e2eRoot, 0o755)
	storage := ""
	if localPool {
		storage = fmt.Sprintf("storage:\n  poolDir: %s\n", filepath.Join(dir, "pool"))
	}
	labDir := filepath.Join(dir, "lab")
	spec := fmt.Sprintf(`name: %s
profile: probe
accelerator: tcg
network:
  cidr: %s
  mode: isolated
labDir: %s
%s%s`, name, cidr, labDir, storage, extra)
	file := filepath.Join(dir, "bootlab.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	l := labEnv{Name: name, SpecFile: file, CIDR: cidr, Dir: dir, LabDir: labDir}
	t.Cleanup(func() {
		r := run(t, "lab", "down", "-f", file)
		if r.Code != 0 {
			t.Errorf("cleanup: lab down failed:\n%s", r)
		}
		if left := labDirLeft(t, labDir); len(left) > 0 {
			t.Errorf("cleanup: lab down left the lab directory %s with %s", labDir, strings.Join(left, ", "))
		}
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	return l
}

// labDown runs `bootlab lab down` with args (the lab's target flags, and
// --keep-images) and fails the test unless it exits 0 and the lab
// directory labDir is gone: everything bootlab wrote for the lab belongs
// to it, so whatever is left names itself here. With --keep-images only
// the base image marker may stay (the next up reuses the kept image).
func labDown(t *testing.T, labDir string, args ...string) result {
	t.Helper()
	r := mustRun(t, append([]string{"lab", "down"}, args...)...)
	left := labDirLeft(t, labDir)
	if slices.Contains(args, "--keep-images") {
		marker := filepath.Base(labdir.BaseImageMarker(&spec.Spec{LabDir: labDir}))
		left = slices.DeleteFunc(left, func(p string) bool { return p == marker })
	}
	if len(left) > 0 {
		t.Errorf("lab down %s left the lab directory %s with %s", strings.Join(args, " "), labDir, strings.Join(left, ", "))
	}
	return r
}

// labDirLeft lists what is in the lab directory dir (paths relative to it;
// nothing when dir does not exist).
func labDirLeft(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(dir, p); rel != "." && (!d.IsDir() || isEmptyDir(p)) {
			left = append(left, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("list the lab directory %s: %v", dir, err)
	}
	if _, err := os.Stat(dir); err == nil && len(left) == 0 {
		left = append(left, "(the empty directory itself)")
	}
	return left
}

func isEmptyDir(p string) bool {
	entries, err := os.ReadDir(p)
	return err == nil && len(entries) == 0
}

// virsh runs virsh on qemu:///system and returns its stdout; a failure's
// error carries what virsh said on stderr (it wraps the *exec.ExitError).
func virsh(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("virsh", append([]string{"-c", "qemu:///system"}, args...)...).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		err = fmt.Errorf("virsh %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(ee.Stderr))
	}
	return string(out), err
}

// dig asks the lab's dnsmasq for name's A records.
func dig(t *testing.T, server, name string) []string {
	t.Helper()
	out, err := exec.Command("dig", "+short", "+time=2", "+tries=3", "@"+server, name, "A").Output()
	if err != nil {
		t.Fatalf("dig @%s %s: %v", server, name, err)
	}
	return strings.Fields(string(out))
}

// leftovers lists libvirt objects still named after the lab.
func leftovers(t *testing.T, l labEnv) []string {
	t.Helper()
	var left []string
	for _, kind := range [][]string{{"list", "--all", "--name"}, {"net-list", "--all", "--name"}, {"pool-list", "--all", "--name"}} {
		out, err := virsh(t, kind...)
		if err != nil {
			t.Fatalf("virsh %v: %v", kind, err)
		}
		for _, n := range strings.Fields(out) {
			if strings.HasPrefix(n, "bootlab-"+l.Name) {
				left = append(left, kind[0]+":"+n)
			}
		}
	}
	return left
}

// reportGuestClockOnFailure registers, for a rehearsal lab made at up,
// a cleanup that runs before the lab's teardown when t has failed: it
// logs the bootstrap's uptime beside this host's time since up, and its
// kernel's TSC and clocksource lines. A guest clock that runs fast times
// out every wait on the node: once in CI, stage 13 gave up "after 20m0s"
// on the node 2m21s into the stage by this host's clock.
func reportGuestClockOnFailure(t *testing.T, up time.Time, lab ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		args := append(append([]string{"lab", "ssh"}, lab...), "bootstrap", "--",
			`cut -d' ' -f1 /proc/uptime; sudo -n timeout 1 cat /dev/kmsg | grep -i 'tsc\|clocksource' | cut -d';' -f2`)
		r := runFor(t, time.Minute, args...)
		t.Logf("guest clock: the bootstrap's uptime and kernel lines, %s after lab up by this host's clock:\n%s", time.Since(up).Round(time.Second), r.Stdout+r.Stderr)
	})
}
