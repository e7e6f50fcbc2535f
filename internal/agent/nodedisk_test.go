package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/wire"
)

// fakeDisk is a node disk of size bytes under a fake /sys/block and /dev.
func fakeDisk(t *testing.T, size int64) (sysBlock, devDir, dev string) {
	t.Helper()
	sysBlock, devDir = t.TempDir(), t.TempDir()
	for name, serial := range map[string]string{"vda": wire.NodeDiskSerial + "\n", "vdb": wire.KubeVolumeSerial + "\n"} {
		require.NoError(t, os.MkdirAll(filepath.Join(sysBlock, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(sysBlock, name, "serial"), []byte(serial), 0o444))
	}
	dev = filepath.Join(devDir, "vda")
	f, err := os.Create(dev)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
	return sysBlock, devDir, dev
}

func writeAt(t *testing.T, p string, off int64, data []byte) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(data, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// A blank disk with the node serial is the one to make a file system on;
// one that holds a byte anywhere in its first or last 8 MiB is refused,
// naming the byte.
func TestNodeDiskMadeOnlyWhenBlank(t *testing.T) {
	t.Parallel()
	const size = 64 << 20
	sys, devDir, dev := fakeDisk(t, size)
	got, ours, err := openNodeDisk(context.Background(), sys, devDir)
	require.NoError(t, err)
	assert.Equal(t, dev, got)
	assert.False(t, ours, "a blank disk holds no file system of the node yet")

	for _, off := range []int64{0, 510, 5 << 20, size - 1} {
		sys, devDir, dev := fakeDisk(t, size)
		writeAt(t, dev, off, []byte{0x55})
		_, _, err := openNodeDisk(context.Background(), sys, devDir)
		require.Error(t, err, "data at %d", off)
		assert.Contains(t, err.Error(), "is not blank")
	}
}

// The node's file system, as mke2fs makes it with the agent's
// arguments, is found again by its label on the next boot; an ext4 file
// system labelled otherwise is left alone.
func TestNodeDiskFoundAgainByLabel(t *testing.T) {
	t.Parallel()
	mkfs, err := exec.LookPath("mke2fs")
	if err != nil {
		mkfs = "/usr/sbin/mke2fs"
	}
	if _, err := os.Stat(mkfs); err != nil {
		t.Fatalf("mke2fs is missing: apt-get install -y e2fsprogs")
	}
	sys, devDir, dev := fakeDisk(t, 64<<20)
	out, err := exec.Command(mkfs, mkfsArgs(dev)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, ours, err := openNodeDisk(context.Background(), sys, devDir)
	require.NoError(t, err)
	assert.True(t, ours)

	sys, devDir, dev = fakeDisk(t, 64<<20)
	out, err = exec.Command(mkfs, "-q", "-t", "ext4", "-L", "someone", dev).CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, _, err = openNodeDisk(context.Background(), sys, devDir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `labelled "someone"`)
}

// A node without the disk (a lab built before nodes kept state) says so.
func TestNoNodeDiskSaysSo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := openNodeDisk(ctx, t.TempDir(), t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), wire.NodeDiskSerial)
}

// On a boot after the first, Ignition's files on the kept trees are the
// node's, except the agent's own config; files in RAM are written again.
func TestKeptFileAfterTheFirstBoot(t *testing.T) {
	t.Parallel()
	later := &nodeDisk{}
	first := &nodeDisk{FirstBoot: true}
	var none *nodeDisk
	for p, kept := range map[string]bool{
		"/etc/kubernetes/kubeconfig":     true,
		"/opt/openshift/openshift/x.yml": true,
		"/var/lib/etcd/member":           true,
		"/etc/bootlab/probe.json":        false,
		"/usr/local/bin/bootkube.sh":     false,
		"/opt/bootlab/kubernetes/x":      false,
		"/etcetera":                      false,
	} {
		assert.Equal(t, kept, later.keptFile(p), p)
		assert.False(t, first.keptFile(p), p)
		assert.False(t, none.keptFile(p), p)
	}
}

// The initramfs's tree goes onto the disk: where the image wins its files
// replace the disk's; elsewhere the disk's stay and only missing ones
// come. Directories, links and modes are kept.
func TestCopyTreeImageWinsOrNode(t *testing.T) {
	t.Parallel()
	src, dst := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "ssh"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(src, "passwd"), []byte("image"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "ssh", "key"), []byte("k"), 0o600))
	require.NoError(t, os.Symlink("passwd", filepath.Join(src, "link")))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "passwd"), []byte("node"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "mine"), []byte("node"), 0o644))

	require.NoError(t, copyTree(src, dst, false))
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(dst, p))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "node", read("passwd"), "the node's file stays")
	assert.Equal(t, "k", read("ssh/key"))
	fi, err := os.Stat(filepath.Join(dst, "ssh", "key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	target, err := os.Readlink(filepath.Join(dst, "link"))
	require.NoError(t, err)
	assert.Equal(t, "passwd", target)

	require.NoError(t, copyTree(src, dst, true))
	assert.Equal(t, "image", read("passwd"), "the image's file wins")
	assert.Equal(t, "node", read("mine"), "a file only the node has stays")
}
