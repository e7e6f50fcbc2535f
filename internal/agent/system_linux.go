package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/bootlab/bootlab/internal/wire"
)

// SetupSystem mounts the kernel filesystems and opens the serial console.
func SetupSystem() *Console {
	for _, m := range []struct{ src, dst, fs string }{
		{"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}, {"devtmpfs", "/dev", "devtmpfs"},
		{"tmpfs", "/run", "tmpfs"}, {"tmpfs", "/tmp", "tmpfs"},
	} {
		_ = os.MkdirAll(m.dst, 0o755)
		if err := unix.Mount(m.src, m.dst, m.fs, 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			fmt.Fprintf(os.Stderr, "bootlab-probe: mount %s: %v\n", m.dst, err)
		}
	}
	var w io.Writer = os.Stderr
	for _, dev := range []string{"/dev/ttyS0", "/dev/console"} {
		if f, err := os.OpenFile(dev, os.O_WRONLY|unix.O_NOCTTY, 0); err == nil {
			w = f
			break
		}
	}
	return &Console{w: w}
}

// loadModules loads the modules of the initramfs in the order file's order;
// those loaded already (a node restored from a saved start loaded them
// before starting again) are counted, not loaded again.
func loadModules() (int, error) { return loadModulesExcept("") }

// loadModulesExcept is loadModules without module skip (its file name).
func loadModulesExcept(skip string) (int, error) {
	f, err := os.Open(wire.ModuleOrderFile)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	loaded := map[string]bool{}
	if data, err := os.ReadFile("/proc/modules"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if name, _, ok := strings.Cut(line, " "); ok {
				loaded[name+".ko"] = true
			}
		}
	}
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name := strings.TrimSpace(sc.Text())
		if name == "" || name == skip {
			continue
		}
		if !loaded[strings.ReplaceAll(name, "-", "_")] {
			if err := loadModuleFile(filepath.Join(wire.ModuleDir, name)); err != nil {
				return n, err
			}
		}
		n++
	}
	return n, sc.Err()
}

// loadModuleFile loads one module file (already loaded is fine).
func loadModuleFile(path string) error {
	mf, err := os.Open(path)
	if err != nil {
		return err
	}
	defer mf.Close()
	if err := unix.FinitModule(int(mf.Fd()), "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("load %s: %w", filepath.Base(path), err)
	}
	return nil
}

// findNIC waits for the first non-loopback interface.
func findNIC(timeout time.Duration) (string, net.HardwareAddr, error) {
	deadline := time.Now().Add(timeout)
	for {
		ents, _ := os.ReadDir("/sys/class/net")
		for _, e := range ents {
			if e.Name() == "lo" {
				continue
			}
			data, err := os.ReadFile(filepath.Join("/sys/class/net", e.Name(), "address"))
			if err != nil {
				continue
			}
			mac, err := net.ParseMAC(strings.TrimSpace(string(data)))
			if err != nil {
				continue
			}
			return e.Name(), mac, nil
		}
		if time.Now().After(deadline) {
			return "", nil, fmt.Errorf("no network interface after %s (is virtio_net loaded?)", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// linkUp sets ifname up.
func linkUp(ifname string) error {
	link, err := netlink.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("find %s: %w", ifname, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bring %s up: %w", ifname, err)
	}
	return nil
}

// setAddr gives ifname ip/mask (the kernel adds the subnet route).
func setAddr(ifname string, ip netip.Addr, mask net.IPMask) error {
	link, err := netlink.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("find %s: %w", ifname, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: mask}}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("set address %s on %s: %w", addr.IPNet, ifname, err)
	}
	return nil
}

func setHostname(name string) error { return unix.Sethostname([]byte(name)) }

// fwCfgDir is the qemu_fw_cfg driver's view of fw_cfg, by entry name;
// fwCfgPath is where it shows the Ignition blob.
const (
	fwCfgDir  = "/sys/firmware/qemu_fw_cfg/by_name/"
	fwCfgPath = fwCfgDir + "opt/com.coreos/config/raw"
)

func readFwCfg(timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	for {
		data, err := os.ReadFile(fwCfgPath)
		if err == nil {
			return data, nil
		}
		if time.Now().After(deadline) {
			if _, serr := os.Stat("/sys/firmware/qemu_fw_cfg"); serr != nil {
				return nil, fmt.Errorf("no QEMU fw_cfg device (qemu_fw_cfg loaded? the domain needs <features><acpi/>): %w", err)
			}
			return nil, fmt.Errorf("no opt/com.coreos/config in fw_cfg (the domain's <sysinfo type='fwcfg'> entry): %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
