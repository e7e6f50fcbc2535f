package preflight

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// HostUser is a local user as the traversal checks need it.
type HostUser struct {
	Name string
	UID  int
	GIDs []int
}

// FileOwner is the part of a file's metadata the traversal checks need.
type FileOwner struct {
	Mode fs.FileMode
	UID  int
	GID  int
}

// HostFacts are the ways preflight looks at the host. Zero fields read the
// real host; unit tests replace them to reach every failing check.
type HostFacts struct {
	// DevKVM is the KVM device (default /dev/kvm).
	DevKVM string
	// MemInfo is the meminfo file (default /proc/meminfo).
	MemInfo string
	// BootDir holds host kernels for the KVM smoke test (default /boot).
	BootDir    string
	Getenv     func(string) string
	LookPath   func(string) (string, error)
	LookupUser func(name string) (*HostUser, error)
	// Stat follows symlinks.
	Stat func(path string) (*FileOwner, error)
	// FreeBytes is the space available on path's filesystem.
	FreeBytes func(path string) (uint64, error)
	Routes    func() ([]HostRoute, error)
	// Interfaces lists the host's network interfaces by name (default:
	// /proc/net/dev through ReadFile, so a remote host's are its own).
	Interfaces func() ([]string, error)
	// Listeners lists the host's listening TCP sockets.
	Listeners func() ([]netip.AddrPort, error)
	// HAProxyCheck is `haproxy -c -f cfgPath` (loadbalancer.Check).
	HAProxyCheck func(ctx context.Context, binary, cfgPath string) error
	// KVMSmoke boots kernel under KVM for a few seconds and returns nil when
	// it printed to the serial console.
	KVMSmoke func(ctx context.Context, kernel string) error
	// SpareKernel is a kernel to prove KVM with when the spec and the host
	// have none (the cached probe kernel: the caller knows the cache).
	SpareKernel string
	// ReadFile reads a file of the host (/proc/meminfo, /proc/net/tcp).
	ReadFile func(path string) ([]byte, error)
	// WriteTemp writes data to a temporary file on the host (the rendered
	// haproxy.cfg that haproxy checks) and returns it and its remover.
	WriteTemp func(data []byte) (path string, remove func(), err error)
	// Where names the host in every check (default "localhost").
	Where string
}

func (h HostFacts) withDefaults() HostFacts {
	if h.DevKVM == "" {
		h.DevKVM = "/dev/kvm"
	}
	if h.MemInfo == "" {
		h.MemInfo = "/proc/meminfo"
	}
	if h.BootDir == "" {
		h.BootDir = "/boot"
	}
	if h.Getenv == nil {
		h.Getenv = os.Getenv
	}
	if h.LookPath == nil {
		h.LookPath = exec.LookPath
	}
	if h.LookupUser == nil {
		h.LookupUser = lookupHostUser
	}
	if h.Stat == nil {
		h.Stat = statOwner
	}
	if h.FreeBytes == nil {
		h.FreeBytes = freeBytes
	}
	if h.Routes == nil {
		h.Routes = HostRoutes
	}
	if h.KVMSmoke == nil {
		h.KVMSmoke = kvmSmoke
	}
	if h.HAProxyCheck == nil {
		h.HAProxyCheck = func(ctx context.Context, binary, cfgPath string) error {
			return loadbalancer.Check(ctx, nil, binary, cfgPath)
		}
	}
	if h.ReadFile == nil {
		h.ReadFile = os.ReadFile
	}
	if h.Interfaces == nil {
		h.Interfaces = func() ([]string, error) { return hostInterfaces(h.ReadFile) }
	}
	if h.Listeners == nil {
		h.Listeners = func() ([]netip.AddrPort, error) { return tcpListeners(h.ReadFile) }
	}
	if h.WriteTemp == nil {
		h.WriteTemp = writeLocalTemp
	}
	if h.Where == "" {
		h.Where = "localhost"
	}
	return h
}

func writeLocalTemp(data []byte) (string, func(), error) {
	tmp, err := os.CreateTemp("", "bootlab-preflight-*.cfg")
	if err != nil {
		return "", nil, err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	remove := func() { os.Remove(tmp.Name()) }
	if err := errors.Join(werr, cerr); err != nil {
		remove()
		return "", nil, err
	}
	return tmp.Name(), remove, nil
}

// memAvailable reads MemAvailable from a meminfo file, in bytes.
func memAvailable(readFile func(string) ([]byte, error), path string) (uint64, error) {
	return memField(readFile, path, "MemAvailable:")
}

// memField reads one line of a meminfo file (field "MemTotal:"), in bytes.
func memField(readFile func(string) ([]byte, error), path, field string) (uint64, error) {
	data, err := readFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == field {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: bad %s %q", path, strings.TrimSuffix(field, ":"), fields[1])
			}
			return kb * 1024, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no %s line", path, strings.TrimSuffix(field, ":"))
}

const (
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

func human(b uint64) string {
	switch {
	case b >= gib:
		return fmt.Sprintf("%.1f GiB", float64(b)/float64(gib))
	default:
		return fmt.Sprintf("%d MiB", b/mib)
	}
}

func lookupHostUser(name string) (*HostUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, err
	}
	hu := &HostUser{Name: name, UID: uid}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if g, err := strconv.Atoi(id); err == nil {
			hu.GIDs = append(hu.GIDs, g)
		}
	}
	return hu, nil
}

func statOwner(path string) (*FileOwner, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	fo := &FileOwner{Mode: fi.Mode()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		fo.UID, fo.GID = int(st.Uid), int(st.Gid)
	}
	return fo, nil
}

func freeBytes(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}
