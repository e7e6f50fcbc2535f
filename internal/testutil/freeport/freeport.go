// Package freeport hands tests TCP ports that stay theirs: ports below the
// kernel's ephemeral range, each reserved across every test process on the
// machine by a lock file held until the process ends. Test code only.
//
// A port taken from the kernel (listen on :0, then close) is in the
// ephemeral range, where any process's next outgoing connection may take
// it as its local port before the test's server binds it: under make
// test's four packages at a time CI saw a kube-apiserver exit at start.
// Below that range the kernel hands out nothing on its own, and the lock
// files keep two test binaries from choosing the same port.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// reserved is every port this process holds, with its lock file.
var reserved = struct {
	sync.Mutex
	files map[int]*os.File
}{files: map[int]*os.File{}}

// TCP is a port on ip (an address of this machine) that no other test
// process holds and nothing listens on now; it stays this process's
// until the process exits.
func TCP(t testing.TB, ip string) int {
	t.Helper()
	lo, hi := rangeBelowEphemeral()
	p, err := take(ip, filepath.Join(os.TempDir(), "bootlab-test-ports"), lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Loopback is TCP on 127.0.0.1, as a string for a URL or a flag.
func Loopback(t testing.TB) string {
	t.Helper()
	return strconv.Itoa(TCP(t, "127.0.0.1"))
}

// take reserves a port in [lo, hi): one no lock file in dir holds (this
// process's or another's) and that ip:port can be bound.
func take(ip, dir string, lo, hi int) (int, error) {
	reserved.Lock()
	defer reserved.Unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	n := hi - lo
	start := rand.IntN(n)
	for i := range n {
		p := lo + (start+i)%n
		if reserved.files[p] != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return 0, err
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			f.Close()
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
		if err != nil {
			f.Close()
			continue
		}
		l.Close()
		reserved.files[p] = f
		return p, nil
	}
	return 0, fmt.Errorf("no TCP port free on %s in %d-%d: every one is held by a test process or in use", ip, lo, hi-1)
}

// rangeBelowEphemeral is [10000, the ephemeral range's first port), or
// [10000, 32768) when /proc does not say (Linux's default range starts
// there).
func rangeBelowEphemeral() (int, int) {
	lo, hi := 10000, 32768
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if first, err := strconv.Atoi(f[0]); err == nil && first > lo+1000 {
				hi = first
			}
		}
	}
	return lo, hi
}
