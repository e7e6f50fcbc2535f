package agent

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bootlab/bootlab/internal/wire"
)

// AwaitSavedStart makes a template of this VM when its fw_cfg says so
// (wire.SavedStartEntry): it writes wire.SavedStartReady to the console
// and waits there, for lab up to save the VM's memory. A VM restored from
// that image wakes in the same loop, finds its own fw_cfg (read again by
// reloading the driver, which reads the entry list once, at load), and
// starts afresh: see resumeSaved. On any other VM it returns at once.
func AwaitSavedStart(c *Console) {
	loadErr := loadModule("qemu_fw_cfg")
	if !exists(fwCfgDir + wire.SavedStartEntry) {
		return // not a template (readConfig says what is wrong with fw_cfg, if anything)
	}
	// A template's kernel must leave the fw_cfg and virtio drivers to the
	// agent: one it cannot reload cannot show a restored node its own
	// fw_cfg, and a bound NIC keeps the template's MAC. lab up, reading the
	// declined line, stops the template and boots its nodes.
	switch {
	case loadErr != nil:
		fmt.Fprintf(c, "%sqemu_fw_cfg is not a module of the initramfs (%v)\n", wire.SavedStartDeclined, loadErr)
		return
	case exists("/sys/bus/pci/drivers/virtio-pci"):
		fmt.Fprintln(c, wire.SavedStartDeclined+"virtio_pci is built into the kernel: its devices are bound before the agent starts")
		return
	}
	// Every module but virtio_pci loads now, saved with the template: their
	// drivers bind nothing until virtio_pci, loaded after the restore,
	// finds the node's own devices.
	if _, err := loadModulesExcept("virtio_pci.ko"); err != nil {
		fmt.Fprintf(c, "%sloading modules failed: %v\n", wire.SavedStartDeclined, err)
		return
	}
	// The uptime lets lab up check the kernel's clock against its own
	// before saving it: every node restored from the image keeps its TSC
	// calibration.
	fmt.Fprintf(c, "%s (uptime %s s)\n", wire.SavedStartReady, uptime())
	for exists(fwCfgDir + wire.SavedStartEntry) {
		time.Sleep(20 * time.Millisecond)
		_ = unix.DeleteModule("qemu_fw_cfg", unix.O_NONBLOCK)
		_ = loadModule("qemu_fw_cfg")
	}
	if err := resumeSaved(c); err != nil {
		// Every node restored from the image shares its random pool until
		// reseeded: no key may be made from it. The node stops here.
		fmt.Fprintf(c, "bootlab-probe: restored from a saved start, and %v: this node stops here (`bootlab lab up` again starts it by booting)\n", err)
		for {
			time.Sleep(time.Hour)
		}
	}
}

// resumeSaved makes a restored VM a node of its own: its modules loaded
// (virtio_net reads its MAC from the device, which QEMU resets to the
// domain's own when the driver binds), the kernel's random pool reseeded
// from the virtio RNG (the template's pool is every restored node's), its
// clock set from the RTC (the guest's clock stood still while the image
// was saved; the emulated RTC follows the host's), and the agent exec'd
// again, so nothing of the template's process survives.
func resumeSaved(c *Console) error {
	if _, err := loadModules(); err != nil {
		return fmt.Errorf("loading modules failed: %w", err)
	}
	if err := reseed(); err != nil {
		return fmt.Errorf("its random pool was not reseeded: %w", err)
	}
	note := "clock left as it was (the image was saved within a second)"
	// The RTC counts whole seconds: the middle of its second is at most
	// half a second off.
	if rtc, err := readRTC(); err == nil {
		if t := time.Unix(rtc, 500e6); time.Until(t) > time.Second {
			tv := unix.NsecToTimeval(t.UnixNano())
			if err := unix.Settimeofday(&tv); err == nil {
				note = "clock set from the RTC to " + t.UTC().Format(time.RFC3339)
			}
		}
	}
	fmt.Fprintf(c, "bootlab-probe: restored from a saved start: random pool reseeded from virtio-rng, %s; starting again\n", note)
	exe, err := os.Executable()
	if err != nil {
		exe = "/init"
	}
	return fmt.Errorf("exec %s failed: %w", exe, unix.Exec(exe, os.Args, os.Environ()))
}

// reseed mixes 64 bytes of the virtio RNG into the kernel's input pool,
// credited, and makes the kernel rekey its CRNG from it now.
func reseed() error {
	var buf [64]byte
	var err error
	for i := 0; i < 50; i++ { // the hwrng device appears as virtio_rng binds
		var f *os.File
		if f, err = os.Open("/dev/hwrng"); err == nil {
			_, err = io.ReadFull(f, buf[:])
			f.Close()
			if err == nil {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("read /dev/hwrng: %w", err)
	}
	rnd, err := os.OpenFile("/dev/random", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer rnd.Close()
	// struct rand_pool_info { int entropy_count; int buf_size; __u32 buf[]; }
	info := make([]byte, 8+len(buf))
	binary.NativeEndian.PutUint32(info[0:], uint32(len(buf)*8))
	binary.NativeEndian.PutUint32(info[4:], uint32(len(buf)))
	copy(info[8:], buf[:])
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, rnd.Fd(), unix.RNDADDENTROPY, uintptr(unsafe.Pointer(&info[0]))); e != 0 {
		return fmt.Errorf("RNDADDENTROPY: %w", e)
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, rnd.Fd(), unix.RNDRESEEDCRNG, 0); e != 0 {
		return fmt.Errorf("RNDRESEEDCRNG: %w", e)
	}
	return nil
}

// loadModule loads one module of the initramfs by name.
func loadModule(name string) error {
	return loadModuleFile(filepath.Join(wire.ModuleDir, name+".ko"))
}

// uptime is the kernel's uptime in seconds, as /proc/uptime has it.
func uptime() string {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return "?"
	}
	up, _, _ := strings.Cut(string(b), " ")
	return up
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
