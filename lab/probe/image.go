package probe

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/cache"
)

// Modules are the kernel modules the probe initramfs loads, in load order:
// virtio PCI, the virtio-rng driver of the domain's RNG device (it fills
// the kernel's random pool from the host's, so the agent's wait for it
// before DHCP ends at once instead of on jitter entropy), networking, the
// fw_cfg driver Ignition reads from, and the virtio disk with ext4 that a
// rehearsal node mounts the Kubernetes volume (wire.KubeVolumeSerial) with
// (Debian's cloud kernel has ext4 and its helpers built in; another kernel
// may have them as modules).
var Modules = []string{
	"virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
	"virtio_rng", "failover", "net_failover", "virtio_net", "qemu_fw_cfg",
	"virtio_blk", "crc16", "mbcache", "jbd2", "ext4",
}

// Cmdline is the probe kernel command line. no_timer_check: under TCG on
// a loaded host the kernel's IO-APIC timer check can fail and panic the
// boot ("IO-APIC + timer doesn't work!"); virtual machines skip it.
// tsc=reliable: under TCG the kernel's boot-time TSC sync check fails
// ("TSCs unsynchronized") and the clock falls back to the HPET,
// where every clock read traps into the emulator (time.Now costs 1.65 us
// instead of 0.18 us, and the agent, etcd and kube-apiserver read the clock
// constantly). TCG derives every vCPU's TSC from one host clock, so it is
// monotonic across them; under KVM the guest uses kvm-clock anyway.
// cryptomgr.notests: the kernel's self-tests of its crypto algorithms ran
// 0.25 s of a 2.2 s TCG boot (crypto_kdf108_init and crypto_algapi_init
// were the two slowest initcalls); no probe or rehearsal program uses the
// kernel's crypto (Go and OpenSSL do their own in user space).
const Cmdline = "console=ttyS0 panic=-1 quiet no_timer_check tsc=reliable cryptomgr.notests"

// maxKernelBytes bounds the kernel read into the probe image: a vmlinuz
// is some 10 MiB; a path to something else must not fill memory.
const maxKernelBytes = 256 << 20

// DebianKernelPackage is the kernel used when the host has none to lend.
const DebianKernelPackage = "linux-image-cloud-amd64"

// imageFormat is bumped when the initramfs layout changes, so caches rebuild.
const imageFormat = "bootlab-probe-image/1"

// ImageOptions say where the probe image's parts come from.
type ImageOptions struct {
	// CacheDir holds downloads and built images (DefaultCacheDir()).
	CacheDir string
	// Kernel and ModulesDir override the kernel and its module tree
	// (a /lib/modules/<release> directory).
	Kernel     string
	ModulesDir string
	// Agent is the static bootlab-probe binary to put at /init.
	Agent string
	// Rehearsal also builds the rehearsal bootstrap's initrd: the probe
	// initramfs followed by the tools archive (EnsureTools) of the
	// OpenShift release OpenShiftVersion, whose etcd it carries.
	Rehearsal        bool
	OpenShiftVersion string
	Log              *slog.Logger
}

// Image is a built probe image.
type Image struct {
	Kernel   string `json:"kernel"`
	Initrd   string `json:"initrd"`
	BaseDisk string `json:"baseDisk"`
	Cmdline  string `json:"cmdline"`
	Hash     string `json:"hash"`
	// RehearsalInitrd is the initrd of a rehearsal bootstrap (only with
	// ImageOptions.Rehearsal): Initrd with the tools archive appended, which
	// the kernel unpacks over it.
	RehearsalInitrd string `json:"rehearsalInitrd,omitempty"`
	// PVH says Kernel is the uncompressed kernel with a PVH entry
	// (PVHKernel), made from the bzImage beside it; else Kernel is that
	// bzImage.
	PVH bool `json:"pvh"`
	// KernelSource says where the kernel came from (host, debian package, flag).
	KernelSource string `json:"kernelSource"`
	// Built is false when the cache already had this image.
	Built bool `json:"built"`
}

// DefaultCacheDir is cache.Dir(): $BOOTLAB_CACHE first, the same root the
// RHCOS images and client tools use.
func DefaultCacheDir() string { return cache.Dir() }

// CachedKernel returns the kernel of the newest probe image in cacheDir, or
// "" when none was built: preflight proves KVM with it on a host with no
// kernel of its own in /boot.
func CachedKernel(cacheDir string) string {
	ks, _ := filepath.Glob(filepath.Join(cacheDir, "probe", "*", "vmlinuz"))
	var newest string
	var when time.Time
	for _, k := range ks {
		if fi, err := os.Stat(k); err == nil && fi.ModTime().After(when) {
			newest, when = k, fi.ModTime()
		}
	}
	return newest
}

// EnsureImage returns the probe image for opts, building it only when no
// image with the same inputs (agent, kernel, modules) is in the cache.
func EnsureImage(ctx context.Context, opts ImageOptions) (*Image, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.CacheDir == "" {
		opts.CacheDir = DefaultCacheDir()
	}
	if opts.Agent == "" {
		return nil, errors.New("probe image: no agent binary given")
	}
	kernel, modDir, source, err := findKernel(ctx, opts, log)
	if err != nil {
		return nil, err
	}
	mods, err := findModules(modDir)
	if err != nil {
		return nil, err
	}
	agent, err := os.ReadFile(opts.Agent)
	if err != nil {
		return nil, fmt.Errorf("read probe agent: %w", err)
	}
	if err := checkStatic(opts.Agent, agent); err != nil {
		return nil, err
	}
	kdata, err := userfile.Read(kernel, maxKernelBytes)
	if err != nil {
		return nil, fmt.Errorf("kernel (--kernel) %w (pass --kernel with a readable vmlinuz)", err)
	}
	sum, modData, err := imageHash(ctx, agent, kdata, mods)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(opts.CacheDir, "probe", sum[:16])
	img := &Image{
		Kernel: filepath.Join(dir, "vmlinuz"), Initrd: filepath.Join(dir, "initramfs.img"),
		BaseDisk: filepath.Join(dir, "base.qcow2"), Cmdline: Cmdline, Hash: sum, KernelSource: source,
	}
	if allExist(img.Kernel, img.Initrd, img.BaseDisk) {
		log.Debug("probe image cached", "dir", dir)
	} else {
		log.Info("building probe image", "dir", dir, "kernel", source)
		if err := writeImage(ctx, img, kdata, mods, modData, agent); err != nil {
			return nil, err
		}
		img.Built = true
	}
	if err := ensurePVH(ctx, img, kdata, log); err != nil {
		return nil, err
	}
	return img, ensureRehearsal(ctx, opts, img, log)
}

// writeImage writes img's files into its directory: the kernel kdata, the
// initramfs of the modules and the agent, the base disk.
func writeImage(ctx context.Context, img *Image, kdata []byte, mods []module, modData [][]byte, agent []byte) error {
	if err := mkdirReadable(filepath.Dir(img.Kernel)); err != nil {
		return err
	}
	initrd, err := probeInitramfs(mods, modData, agent)
	if err != nil {
		return err
	}
	if err := writeAtomic(img.Kernel, kdata); err != nil {
		return err
	}
	if err := writeAtomic(img.Initrd, initrd); err != nil {
		return err
	}
	return makeBaseDisk(ctx, img.BaseDisk)
}

// PVHKernelFile is the name, in a probe image's directory, of the kernel
// the nodes boot when it could be made (PVHKernel): vmlinuz stays beside it.
// The image's hash does not cover PVHKernel's code: a change to what it
// writes must rename the file, so that cached images make theirs again.
const PVHKernelFile = "vmlinux-pvh"

// BootKernel is the kernel the nodes of the probe image in dir boot: its
// PVH kernel when it has one, else its vmlinuz.
func BootKernel(dir string) string {
	if p := filepath.Join(dir, PVHKernelFile); allExist(p) {
		return p
	}
	return filepath.Join(dir, "vmlinuz")
}

// ensurePVH makes img's PVH kernel from the bzImage kdata when it is not
// there yet (an image cached before bootlab made one gets it now), and
// points img.Kernel at it. A kernel it cannot make one of keeps booting
// as a bzImage: slower under TCG, the same otherwise.
func ensurePVH(ctx context.Context, img *Image, kdata []byte, log *slog.Logger) error {
	p := filepath.Join(filepath.Dir(img.Kernel), PVHKernelFile)
	if !allExist(p) {
		elfKernel, err := PVHKernel(ctx, kdata)
		if errors.Is(err, ErrNoPVH) {
			log.Debug("probe nodes boot the bzImage", "kernel", img.Kernel, "why", err)
			return nil
		}
		if err != nil {
			return err
		}
		if err := writeAtomic(p, elfKernel); err != nil {
			return err
		}
	}
	img.Kernel, img.PVH = p, true
	return nil
}

// imageHash is the image's content address: the format, the command
// line, the agent, the kernel and each module (read here, uncompressed,
// and returned for the initramfs; nil for a module built in).
func imageHash(ctx context.Context, agent, kdata []byte, mods []module) (string, [][]byte, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", imageFormat, Cmdline)
	hashPart(h, "agent", agent)
	hashPart(h, "kernel", kdata)
	modData := make([][]byte, len(mods))
	for i, m := range mods {
		if m.path == "" {
			fmt.Fprintf(h, "builtin %s\n", m.name)
			continue
		}
		var err error
		if modData[i], err = readModule(ctx, m.path); err != nil {
			return "", nil, err
		}
		hashPart(h, m.name, modData[i])
	}
	return hex.EncodeToString(h.Sum(nil)), modData, nil
}

// probeInitramfs is the probe image's initramfs, gzipped: the directories
// the agent mounts on, the console and null devices, the modules and their
// load order, and the agent as /init.
func probeInitramfs(mods []module, modData [][]byte, agent []byte) ([]byte, error) {
	var order bytes.Buffer
	var cz bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&cz, gzip.BestSpeed)
	w := NewCPIOWriter(gz)
	for _, d := range []string{"dev", "proc", "sys", "run", "tmp", "etc", "lib", "lib/modules", wire.ModuleDir} {
		_ = w.Dir(d, 0o755)
	}
	_ = w.CharDev("dev/console", 0o600, 5, 1)
	_ = w.CharDev("dev/null", 0o666, 1, 3)
	for i, m := range mods {
		if m.path == "" {
			continue
		}
		fmt.Fprintln(&order, m.name+".ko")
		_ = w.File(filepath.Join(wire.ModuleDir, m.name+".ko"), 0o644, modData[i])
	}
	_ = w.File(wire.ModuleOrderFile, 0o644, order.Bytes())
	_ = w.File("init", 0o755, agent)
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("write initramfs: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return cz.Bytes(), nil
}

// ensureRehearsal sets img.RehearsalInitrd when opts ask for it, writing
// the concatenation of the probe initrd and the tools archive once per
// pair (cached beside the image, named by the tools' hash).
func ensureRehearsal(ctx context.Context, opts ImageOptions, img *Image, log *slog.Logger) error {
	if !opts.Rehearsal {
		return nil
	}
	if opts.OpenShiftVersion == "" {
		return errors.New("rehearsal initrd: no OpenShift version given: its etcd is the release's own")
	}
	tools, err := EnsureTools(ctx, opts.CacheDir, opts.OpenShiftVersion, log)
	if err != nil {
		return fmt.Errorf("rehearsal bootstrap tools: %w", err)
	}
	p := filepath.Join(filepath.Dir(img.Initrd), "initramfs-rehearsal-"+tools.Hash[:16]+".img")
	if !allExist(p) {
		base, err := os.ReadFile(img.Initrd)
		if err != nil {
			return err
		}
		extra, err := os.ReadFile(tools.Archive)
		if err != nil {
			return err
		}
		if err := writeAtomic(p, append(base, extra...)); err != nil {
			return err
		}
		img.Built = true
	}
	img.RehearsalInitrd = p
	return nil
}

// checkStatic refuses an agent the kernel cannot run as /init: not an
// x86-64 ELF executable, or dynamically linked (there is no libc in the
// initramfs; the kernel then panics with "Failed to execute /init (error -2)").
func checkStatic(path string, data []byte) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("probe agent %s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("probe agent %s is built for %s, the probe VMs are x86_64: GOARCH=amd64", path, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("probe agent %s is dynamically linked and cannot be /init: rebuild it with `CGO_ENABLED=0 go build -o %s ./cmd/bootlab-probe`", path, path)
		}
	}
	return nil
}

func hashPart(h io.Writer, name string, data []byte) {
	s := sha256.Sum256(data)
	fmt.Fprintf(h, "%s %x\n", name, s)
}

func allExist(paths ...string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

// mkdirReadable creates dir world-traversable: qemu runs as another user.
func mkdirReadable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create image cache %s: %w", dir, err)
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	// A temporary file of its own: two bootlab processes building the same
	// content-addressed file at once (two labs coming up, the e2e's two go
	// tests) each rename a whole file over the other's, never a half one.
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

func makeBaseDisk(ctx context.Context, path string) error {
	qi, err := exec.LookPath("qemu-img")
	if err != nil {
		return errors.New("qemu-img not found: apt-get install -y qemu-utils")
	}
	// A name of its own, as writeAtomic's: a process id is not enough, a
	// class builds several labs in one process.
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	tmp := f.Name()
	f.Close()
	out, err := exec.CommandContext(ctx, qi, "create", "-q", "-f", "qcow2", tmp, "64M").CombinedOutput()
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("qemu-img create %s: %v: %s", tmp, err, bytes.TrimSpace(out))
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
