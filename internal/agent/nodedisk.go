package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
)

// A rehearsal node keeps on its own disk what an RHCOS node keeps across
// a reboot. RHCOS boots an ostree deployment: /usr is the read-only image,
// /etc the node's configuration (kept, merged with a new image's defaults
// on an update), /var everything the node writes (on RHCOS /opt and
// /usr/local are links into it), and the physical root is mounted at
// /sysroot (Red Hat's "Managing file systems in image mode for RHEL", and
// ostree's docs/var.md). The agent plays the image with the initramfs and
// the physical root with the node disk (wire.NodeDiskSerial).

// keptTree is a directory of the node that lives on the node disk: at Dir
// on the disk, bind-mounted over Path.
type keptTree struct {
	Path, Dir string
	// ImageWins says the initramfs's files replace the disk's at every
	// boot: the agent's own /etc files (users, nsswitch.conf) come with
	// the initramfs and must be this boot's, as ostree's /etc merge keeps
	// an image's new defaults the node did not change.
	ImageWins bool
}

// keptTrees are the node's trees on its disk. /opt/openshift is under
// /var/opt, where RHCOS's /opt link puts it.
var keptTrees = []keptTree{
	{Path: "/etc", Dir: "etc", ImageWins: true},
	{Path: "/var", Dir: "var"},
	{Path: "/opt/openshift", Dir: "var/opt/openshift"},
}

// nodeDisk is a node disk the agent mounted.
type nodeDisk struct {
	// Dev is its device (/dev/vda); Root where it is mounted.
	Dev, Root string
	// FirstBoot says the agent made its file system on this boot.
	FirstBoot bool
}

// agentOwnDir holds the agent's own files, which every boot writes from
// its Ignition config.
const agentOwnDir = "/etc/bootlab/"

// keptFile says whether an Ignition file stays as the node's disk has it
// on a boot after the first: Ignition runs once on RHCOS, so a file on a
// kept tree is the node's, except the agent's own (its config is this
// boot's). A file elsewhere (in the initramfs's RAM) is written again.
func (d *nodeDisk) keptFile(path string) bool {
	if d == nil || d.FirstBoot || strings.HasPrefix(path, agentOwnDir) {
		return false
	}
	for _, t := range keptTrees {
		if path == t.Path || strings.HasPrefix(path, t.Path+"/") {
			return true
		}
	}
	return false
}

// nodeDiskWait bounds the wait for the node disk after virtio_blk loaded
// (it probes the disks asynchronously).
const nodeDiskWait = 30 * time.Second

// blankSpan is how much of the disk's start, and of its end, must read as
// zeros before the agent makes a file system on it: every partition table
// (MBR, GPT and its backup at the end), LVM label and file system
// superblock (ext4 at 1 KiB, btrfs at 64 KiB, XFS at 0) lies within it.
const blankSpan = 8 << 20

// ext4 superblock fields (the kernel's struct ext4_super_block): the
// superblock starts 1024 bytes into the disk.
const (
	sbOffset    = 1024
	sbMagicOff  = 0x38
	sbLabelOff  = 0x78
	sbLabelSize = 16
	ext4Magic   = 0xEF53
)

// ext4Label is the label of the ext4 file system whose first 2 KiB are
// head, and whether there is one.
func ext4Label(head []byte) (string, bool) {
	if len(head) < sbOffset+sbLabelOff+sbLabelSize {
		return "", false
	}
	sb := head[sbOffset:]
	if binary.LittleEndian.Uint16(sb[sbMagicOff:]) != ext4Magic {
		return "", false
	}
	return string(bytes.TrimRight(sb[sbLabelOff:sbLabelOff+sbLabelSize], "\x00")), true
}

// provenBlank reads the start and the end of the disk r of size bytes and
// says whether all of it is zeros, as a fresh qcow2 overlay of the lab's
// empty base image reads.
func provenBlank(r io.ReaderAt, size int64) error {
	buf := make([]byte, 1<<20)
	check := func(from int64) error {
		for off := from; off < from+blankSpan && off < size; off += int64(len(buf)) {
			n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("read at %d: %w", off, err)
			}
			if i := bytes.IndexFunc(buf[:n], func(r rune) bool { return r != 0 }); i >= 0 {
				return fmt.Errorf("byte %d is not zero: the disk holds data", off+int64(i))
			}
		}
		return nil
	}
	if err := check(0); err != nil {
		return err
	}
	return check(max(blankSpan, size-blankSpan))
}

// openNodeDisk finds the node disk by its serial under sysBlock and says
// whether it holds the node's file system already; a disk that holds
// anything else is refused.
func openNodeDisk(ctx context.Context, sysBlock, devDir string) (dev string, ours bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, nodeDiskWait)
	defer cancel()
	name := findDiskBySerial(sysBlock, wire.NodeDiskSerial)
	for name == "" {
		if !timing.Sleep(ctx, 200*time.Millisecond) {
			return "", false, fmt.Errorf("no disk with serial %s after %s: the node keeps nothing across a reboot (a lab built before rehearsal nodes kept their state: `bootlab lab up` redefines its nodes with the disk serial)", wire.NodeDiskSerial, nodeDiskWait)
		}
		name = findDiskBySerial(sysBlock, wire.NodeDiskSerial)
	}
	dev = filepath.Join(devDir, name)
	f, err := os.Open(dev)
	if err != nil {
		return dev, false, err
	}
	defer f.Close()
	head := make([]byte, 4096)
	if _, err := io.ReadFull(f, head); err != nil {
		return dev, false, fmt.Errorf("read %s: %w", dev, err)
	}
	if label, ok := ext4Label(head); ok {
		if label != wire.NodeDiskLabel {
			return dev, false, fmt.Errorf("%s has an ext4 file system labelled %q, not %q: left alone", dev, label, wire.NodeDiskLabel)
		}
		return dev, true, nil
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return dev, false, err
	}
	if err := provenBlank(f, size); err != nil {
		return dev, false, fmt.Errorf("%s is not blank (%v): no file system is made on a disk that may hold someone's data", dev, err)
	}
	return dev, false, nil
}

// mkfsArgs make the node's ext4 file system with mke2fs (the tools
// archive carries programs, not e2fsprogs' mkfs.ext4 link to it). The inode tables and the
// journal are left for the kernel to initialise as it uses them: zeroing
// them at once would write gigabytes into the overlay under TCG.
func mkfsArgs(dev string) []string {
	return []string{"-q", "-t", "ext4", "-L", wire.NodeDiskLabel, "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", dev}
}

// mountNodeDisk finds the node disk, makes its file system on the first
// boot, mounts it and puts the kept trees on it.
func mountNodeDisk(ctx context.Context) (*nodeDisk, error) {
	dev, ours, err := openNodeDisk(ctx, "/sys/block", "/dev")
	if err != nil {
		return nil, err
	}
	d := &nodeDisk{Dev: dev, Root: wire.NodeDiskMount, FirstBoot: !ours}
	if d.FirstBoot {
		mkfs, err := exec.LookPath("mke2fs")
		if err != nil {
			return nil, fmt.Errorf("no mke2fs in this initrd (the rehearsal initrd carries e2fsprogs): %w", err)
		}
		if out, err := exec.CommandContext(ctx, mkfs, mkfsArgs(dev)...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("mke2fs %s: %v: %s", dev, err, bytes.TrimSpace(out))
		}
	}
	if err := os.MkdirAll(d.Root, 0o755); err != nil {
		return nil, err
	}
	// noinit_itable: the kernel initialises inode tables only as it needs
	// them (no background thread writing every table into the overlay).
	if err := unix.Mount(dev, d.Root, "ext4", unix.MS_NODEV|unix.MS_NOSUID, "noinit_itable"); err != nil {
		return nil, fmt.Errorf("mount %s at %s: %w", dev, d.Root, err)
	}
	for _, t := range keptTrees {
		if err := keepTree(t, d.Root); err != nil {
			return d, err
		}
	}
	return d, nil
}

// keepTree puts tree t on the disk mounted at root and bind-mounts it over
// t.Path: the initramfs's files go onto the disk first (all of them where
// the image wins, the missing ones elsewhere).
func keepTree(t keptTree, root string) error {
	dst := filepath.Join(root, t.Dir)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(t.Path, 0o755); err != nil {
		return err
	}
	if err := copyTree(t.Path, dst, t.ImageWins); err != nil {
		return fmt.Errorf("copy %s onto the node disk: %w", t.Path, err)
	}
	if err := unix.Mount(dst, t.Path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount %s over %s: %w", dst, t.Path, err)
	}
	return nil
}

// copyTree copies the directories, files and links of src into dst,
// with their modes and owners; an entry dst has already is replaced only
// when overwrite says so. Other kinds of files (devices, sockets) are left
// out.
func copyTree(src, dst string, overwrite bool) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		_, statErr := os.Lstat(to)
		exists := statErr == nil
		switch {
		case e.IsDir():
			if exists {
				return nil
			}
			if err := os.Mkdir(to, info.Mode().Perm()); err != nil {
				return err
			}
			return chownLike(to, info)
		case exists && !overwrite:
			return nil
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			_ = os.Remove(to)
			if err := os.Symlink(target, to); err != nil {
				return err
			}
			return chownLike(to, info)
		case e.Type().IsRegular():
			return copyFile(p, to, info)
		}
		return nil
	})
}

// copyFile copies regular file from to to, with its mode and owner,
// through a temporary file renamed into place.
func copyFile(from, to string, info fs.FileInfo) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := to + ".bootlab-copy"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, info.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
	}
	if err == nil {
		err = chownLike(tmp, info)
	}
	if err == nil {
		err = os.Rename(tmp, to)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// chownLike gives p the owner of info; as another user than root (a test)
// a file stays the caller's.
func chownLike(p string, info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 {
		return nil
	}
	return os.Lchown(p, int(st.Uid), int(st.Gid))
}
