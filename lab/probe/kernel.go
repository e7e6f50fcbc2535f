package probe

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
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
)

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
	var tool string
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
		tool = "xz"
	case strings.HasSuffix(p, ".ko.zst"):
		tool = "zstd"
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unpackWith(ctx, p, f, tool)
}

// unpackTools are the commands that unpack data bootlab has no Go code
// for, from stdin, and the Debian package that has each.
var unpackTools = map[string]struct {
	args []string
	pkg  string
}{
	"xz":   {[]string{"-dc"}, "xz-utils"},
	"zstd": {[]string{"-dcq"}, "zstd"},
}

// unpackWith unpacks in with tool (a key of unpackTools); what names the
// data in errors.
func unpackWith(ctx context.Context, what string, in io.Reader, tool string) ([]byte, error) {
	if _, err := exec.LookPath(tool); err != nil {
		return nil, fmt.Errorf("%s is compressed and %s is not installed: apt-get install -y %s", what, tool, unpackTools[tool].pkg)
	}
	cmd := exec.CommandContext(ctx, tool, unpackTools[tool].args...)
	cmd.Stdin = in
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("decompress %s: %w", what, err)
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
	// A directory of its own, as unpackDebs's: another bootlab may unpack
	// the same package at once.
	tmp, err := os.MkdirTemp(dir, "root.*.tmp")
	if err != nil {
		return "", "", "", err
	}
	if _, err := run("dpkg-deb", "-x", debs[0], tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", "", "", err
	}
	_ = os.RemoveAll(root)
	if err := renameDir(tmp, root); err != nil {
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
