package shims

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap"
	"github.com/bootlab/bootlab/internal/guestcluster/journal"
	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
	"github.com/bootlab/bootlab/internal/wire"
)

// Tools are the rehearsal stand-ins. Its fields say where they read the
// node's files and how long they wait: New sets what a node uses, tests
// set their own on their own value.
type Tools struct {
	// ReleasePath is the rehearsal release metadata; ProbeConfigPath the
	// probe config the agent wrote; KubeletState what the kubelet
	// stand-in runs (crictl lists it).
	ReleasePath, ProbeConfigPath, KubeletState string
	// JournalDir is the node's journal (journalctl reads it).
	JournalDir string
	// ClusterBootstrap is cluster-bootstrap start.
	ClusterBootstrap *clusterbootstrap.Start
	// CEO is wait-for-ceo.
	CEO etcd.WaitForCEO
	// UnitsSocket is where the agent answers systemctl ("":
	// units.SocketPath).
	UnitsSocket string
}

// New returns the stand-ins as a rehearsal node runs them.
func New() *Tools {
	return &Tools{
		ReleasePath: wire.ReleaseMetadataPath, ProbeConfigPath: wire.ConfigPath, KubeletState: kubelet.StatePath,
		JournalDir:       journal.Dir,
		ClusterBootstrap: clusterbootstrap.New(),
		CEO:              etcd.NewWaitForCEO(),
	}
}

// Multicall runs the agent as the program it was started as, when that is
// one of the rehearsal stand-ins.
func (t *Tools) Multicall(args []string) (int, bool) {
	var main func([]string) int
	switch filepath.Base(args[0]) {
	case "sudo":
		main = sudoMain
	case "podman":
		main = func(a []string) int { return t.podmanMain(a, os.Stdout, os.Stderr) }
	case "oc":
		main = func(a []string) int { return t.OcMain(a, os.Stdout, os.Stderr) }
	case "crictl":
		main = func(a []string) int { return t.crictlMain(a, os.Stdout, os.Stderr) }
	case "journalctl":
		main = func(a []string) int { return t.journalctlMain(a, os.Stdout, os.Stderr) }
	case UnitRunName:
		main = func(a []string) int { return t.unitRunMain(a, os.Stdout, os.Stderr) }
	case "dig":
		main = func(a []string) int { return digMain(a, os.Stdout, os.Stderr) }
	case "systemctl":
		main = func(a []string) int {
			return t.systemctlMain(a, os.Stdout, os.Stderr, func(s syscall.Signal) error { return syscall.Kill(1, s) })
		}
	case "reboot", "poweroff", "halt", "shutdown":
		name := filepath.Base(args[0])
		main = func(a []string) int {
			return powerMain(name, a, os.Stdout, os.Stderr, func(s syscall.Signal) error { return syscall.Kill(1, s) })
		}
	default:
		return 0, false
	}
	if filepath.Base(args[0]) != "sudo" && os.Geteuid() != os.Getuid() {
		// The agent is set-user-ID for sudo: the others run as their caller.
		uid, gid := os.Getuid(), os.Getgid()
		if unix.Setresgid(gid, gid, gid) != nil || unix.Setresuid(uid, uid, uid) != nil {
			fmt.Fprintln(os.Stderr, "cannot drop privileges")
			return 1, true
		}
	}
	return main(args[1:]), true
}

// Names are the programs linked to the agent on a rehearsal bootstrap
// (besides sudo, at SudoPath).
func Names() []string {
	return []string{"podman", "oc", "crictl", "journalctl", UnitRunName, "dig", "reboot", "poweroff", "halt", "shutdown", "systemctl"}
}

// release reads the rehearsal release metadata.
func (t *Tools) release() (*wire.RehearsalRelease, error) {
	return wire.ReadRehearsalRelease(t.ReleasePath)
}
