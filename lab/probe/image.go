package probe

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/cache"
)

// Modules are the kernel modules the probe initramfs loads, in load order:
// virtio PCI networking and the fw_cfg driver Ignition reads from.
var Modules = []string{
	"virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
	"failover", "net_failover", "virtio_net", "qemu_fw_cfg",
}

// Cmdline is the probe kernel command line. no_timer_check: under TCG on
// a loaded host the kernel's IO-APIC timer check can fail and panic the
// boot ("IO-APIC + timer doesn't work!"); virtual machines skip it.
const Cmdline = "console=ttyS0 panic=-1 quiet no_timer_check"

// ModuleDir is where the initramfs holds the modules; ModuleOrderFile
// lists them, in load order, for the agent.
const (
	ModuleDir       = "/lib/modules/bootlab"
	ModuleOrderFile = "/lib/modules/bootlab/order"
)

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
	// initramfs followed by the tools archive (EnsureTools).
	Rehearsal bool
	Log       *slog.Logger
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
	kdata, err := os.ReadFile(kernel)
	if err != nil {
		return nil, fmt.Errorf("read kernel %s: %w (pass --kernel with a readable vmlinuz)", kernel, err)
	}
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
		if modData[i], err = readModule(ctx, m.path); err != nil {
			return nil, err
		}
		hashPart(h, m.name, modData[i])
	}
	sum := hex.EncodeToString(h.Sum(nil))
	dir := filepath.Join(opts.CacheDir, "probe", sum[:16])
	img := &Image{
		Kernel: filepath.Join(dir, "vmlinuz"), Initrd: filepath.Join(dir, "initramfs.img"),
		BaseDisk: filepath.Join(dir, "base.qcow2"), Cmdline: Cmdline, Hash: sum, KernelSource: source,
	}
	if allExist(img.Kernel, img.Initrd, img.BaseDisk) {
		log.Debug("probe image cached", "dir", dir)
		return img, ensureRehearsal(ctx, opts, img, log)
	}
	log.Info("building probe image", "dir", dir, "kernel", source)
	if err := mkdirReadable(dir); err != nil {
		return nil, err
	}
	var order bytes.Buffer
	var cz bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&cz, gzip.BestSpeed)
	w := NewCPIOWriter(gz)
	for _, d := range []string{"dev", "proc", "sys", "run", "tmp", "etc", "lib", "lib/modules", ModuleDir} {
		_ = w.Dir(d, 0o755)
	}
	_ = w.CharDev("dev/console", 0o600, 5, 1)
	_ = w.CharDev("dev/null", 0o666, 1, 3)
	for i, m := range mods {
		if m.path == "" {
			continue
		}
		fmt.Fprintln(&order, m.name+".ko")
		_ = w.File(filepath.Join(ModuleDir, m.name+".ko"), 0o644, modData[i])
	}
	_ = w.File(ModuleOrderFile, 0o644, order.Bytes())
	_ = w.File("init", 0o755, agent)
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("write initramfs: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	if err := writeAtomic(img.Kernel, kdata); err != nil {
		return nil, err
	}
	if err := writeAtomic(img.Initrd, cz.Bytes()); err != nil {
		return nil, err
	}
	if err := makeBaseDisk(ctx, img.BaseDisk); err != nil {
		return nil, err
	}
	img.Built = true
	return img, ensureRehearsal(ctx, opts, img, log)
}

// ensureRehearsal sets img.RehearsalInitrd when opts ask for it, writing
// the concatenation of the probe initrd and the tools archive once per
// pair (cached beside the image, named by the tools' hash).
func ensureRehearsal(ctx context.Context, opts ImageOptions, img *Image, log *slog.Logger) error {
	if !opts.Rehearsal {
		return nil
	}
	tools, err := EnsureTools(ctx, opts.CacheDir, log)
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
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func makeBaseDisk(ctx context.Context, path string) error {
	qi, err := exec.LookPath("qemu-img")
	if err != nil {
		return errors.New("qemu-img not found: apt-get install -y qemu-utils")
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	out, err := exec.CommandContext(ctx, qi, "create", "-q", "-f", "qcow2", tmp, "64M").CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-img create %s: %v: %s", tmp, err, bytes.TrimSpace(out))
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

type module struct{ name, path string } // path "" = built into the kernel

// findModules finds each of Modules under modDir (as name.ko, .ko.xz,
// .ko.zst or .ko.gz, '-' and '_' alike); a module listed in modules.builtin
// needs no file.
func findModules(modDir string) ([]module, error) {
	found := map[string]string{}
	err := filepath.WalkDir(modDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		base := d.Name()
		for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
			if strings.HasSuffix(base, ext) {
				n := strings.ReplaceAll(strings.TrimSuffix(base, ext), "-", "_")
				if _, dup := found[n]; !dup {
					found[n] = p
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for kernel modules in %s: %w (pass --modules with a /lib/modules/<release> directory)", modDir, err)
	}
	builtin := map[string]bool{}
	if f, err := os.Open(filepath.Join(modDir, "modules.builtin")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			b := filepath.Base(strings.TrimSpace(sc.Text()))
			builtin[strings.ReplaceAll(strings.TrimSuffix(b, ".ko"), "-", "_")] = true
		}
		f.Close()
	}
	var out []module
	var missing []string
	for _, m := range Modules {
		switch {
		case found[m] != "":
			out = append(out, module{name: m, path: found[m]})
		case builtin[m]:
			out = append(out, module{name: m})
		default:
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("kernel modules %s not found in %s (and not built in): pass --kernel/--modules of a kernel that has them, e.g. Debian's %s", strings.Join(missing, ", "), modDir, DebianKernelPackage)
	}
	return out, nil
}

// readModule returns a module uncompressed, so any kernel can load it.
func readModule(ctx context.Context, p string) ([]byte, error) {
	var tool []string
	switch {
	case strings.HasSuffix(p, ".ko"):
		return os.ReadFile(p)
	case strings.HasSuffix(p, ".ko.gz"):
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		return io.ReadAll(zr)
	case strings.HasSuffix(p, ".ko.xz"):
		tool = []string{"xz", "-dc", p}
	case strings.HasSuffix(p, ".ko.zst"):
		tool = []string{"zstd", "-dcq", p}
	}
	if _, err := exec.LookPath(tool[0]); err != nil {
		return nil, fmt.Errorf("%s is compressed and %s is not installed: apt-get install -y %s", p, tool[0], map[string]string{"xz": "xz-utils", "zstd": "zstd"}[tool[0]])
	}
	out, err := exec.CommandContext(ctx, tool[0], tool[1:]...).Output()
	if err != nil {
		return nil, fmt.Errorf("decompress %s: %w", p, err)
	}
	return out, nil
}

// findKernel picks the kernel and module tree: the flags, else the
// host's running kernel when /boot and /lib/modules have it, else Debian's
// cloud kernel package downloaded into the cache.
func findKernel(ctx context.Context, opts ImageOptions, log *slog.Logger) (kernel, modDir, source string, err error) {
	if opts.Kernel != "" || opts.ModulesDir != "" {
		if opts.Kernel == "" || opts.ModulesDir == "" {
			return "", "", "", errors.New("--kernel and --modules go together: give both (a vmlinuz and its /lib/modules/<release> directory)")
		}
		for _, p := range []string{opts.Kernel, opts.ModulesDir} {
			if _, err := os.Stat(p); err != nil {
				return "", "", "", fmt.Errorf("probe image: %w", err)
			}
		}
		return opts.Kernel, opts.ModulesDir, "flags", nil
	}
	if rel, err := hostRelease(); err == nil {
		k := filepath.Join("/boot", "vmlinuz-"+rel)
		m := filepath.Join("/lib/modules", rel)
		if allExist(k, m) {
			if _, err := findModules(m); err == nil {
				return k, m, "host " + rel, nil
			}
			log.Debug("host kernel lacks probe modules, using Debian's", "release", rel)
		}
	}
	return debianKernel(ctx, filepath.Join(opts.CacheDir, "debian"), log)
}

func hostRelease() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// debianKernel returns an extracted Debian cloud kernel from dir, fetching
// it with apt-get download + dpkg-deb -x the first time.
func debianKernel(ctx context.Context, dir string, log *slog.Logger) (kernel, modDir, source string, err error) {
	if k, m, ok := extractedKernel(dir); ok {
		return k, m, "debian " + filepath.Base(m), nil
	}
	dl := filepath.Join(dir, "download")
	// A kernel package already in the cache (an imported cache on a host
	// without internet) is unpacked without apt-get.
	debs := cachedKernelDebs(dl)
	tools := []string{"dpkg-deb"}
	if len(debs) == 0 {
		tools = append(tools, "apt-get")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			return "", "", "", fmt.Errorf("no kernel with the probe modules on this host and no %s to fetch Debian's %s: pass --kernel and --modules", tool, DebianKernelPackage)
		}
	}
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return "", "", "", err
	}
	run := func(name string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dl
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, lastLine(stderr.String()))
		}
		return out, nil
	}
	if len(debs) == 0 {
		log.Info("downloading the Debian cloud kernel for the probe image", "package", DebianKernelPackage, "dir", dl)
		if _, err := run("apt-get", "download", DebianKernelPackage); err != nil {
			return "", "", "", fmt.Errorf("%w (run `apt-get update` first, or pass --kernel/--modules)", err)
		}
		meta, _ := filepath.Glob(filepath.Join(dl, DebianKernelPackage+"_*.deb"))
		if len(meta) == 0 {
			return "", "", "", fmt.Errorf("apt-get download %s left no .deb in %s", DebianKernelPackage, dl)
		}
		sort.Strings(meta)
		deps, err := run("dpkg-deb", "-f", meta[len(meta)-1], "Depends")
		if err != nil {
			return "", "", "", err
		}
		// "linux-image-6.1.0-56-cloud-amd64 (= 6.1.192-2)": the real kernel package.
		pkg := strings.Fields(strings.Split(string(deps), ",")[0])
		if len(pkg) == 0 || !strings.HasPrefix(pkg[0], "linux-image-") {
			return "", "", "", fmt.Errorf("unexpected Depends of %s: %q", DebianKernelPackage, deps)
		}
		if _, err := run("apt-get", "download", pkg[0]); err != nil {
			return "", "", "", err
		}
		debs, _ = filepath.Glob(filepath.Join(dl, pkg[0]+"_*.deb"))
		if len(debs) == 0 {
			return "", "", "", fmt.Errorf("apt-get download %s left no .deb in %s", pkg[0], dl)
		}
	} else {
		log.Info("unpacking the Debian kernel package from the cache", "deb", debs[0])
	}
	root := filepath.Join(dir, "root")
	tmp := root + ".tmp"
	_ = os.RemoveAll(tmp)
	if _, err := run("dpkg-deb", "-x", debs[0], tmp); err != nil {
		return "", "", "", err
	}
	_ = os.RemoveAll(root)
	if err := os.Rename(tmp, root); err != nil {
		return "", "", "", err
	}
	if k, m, ok := extractedKernel(dir); ok {
		return k, m, "debian " + filepath.Base(m), nil
	}
	return "", "", "", fmt.Errorf("%s has no /boot/vmlinuz-* and /lib/modules/*", debs[0])
}

// cachedKernelDebs returns the versioned kernel packages (not the
// DebianKernelPackage metapackage) apt-get download left in dl, newest first.
func cachedKernelDebs(dl string) []string {
	all, _ := filepath.Glob(filepath.Join(dl, "linux-image-*_*.deb"))
	var out []string
	for _, d := range all {
		if !strings.HasPrefix(filepath.Base(d), DebianKernelPackage+"_") {
			out = append(out, d)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

func extractedKernel(dir string) (kernel, modDir string, ok bool) {
	ks, _ := filepath.Glob(filepath.Join(dir, "root", "boot", "vmlinuz-*"))
	if len(ks) == 0 {
		return "", "", false
	}
	sort.Strings(ks)
	k := ks[len(ks)-1]
	rel := strings.TrimPrefix(filepath.Base(k), "vmlinuz-")
	for _, base := range []string{"lib", "usr/lib"} {
		m := filepath.Join(dir, "root", base, "modules", rel)
		if allExist(m) {
			return k, m, true
		}
	}
	return "", "", false
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
