package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
)

// kubeVolumeWait bounds the wait for the Kubernetes volume's disk to show
// up after virtio_blk loaded (it probes the disks asynchronously).
const kubeVolumeWait = 30 * time.Second

// binDir is where the Kubernetes programs are linked: on RHCOS's PATH, so
// the stages, sudo and the kubelet stand-in find them by name.
const binDir = "/usr/local/bin"

// mountKubeVolume mounts the rehearsal lab's Kubernetes volume (the disk
// whose serial is wire.KubeVolumeSerial) read-only at
// wire.KubeVolumeMount and links each program into binDir. A node without
// the disk (a worker, a lab built before it) reports false and no error.
func mountKubeVolume(ctx context.Context, sysBlock string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, kubeVolumeWait)
	defer cancel()
	var dev string
	for dev == "" {
		dev = findDiskBySerial(sysBlock, wire.KubeVolumeSerial)
		if dev != "" {
			break
		}
		if !timing.Sleep(ctx, 500*time.Millisecond) {
			return false, nil
		}
	}
	if err := os.MkdirAll(wire.KubeVolumeMount, 0o755); err != nil {
		return false, err
	}
	err := unix.Mount("/dev/"+dev, wire.KubeVolumeMount, "ext4", unix.MS_RDONLY|unix.MS_NODEV|unix.MS_NOSUID, "")
	if err != nil && !errors.Is(err, unix.EBUSY) {
		return false, fmt.Errorf("mount /dev/%s (serial %s) read-only at %s: %w", dev, wire.KubeVolumeSerial, wire.KubeVolumeMount, err)
	}
	return true, linkPrograms(wire.KubeVolumeBin, binDir)
}

// findDiskBySerial returns the name of the block device (vdb) whose
// serial is serial, or "".
func findDiskBySerial(sysBlock, serial string) string {
	ents, _ := os.ReadDir(sysBlock)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(sysBlock, e.Name(), "serial"))
		if err == nil && strings.TrimSpace(string(b)) == serial {
			return e.Name()
		}
	}
	return ""
}

// linkPrograms links each Kubernetes program of from into to.
func linkPrograms(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, p := range wire.KubePrograms() {
		dst := filepath.Join(to, p)
		_ = os.Remove(dst)
		if err := os.Symlink(filepath.Join(from, p), dst); err != nil {
			return fmt.Errorf("link %s on PATH: %w", p, err)
		}
	}
	return nil
}
