package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/gobuild"
	"github.com/bootlab/bootlab/lab/release"
)

// The Kubernetes volume (wire.KubeVolumeSerial): the release's hyperkube
// (lab/gobuild) and a link per program in an ext4 file system, in a
// compressed qcow2 file cached as kube-volume/<version>-<recipe>/,
// uploaded once into a rehearsal lab's pool and attached read-only to its
// bootstrap and masters.
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
	// Binary is the hyperkube it was made from.
	Binary *gobuild.Binary
	// Built is true when this call made the volume (BinaryBuilt when it
	// also built the binary: the ~8 minute part).
	Built, BinaryBuilt bool
}

// kubeComponent is the release's Kubernetes as lab/gobuild builds it.
func kubeComponent(openshiftVersion string) (release.Release, gobuild.Component, error) {
	rel, err := release.For(openshiftVersion)
	if err != nil {
		return rel, gobuild.Component{}, fmt.Errorf("rehearsal Kubernetes: %w", err)
	}
	c, err := gobuild.Kubernetes(rel.Kubernetes)
	if err != nil {
		return rel, c, fmt.Errorf("rehearsal Kubernetes of OpenShift %s: %w", rel.OpenShift, err)
	}
	return rel, c, nil
}

// kubeVolumePath names the volume by the Kubernetes version and the
// binary's recipe, so a cached one is found without reading the binary.
func kubeVolumePath(cacheDir string, c gobuild.Component) string {
	return filepath.Join(cacheDir, kubeVolumeDir, c.Version+"-"+c.Recipe()[:16], "kubernetes-v"+kubeVolumeFormat+".qcow2")
}

// KubeVolumeCached says whether the release's Kubernetes volume is in
// cacheDir (the dry run's question: would `lab up` build it?), and where.
func KubeVolumeCached(cacheDir, openshiftVersion string) (string, bool) {
	_, c, err := kubeComponent(openshiftVersion)
	if err != nil {
		return "", false
	}
	p := kubeVolumePath(cacheDir, c)
	_, err = os.Stat(p)
	return p, err == nil
}

// KubeBinaryCached says whether the release's hyperkube is in cacheDir:
// when it is not, the volume's first build is the ~8 minute one.
func KubeBinaryCached(cacheDir, openshiftVersion string) bool {
	_, c, err := kubeComponent(openshiftVersion)
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(c.Dir(cacheDir), c.Programs[0]))
	return err == nil
}

// EnsureKubeVolume returns the Kubernetes volume of an OpenShift release,
// building the hyperkube (lab/gobuild, once) and the volume the first time.
func EnsureKubeVolume(ctx context.Context, cacheDir, openshiftVersion string, log *slog.Logger) (*KubeVolume, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rel, c, err := kubeComponent(openshiftVersion)
	if err != nil {
		return nil, err
	}
	v := &KubeVolume{Path: kubeVolumePath(cacheDir, c), Kubernetes: c.Version, OpenShift: rel.OpenShift}
	b, err := gobuild.Ensure(ctx, cacheDir, c, log)
	if err != nil {
		return nil, fmt.Errorf("rehearsal Kubernetes of OpenShift %s: %w", rel.OpenShift, err)
	}
	v.Binary, v.BinaryBuilt = b, b.Built
	if _, err := os.Stat(v.Path); err == nil {
		return v, nil
	}
	start := time.Now()
	if err := makeKubeVolume(ctx, b.Path, v.Path); err != nil {
		return nil, fmt.Errorf("make the Kubernetes volume %s: %w", v.Path, err)
	}
	v.Built = true
	log.Info("made the Kubernetes volume (once; cached)", "path", v.Path, "took", time.Since(start).Round(time.Millisecond))
	return v, nil
}

// makeKubeVolume writes hyperkube and its links into an ext4 image sized
// to fit (mkfs.ext4 -d: no root, no loop device), then compresses it into
// out as qcow2: qemu decompresses on the host, natively, the clusters the
// guest reads.
func makeKubeVolume(ctx context.Context, hyperkube, out string) error {
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
	fi, err := stageKubeTree(hyperkube, filepath.Join(work, "root"))
	if err != nil {
		return err
	}
	// The binary, a tenth for the file system's own blocks, and 8 MiB for
	// its fixed part: ext4 needs no more for five inodes and one file.
	sizeMiB := fi.Size()*11/10>>20 + 8
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

// stageKubeTree lays out bin/hyperkube and a link per program under root.
func stageKubeTree(hyperkube, root string) (os.FileInfo, error) {
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(hyperkube)
	if err != nil {
		return nil, fmt.Errorf("read hyperkube: %w", err)
	}
	dst := filepath.Join(bin, "hyperkube")
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		return nil, err
	}
	for _, p := range wire.KubePrograms() {
		if p == "hyperkube" {
			continue
		}
		if err := os.Symlink("hyperkube", filepath.Join(bin, p)); err != nil {
			return nil, err
		}
	}
	return os.Stat(dst)
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
