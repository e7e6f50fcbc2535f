package probe

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bootlab/bootlab/lab/release"
	"github.com/bootlab/bootlab/lab/upstream"
)

// ToolPackages are the Debian packages whose programs the rehearsal
// bootstrap runs for real: the shell and utilities every stage script
// uses, jq, curl, and e2fsprogs (RHCOS has it too). LibraryPackages hold the shared libraries those
// programs need; the builder copies only the ones the programs' ELF
// headers ask for (what ldd would list). etcd and etcdctl are not Debian's
// (3.4 in bookworm): they are the release's own, built from the Go module
// proxy (lab/gobuild) at the version lab/release pins.
var (
	ToolPackages    = []string{"bash", "coreutils", "sed", "grep", "jq", "curl", "e2fsprogs"}
	LibraryPackages = []string{"libc6", "libtinfo6", "libacl1", "libattr1", "libselinux1", "libpcre2-8-0", "libgmp10", "libssl3", "libjq1", "libonig5",
		// curl's
		"libcurl4", "libbrotli1", "libgssapi-krb5-2", "libkrb5-3", "libk5crypto3", "libkrb5support0", "libcom-err2", "libkeyutils1",
		"libidn2-0", "libunistring2", "libldap-2.5-0", "libsasl2-2", "libgnutls30", "libp11-kit0", "libtasn1-6", "libnettle8", "libhogweed6",
		"libffi8", "libnghttp2-14", "libpsl5", "librtmp1", "libssh2-1", "libzstd1", "zlib1g",
		// e2fsprogs' (mke2fs makes a rehearsal node's disk on its first boot)
		"libext2fs2", "libblkid1", "libuuid1", "libss2"}
)

// toolsFormat is bumped when the tools archive layout changes.
const toolsFormat = "bootlab-rehearsal-tools/3"

// Users of the rehearsal bootstrap, as on RHCOS: root, and core (uid 1000,
// home /var/home/core) who becomes root with sudo.
const (
	CoreUID  = 1000
	CoreHome = "/var/home/core"
)

// Tools is the built tools archive: a gzip'd newc cpio the kernel unpacks
// over the probe initramfs when it follows it in the same initrd file.
type Tools struct {
	Archive string   // path of the .cpio.gz
	Hash    string   // of the packages and programs it was made from and the layout
	Files   []string // paths in the archive of the programs and libraries
	// Etcd is the etcd and etcdctl it carries (downloaded or built:
	// Etcd.Why says which).
	Etcd *upstream.Binaries
}

// staticProgram is a static binary the archive carries as is, under each
// of its names (the first a file, the others links to it).
type staticProgram struct {
	names []string
	data  []byte
}

// EnsureTools returns the rehearsal tools archive of an OpenShift release,
// downloading the Debian packages (apt-get download), getting the
// release's etcd (lab/upstream: downloaded or built) and making the
// archive the first time. Packages and binaries already in the cache are
// reused, so a host that made them once (or imported a cache that has
// them) builds offline.
func EnsureTools(ctx context.Context, cacheDir, openshiftVersion string, log *slog.Logger) (*Tools, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	etcd, err := ensureEtcd(ctx, cacheDir, openshiftVersion, log)
	if err != nil {
		return nil, err
	}
	var static []staticProgram
	for _, f := range etcd.Files {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, err
		}
		static = append(static, staticProgram{f.Names, data})
	}
	dir := filepath.Join(cacheDir, "debian-tools")
	pkgs := append(append([]string(nil), ToolPackages...), LibraryPackages...)
	debs, err := downloadDebs(ctx, filepath.Join(dir, "download"), pkgs, log)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	fmt.Fprintln(h, toolsFormat)
	for _, p := range pkgs {
		data, err := os.ReadFile(debs[p])
		if err != nil {
			return nil, err
		}
		hashPart(h, filepath.Base(debs[p]), data)
	}
	fmt.Fprintf(h, "etcd %s %s\n", etcd.Version, etcd.ID)
	sum := hex.EncodeToString(h.Sum(nil))
	t := &Tools{Archive: filepath.Join(dir, "tools-"+sum[:16]+".cpio.gz"), Hash: sum, Etcd: etcd}
	roots, err := unpackDebs(ctx, filepath.Join(dir, "root"), pkgs, debs)
	if err != nil {
		return nil, err
	}
	var toolRoots, allRoots []string
	for _, p := range ToolPackages {
		toolRoots = append(toolRoots, roots[p])
	}
	for _, p := range pkgs {
		allRoots = append(allRoots, roots[p])
	}
	// A cached archive is only listed: compressing 57 MB takes seconds,
	// storing it a fraction of one. The default level, not the best: on
	// 4.19's 57 MB, 1.9 s against 5.9 s for 23.18 MB against 23.12, and
	// the same 0.3 s to unpack (docs/benchmarks.md, twentieth round).
	cached := allExist(t.Archive)
	level := gzip.DefaultCompression
	if cached {
		level = gzip.NoCompression
	}
	var buf bytes.Buffer
	files, err := writeTools(&buf, level, toolRoots, allRoots, static...)
	if err != nil {
		return nil, err
	}
	t.Files = files
	if cached {
		return t, nil
	}
	log.Info("building the rehearsal tools archive", "archive", t.Archive, "programs and libraries", len(files))
	if err := writeAtomic(t.Archive, buf.Bytes()); err != nil {
		return nil, err
	}
	return t, nil
}

// ensureEtcd finds, downloads or builds (lab/upstream) the etcd the
// release pins.
func ensureEtcd(ctx context.Context, cacheDir, openshiftVersion string, log *slog.Logger) (*upstream.Binaries, error) {
	rel, err := release.For(openshiftVersion)
	if err != nil {
		return nil, fmt.Errorf("rehearsal etcd: %w", err)
	}
	b, err := upstream.Get(ctx, upstream.Etcd(rel), upstream.Options{CacheDir: cacheDir, Log: log})
	if err != nil {
		return nil, fmt.Errorf("rehearsal etcd of OpenShift %s: %w", rel.OpenShift, err)
	}
	return b, nil
}

// unpackDebs unpacks each package under dir once (dpkg-deb -x), returning
// its root by package.
func unpackDebs(ctx context.Context, dir string, pkgs []string, debs map[string]string) (map[string]string, error) {
	roots := map[string]string{}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, p := range pkgs {
		roots[p] = filepath.Join(dir, strings.TrimSuffix(filepath.Base(debs[p]), ".deb"))
		if allExist(roots[p]) {
			continue
		}
		// A directory of its own: another bootlab may unpack the same
		// package at once; whichever renames first wins, the other's goes.
		tmp, err := os.MkdirTemp(dir, filepath.Base(roots[p])+".*.tmp")
		if err != nil {
			return nil, err
		}
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[p], tmp).CombinedOutput(); err != nil {
			_ = os.RemoveAll(tmp)
			return nil, fmt.Errorf("dpkg-deb -x %s: %v: %s", debs[p], err, bytes.TrimSpace(out))
		}
		if err := renameDir(tmp, roots[p]); err != nil {
			return nil, err
		}
	}
	return roots, nil
}

// downloadDebs returns the .deb of each package in dl, fetching the
// missing ones with one apt-get download.
func downloadDebs(ctx context.Context, dl string, pkgs []string, log *slog.Logger) (map[string]string, error) {
	find := func() (map[string]string, []string) {
		have, missing := map[string]string{}, []string(nil)
		for _, p := range pkgs {
			m, _ := filepath.Glob(filepath.Join(dl, p+"_*.deb"))
			if len(m) == 0 {
				missing = append(missing, p)
				continue
			}
			sort.Strings(m)
			have[p] = m[len(m)-1]
		}
		return have, missing
	}
	have, missing := find()
	if len(missing) == 0 {
		return have, nil
	}
	for _, tool := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("the rehearsal bootstrap's tools come from Debian packages (%s) and %s is not installed: run on Debian or Ubuntu (scripts/host/setup.sh)", strings.Join(missing, ", "), tool)
		}
	}
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return nil, err
	}
	log.Info("downloading Debian packages for the rehearsal bootstrap", "packages", strings.Join(missing, " "), "dir", dl)
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"download"}, missing...)...)
	cmd.Dir = dl
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("apt-get download %s: %v: %s (run `apt-get update` first)", strings.Join(missing, " "), err, lastLine(stderr.String()))
	}
	have, missing = find()
	if len(missing) > 0 {
		return nil, fmt.Errorf("apt-get download left no .deb of %s in %s", strings.Join(missing, ", "), dl)
	}
	return have, nil
}

// renameDir moves directory tmp to dst; if another process put dst there
// first, tmp goes and dst stays.
func renameDir(tmp, dst string) error {
	err := os.Rename(tmp, dst)
	if err != nil && allExist(dst) {
		return os.RemoveAll(tmp)
	}
	return err
}
