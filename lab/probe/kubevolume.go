package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/release"
	"github.com/bootlab/bootlab/lab/upstream"
)

// The Kubernetes volume (wire.KubeVolumeSerial): the release's Kubernetes
// binaries (lab/upstream: the four official ones, or the hyperkube built
// and a link per program) in an ext4 file system, in a compressed qcow2
// file cached as kube-volume/<version>-<key of the binaries>/, uploaded
// once into a rehearsal lab's pool and attached read-only to its
// bootstrap and masters. The agent finds the disk by its serial, mounts it
// read-only at wire.KubeVolumeMount and puts wire.KubeVolumeBin on PATH.
// docs/cache.md says why a volume and not the initrd.
const (
	// KubeVolumeLabel is the ext4 label.
	KubeVolumeLabel = "bootlab-kube"
	// kubeVolumeDir is its directory in the cache.
	kubeVolumeDir = "kube-volume"
	// kubeVolumeFormat is bumped when the volume's layout changes.
	kubeVolumeFormat = "1"
)

// KubeVolume is a built Kubernetes volume.
type KubeVolume struct {
	// Path is the qcow2 file in the cache.
	Path string
	// Kubernetes is the version it carries, OpenShift the release's minor.
	Kubernetes, OpenShift string
	// Binaries are the files it was made from: the official binaries or
	// the hyperkube built (Binaries.Why says which and why).
	Binaries *upstream.Binaries
	// Built is true when this call made the volume (Binaries.Fetched when
	// it also downloaded or built the binaries: the minutes-long part).
	Built bool
}

// kubeProgram is the release's Kubernetes as lab/upstream gets it.
func kubeProgram(openshiftVersion string) (release.Release, upstream.Program, error) {
	rel, err := release.For(openshiftVersion)
	if err != nil {
		return rel, upstream.Program{}, fmt.Errorf("rehearsal Kubernetes: %w", err)
	}
	return rel, upstream.Kubernetes(rel), nil
}

// kubeVolumePath names the volume by the Kubernetes version and the
// binaries' key (the build's recipe, or the pinned checksums of the
// official ones), so a cached one is found without reading the binaries.
func kubeVolumePath(cacheDir string, b *upstream.Binaries) string {
	return filepath.Join(cacheDir, kubeVolumeDir, b.Version+"-"+b.Key, "kubernetes-v"+kubeVolumeFormat+".qcow2")
}

// KubeVolumeCached says whether the release's Kubernetes volume is in
// cacheDir (the dry run's question: would `lab up` build it?), and where.
func KubeVolumeCached(cacheDir, openshiftVersion string) (string, bool) {
	_, p, err := kubeProgram(openshiftVersion)
	if err != nil {
		return "", false
	}
	b := upstream.Cached(cacheDir, p)
	if b == nil {
		return "", false
	}
	path := kubeVolumePath(cacheDir, b)
	_, err = os.Stat(path)
	return path, err == nil
}

// KubeBinaryCached says whether the release's Kubernetes binaries are in
// cacheDir: when they are not, the volume's first build waits for a
// download or the minutes-long build.
func KubeBinaryCached(cacheDir, openshiftVersion string) bool {
	_, p, err := kubeProgram(openshiftVersion)
	return err == nil && upstream.Cached(cacheDir, p) != nil
}

// EnsureKubeVolume returns the Kubernetes volume of an OpenShift release,
// getting the binaries (lab/upstream: downloaded or built, once; a caller
// that wants a progress bar gets them first) and making the volume the
// first time.
func EnsureKubeVolume(ctx context.Context, cacheDir, openshiftVersion string, log *slog.Logger) (*KubeVolume, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rel, p, err := kubeProgram(openshiftVersion)
	if err != nil {
		return nil, err
	}
	b, err := upstream.Get(ctx, p, upstream.Options{CacheDir: cacheDir, Log: log})
	if err != nil {
		return nil, fmt.Errorf("rehearsal Kubernetes of OpenShift %s: %w", rel.OpenShift, err)
	}
	v := &KubeVolume{Path: kubeVolumePath(cacheDir, b), Kubernetes: b.Version, OpenShift: rel.OpenShift, Binaries: b}
	if _, err := os.Stat(v.Path); err == nil {
		return v, nil
	}
	start := time.Now()
	if err := makeKubeVolume(ctx, b, v.Path); err != nil {
		return nil, fmt.Errorf("make the Kubernetes volume %s: %w", v.Path, err)
	}
	v.Built = true
	log.Info("made the Kubernetes volume (once; cached)", "path", v.Path, "from", b.Why, "took", time.Since(start).Round(time.Millisecond))
	return v, nil
}

// makeKubeVolume writes the Kubernetes binaries (hyperkube and its links,
// or the four official ones) into an ext4 image sized to fit (mkfs.ext4
// -d: no root, no loop device), then compresses it into out as qcow2: qemu
// decompresses on the host, natively, the clusters the guest reads.
func makeKubeVolume(ctx context.Context, b *upstream.Binaries, out string) error {
	mkfs, err := findTool("mkfs.ext4", "apt-get install -y e2fsprogs   (Fedora/RHEL: dnf install -y e2fsprogs)")
	if err != nil {
		return err
	}
	qemuImg, err := findTool("qemu-img", "apt-get install -y qemu-utils   (Fedora/RHEL: dnf install -y qemu-img)")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Dir(out), ".kube-volume-*.tmp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	size, err := stageKubeTree(b, filepath.Join(work, "root"))
	if err != nil {
		return err
	}
	// The binaries, a tenth for the file system's own blocks, and 8 MiB
	// for its fixed part: ext4 needs no more for a few inodes and files.
	sizeMiB := size*11/10>>20 + 8
	raw := filepath.Join(work, "kube.img")
	if err := runTool(ctx, mkfs, "-q", "-F", "-L", KubeVolumeLabel, "-O", "^has_journal", "-m", "0", "-N", "64",
		"-E", "root_owner=0:0", "-d", filepath.Join(work, "root"), raw, fmt.Sprintf("%dM", sizeMiB)); err != nil {
		return err
	}
	tmp := filepath.Join(work, "kube.qcow2")
	if err := runTool(ctx, qemuImg, "convert", "-c", "-f", "raw", "-O", "qcow2", raw, tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// stageKubeTree lays out under root/bin each file of b (0755) and a link
// to it per other name it answers to (hyperkube's programs), and returns
// the files' total size.
func stageKubeTree(b *upstream.Binaries, root string) (int64, error) {
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return 0, err
	}
	var size int64
	for _, f := range b.Files {
		n, err := copyExecutable(f.Path, filepath.Join(bin, f.Names[0]))
		if err != nil {
			return 0, err
		}
		size += n
		for _, name := range f.Names[1:] {
			if err := os.Symlink(f.Names[0], filepath.Join(bin, name)); err != nil {
				return 0, err
			}
		}
	}
	return size, nil
}

// copyExecutable copies src to dst, 0755, and returns its size.
func copyExecutable(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", filepath.Base(src), err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// findTool looks a tool up on PATH and in the sbin directories a user's
// PATH may lack; install says how to get it.
func findTool(name, install string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found: %s", name, install)
}

func runTool(ctx context.Context, prog string, args ...string) error {
	out, err := exec.CommandContext(ctx, prog, args...).CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || len(out) > 0 {
			return fmt.Errorf("%s %s: %v: %s", filepath.Base(prog), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return fmt.Errorf("%s: %w", filepath.Base(prog), err)
	}
	return nil
}
