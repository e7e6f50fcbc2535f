package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Kinds of cached artifacts, by where their writers put them.
const (
	KindRHCOS         = "rhcos"          // rhcos/<file>.qcow2 (+ <file>.sha256, its verified sum)
	KindClient        = "client"         // clients/<version>/{openshift-install,oc}
	KindProbeImage    = "probe-image"    // probe/<hash>/{vmlinuz,vmlinux-pvh,initramfs.img,base.qcow2}
	KindDebianPackage = "debian-package" // debian/download/*.deb, the probe image's kernel
	KindProbeAgent    = "probe-agent"    // agent/bootlab-probe
	// KindRehearsalTools is debian-tools/tools-<hash>.cpio.gz, the tools a
	// rehearsal bootstrap node gets (its packages are debian-tools/download/).
	KindRehearsalTools = "rehearsal-tools"
	// KindGoBinary is gobuild/<name>/<version>-<recipe>/<name>, a static
	// program lab/gobuild built from pinned modules (etcd, kubernetes); the
	// entry's name is the component, the version the program's.
	KindGoBinary = "go-binary"
	// KindOfficialBinary is official/<name>/<version>-<key>/<program>: a
	// program as its project publishes it (lab/upstream: Kubernetes's
	// binaries, the programs of etcd's release tarball), checked against
	// the checksum lab/release pins; the entry's name is the component.
	KindOfficialBinary = "official-binary"
	// KindKubeVolume is kube-volume/<version>-<recipe>/kubernetes-v<n>.qcow2:
	// the go-binary kubernetes in a read-only ext4 volume (lab/probe) that a
	// rehearsal lab's bootstrap and masters mount.
	KindKubeVolume = "kube-volume"
	KindOther      = "other"
)

// Entry is one cached file.
type Entry struct {
	// Path is relative to the cache root, with forward slashes.
	Path string `json:"path"`
	Kind string `json:"kind"`
	// Name is the program a go-binary is (etcd, kubernetes); empty for
	// other kinds, whose kind names them.
	Name string `json:"name,omitempty"`
	// Version is the release, client version, probe image hash or package
	// version the file belongs to.
	Version string `json:"version,omitempty"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	// LastUsed is the file's mtime.
	LastUsed time.Time `json:"lastUsed"`
	// Executable files keep their x bit through export and import.
	Executable bool `json:"executable,omitempty"`
}

// importPrefix names the temporary directories Import extracts into.
const importPrefix = ".import-"

// skip says whether rel (a slash path under the root) is not an artifact:
// partial downloads, temporaries, build locks, an import in progress,
// saved-start images, and Debian packages unpacked by the builders
// (debian*/root, remade from the .deb).
func skip(rel string) bool {
	base := filepath.Base(rel)
	parts := strings.SplitN(rel, "/", 3)
	unpacked := len(parts) >= 2 && strings.HasPrefix(parts[0], "debian") && (parts[1] == "root" || parts[1] == "root.tmp")
	// A saved-start image (lab/internal/savedstart) is this machine's QEMU's
	// memory of a probe node: remade where it is wanted, never carried; a
	// .restore- pipe feeds it to one restore.
	savedStart := strings.HasPrefix(base, "saved-start-") || strings.HasPrefix(base, ".restore-")
	return strings.HasPrefix(rel, importPrefix) || unpacked || savedStart ||
		strings.HasSuffix(base, ".partial") || strings.HasSuffix(base, ".tmp") || strings.HasSuffix(base, ".lock")
}

// Classify names the kind and version of the file at rel (a slash path
// relative to the cache root).
func Classify(rel string) (kind, version string) {
	parts := strings.Split(rel, "/")
	switch {
	case parts[0] == "rhcos" && len(parts) == 2:
		// rhcos-9.6.20250402-0-qemu.x86_64.qcow2[.sha256]
		v := strings.TrimPrefix(parts[1], "rhcos-")
		if i := strings.Index(v, "-qemu"); i > 0 {
			v = v[:i]
		}
		return KindRHCOS, v
	case parts[0] == "clients" && len(parts) == 3:
		return KindClient, parts[1]
	case parts[0] == "probe" && len(parts) == 3:
		return KindProbeImage, parts[1]
	case strings.HasPrefix(parts[0], "debian") && len(parts) == 3 && parts[1] == "download" && strings.HasSuffix(parts[2], ".deb"):
		// <package>_<version>_<arch>.deb
		if f := strings.Split(strings.TrimSuffix(parts[2], ".deb"), "_"); len(f) == 3 {
			// apt-get download writes an epoch's colon as %3a.
			if v, err := url.PathUnescape(f[1]); err == nil {
				return KindDebianPackage, v
			}
			return KindDebianPackage, f[1]
		}
		return KindDebianPackage, ""
	case parts[0] == "debian-tools" && len(parts) == 2 && strings.HasPrefix(parts[1], "tools-") && strings.HasSuffix(parts[1], ".cpio.gz"):
		return KindRehearsalTools, strings.TrimSuffix(strings.TrimPrefix(parts[1], "tools-"), ".cpio.gz")
	case parts[0] == "agent":
		return KindProbeAgent, ""
	case (parts[0] == "gobuild" || parts[0] == "official") && len(parts) == 4:
		// <version>-<recipe or checksums hash>: versions have no dash but
		// pre-releases.
		v := parts[2]
		if i := strings.LastIndex(v, "-"); i > 0 {
			v = v[:i]
		}
		if parts[0] == "official" {
			return KindOfficialBinary, v
		}
		return KindGoBinary, v
	case parts[0] == "kube-volume" && len(parts) == 3 && strings.HasSuffix(parts[2], ".qcow2"):
		v := parts[1]
		if i := strings.LastIndex(v, "-"); i > 0 {
			v = v[:i]
		}
		return KindKubeVolume, v
	}
	return KindOther, ""
}

// List returns every cached file under root with its sha256, sorted by
// path. A missing root is an empty cache.
func List(root string) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skip(rel) {
				return fs.SkipDir
			}
			return nil
		}
		if skip(rel) || !d.Type().IsRegular() {
			return nil
		}
		e, err := entry(root, rel)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list cache %s: %w", root, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func entry(root, rel string) (Entry, error) {
	p := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Stat(p)
	if err != nil {
		return Entry{}, err
	}
	sum, err := fileSHA256(p)
	if err != nil {
		return Entry{}, err
	}
	kind, version := Classify(rel)
	e := Entry{Path: rel, Kind: kind, Version: version, Size: fi.Size(), SHA256: sum,
		LastUsed: fi.ModTime(), Executable: fi.Mode().Perm()&0o111 != 0}
	if kind == KindGoBinary || kind == KindOfficialBinary {
		e.Name = strings.Split(rel, "/")[1]
	}
	return e, nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
