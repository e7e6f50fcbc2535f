//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/cache"
)

// remoteHost is a second libvirt host on this machine (scripts/host/remote-host.sh):
// its own network namespace reached over a veth pair, its own mount namespace
// (private /run/libvirt, /var/lib/libvirt, /var/lib/bootlab, caches), its own
// virtlogd, libvirtd and sshd. From the root namespace it is as remote as a
// server across the room: only its SSH port is reachable.
type remoteHost struct {
	Name       string
	Net        string // the /30's first address (REMOTE_HOST_NET)
	Dir        string // state of the harness (keys, logs); not visible inside
	Addr       string // the host's veth address, where sshd listens
	KeyFile    string // private key root@Addr accepts
	KnownHosts string // a known_hosts file naming the host's key
	HostKey    string // "ssh-ed25519 AAAA..."
}

// remoteHostScript is the script, relative to this package.
var remoteHostScript = filepath.Join("..", "..", "scripts", "host", "remote-host.sh")

// One test's remote hosts at a time: they take fixed names and /30s, and
// every one runs a libvirtd.
var remoteHostMu sync.Mutex

// newRemoteHost brings a remote host up and registers its teardown, which
// fails the test if anything is left: processes, mounts, the veth or the netns.
func newRemoteHost(t *testing.T) *remoteHost {
	t.Helper()
	return newRemoteHosts(t, 1)[0]
}

// newRemoteHosts brings n remote hosts up, each its own namespaces,
// libvirtd, sshd and /30 (10.254.0.0, 10.254.0.4, ...), named e2e, e2e1, ...
func newRemoteHosts(t *testing.T, n int) []*remoteHost {
	t.Helper()
	remoteHostMu.Lock()
	t.Cleanup(remoteHostMu.Unlock)
	var hosts []*remoteHost
	for i := range n {
		name := "e2e"
		if i > 0 {
			name = fmt.Sprintf("e2e%d", i)
		}
		hosts = append(hosts, startRemoteHost(t, name, fmt.Sprintf("10.254.0.%d", 4*i)))
	}
	return hosts
}

// startRemoteHost is one host of newRemoteHosts.
func startRemoteHost(t *testing.T, name, net string) *remoteHost {
	t.Helper()
	for _, tool := range []string{"sshd", "unshare", "nsenter", "ip", "ssh", "virt-ssh-helper"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err := os.Stat("/usr/sbin/" + tool); err != nil {
				t.Fatalf("%s not found: run scripts/host/setup.sh --test (apt-get install -y openssh-server openssh-client util-linux iproute2 libvirt-daemon-system)", tool)
			}
		}
	}
	dir := t.TempDir()
	// The host's state has a fixed place, so a run that was interrupted
	// before its teardown is torn down by the next one.
	h := &remoteHost{Name: name, Net: net, Dir: filepath.Join(os.TempDir(), "bootlab-remote-host-"+name), KeyFile: filepath.Join(dir, "id_ed25519")}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "bootlab-e2e")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.KeyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.KeyFile+".pub", ssh.MarshalAuthorizedKey(sp), 0o644); err != nil {
		t.Fatal(err)
	}

	// A host left over by an interrupted run would make up refuse.
	if out, err := h.script("down", h.Name, h.Dir).CombinedOutput(); err != nil {
		t.Fatalf("remove the remote host an earlier run left: %v\n%s", err, out)
	}
	if err := os.RemoveAll(h.Dir); err != nil {
		t.Fatal(err)
	}
	out, err := h.script("up", h.Name, h.Dir, h.KeyFile+".pub").CombinedOutput()
	t.Cleanup(func() {
		if out, err := h.script("down", h.Name, h.Dir).CombinedOutput(); err != nil {
			t.Errorf("remote host down: %v\n%s", err, out)
		}
		if left := h.leftovers(t); len(left) > 0 {
			t.Errorf("remote host down left: %s", strings.Join(left, "; "))
		} else if !t.Failed() {
			os.RemoveAll(h.Dir) // keys and logs: kept when the test failed
		}
	})
	if err != nil {
		logs, _ := os.ReadFile(filepath.Join(h.Dir, "log", "sshd.log"))
		t.Fatalf("remote host up: %v\n%s\nsshd.log:\n%s", err, out, logs)
	}
	env := readEnvFile(t, filepath.Join(h.Dir, "host.env"))
	h.Addr, h.HostKey = env["addr"], env["host_key"]
	if h.Addr == "" || h.HostKey == "" {
		t.Fatalf("remote host: %s lacks addr or host_key", filepath.Join(h.Dir, "host.env"))
	}
	h.KnownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(h.KnownHosts, []byte(h.Addr+" "+h.HostKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// script is remote-host.sh with args, on the host's /30.
func (h *remoteHost) script(args ...string) *exec.Cmd {
	cmd := exec.Command(remoteHostScript, args...)
	cmd.Env = append(os.Environ(), "REMOTE_HOST_NET="+h.Net)
	return cmd
}

// StopSSHD kills every sshd of the host, the listener and each session:
// from this machine the host is gone (connections refused, those open cut).
func (h *remoteHost) StopSSHD(t *testing.T) {
	t.Helper()
	for _, p := range h.processes(t, "sshd") {
		pid := strings.TrimSuffix(p[strings.Index(p, "[")+1:], "]")
		_ = exec.Command("kill", "-KILL", pid).Run()
	}
}

// StartSSHD starts the host's sshd again, as remote-host.sh up did.
func (h *remoteHost) StartSSHD(t *testing.T) {
	t.Helper()
	if out, err := h.Exec(t, "/usr/sbin/sshd", "-f", filepath.Join(h.Dir, "ssh", "sshd_config"), "-E", filepath.Join(h.Dir, "log", "sshd.log")); err != nil {
		t.Fatalf("start sshd on %s again: %v\n%s", h.Name, err, out)
	}
}

func readEnvFile(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env
}

// URI is the libvirt URI of the host's system daemon, with the test's key.
func (h *remoteHost) URI() string {
	q := url.Values{}
	q.Set("keyfile", h.KeyFile)
	q.Set("known_hosts", h.KnownHosts)
	q.Set("no_tty", "1")
	return fmt.Sprintf("qemu+ssh://root@%s/system?%s", h.Addr, q.Encode())
}

// Exec runs a command inside the host (both namespaces) and returns its output.
func (h *remoteHost) Exec(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := h.script(append([]string{"exec", h.Name, h.Dir}, args...)...).CombinedOutput()
	return string(out), err
}

// Virsh runs virsh from the root namespace against the host over qemu+ssh,
// through OpenSSH (libvirt's ssh transport) checking the host's key against
// h.KnownHosts only: the user's ~/.ssh/known_hosts is neither read nor written.
func (h *remoteHost) Virsh(t *testing.T, args ...string) (string, error) {
	t.Helper()
	wrapper := filepath.Join(filepath.Dir(h.KeyFile), "ssh")
	script := fmt.Sprintf("#!/bin/sh\nexec ssh -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o BatchMode=yes \"$@\"\n", h.KnownHosts)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	q := url.Values{}
	q.Set("keyfile", h.KeyFile)
	q.Set("no_tty", "1")
	q.Set("command", wrapper)
	uri := fmt.Sprintf("qemu+ssh://root@%s/system?%s", h.Addr, q.Encode())
	var stderr strings.Builder
	cmd := exec.Command("virsh", append([]string{"-c", uri}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("virsh %v on %s: %w: %s", args, h.Addr, err, stderr.String())
	}
	return string(out), nil
}

// leftovers lists what remains of the host after down.
func (h *remoteHost) leftovers(t *testing.T) []string {
	t.Helper()
	var left []string
	if _, err := os.Stat("/run/netns/" + h.Name); err == nil {
		left = append(left, "netns "+h.Name)
	}
	if out, _ := exec.Command("ip", "-br", "link", "show", "blr-"+h.Name+"-o").CombinedOutput(); strings.HasPrefix(string(out), "blr-") {
		left = append(left, "veth blr-"+h.Name+"-o")
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, h.Dir) {
			left = append(left, "mount "+line)
		}
	}
	// Daemons started for this host name its sshd_config or state directory.
	out, _ := exec.Command("pgrep", "-af", h.Dir).Output()
	for _, p := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if p != "" && !strings.Contains(p, "pgrep") {
			left = append(left, "process "+p)
		}
	}
	return left
}

// TestRemoteHostHarness checks the second host itself: libvirt answers over
// qemu+ssh from the root namespace, it is a different daemon with its own
// state, and the workstation's files are invisible inside.
func TestRemoteHostHarness(t *testing.T) {
	// Not parallel: the remote host (scripts/host/remote-host.sh) is one per machine, on 10.254.0.0/30.
	h := newRemoteHost(t)

	// The inner daemon answers over SSH, and it is not the root's daemon:
	// a network defined there does not appear on qemu:///system.
	_, err := h.Virsh(t, "list", "--all")
	if err != nil {
		t.Fatal(err)
	}
	netXML := filepath.Join(t.TempDir(), "net.xml")
	if err := os.WriteFile(netXML, []byte("<network><name>bootlab-e2e-remote-probe</name><bridge name='blrprobe0'/><ip address='10.213.254.1' prefix='24'/></network>"), 0o644); err != nil {
		t.Fatal(err)
	}
	// net-define reads the file on the client side: virsh sends the XML.
	if _, err := h.Virsh(t, "net-create", netXML); err != nil {
		t.Fatal(err)
	}
	inner, err := h.Virsh(t, "net-list", "--name")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(inner, "bootlab-e2e-remote-probe") {
		t.Errorf("inner net-list lacks the network just created:\n%s", inner)
	}
	outer, err := virsh(t, "net-list", "--all", "--name")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(outer, "bootlab-e2e-remote-probe") {
		t.Errorf("a network created on the remote host shows on qemu:///system: the two libvirtds share state")
	}
	// Its bridge exists in the host's network namespace only.
	if out, err := h.Exec(t, "ip", "-br", "addr", "show", "blrprobe0"); err != nil || !strings.Contains(out, "10.213.254.1") {
		t.Errorf("bridge blrprobe0 inside the host: %v %s", err, out)
	}
	if out, _ := exec.Command("ip", "link", "show", "blrprobe0").CombinedOutput(); strings.Contains(string(out), "blrprobe0:") {
		t.Errorf("the remote host's bridge is visible in the root namespace")
	}

	// bootlab's SSH client logs in to the host's real sshd with the key in
	// known_hosts (strict: the key was written there, not learned), and a
	// login shell without a terminal reads its commands from stdin.
	c, err := sshc.Dial(context.Background(), sshc.Config{Host: h.Addr, User: "root", KeyFiles: []string{h.KeyFile}, KnownHosts: h.KnownHosts})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	code, err := c.Shell(context.Background(), strings.NewReader("echo shell-$((6*7))\nexit 4\n"), &out, io.Discard)
	if err != nil || code != 4 || out.String() != "shell-42\n" {
		t.Errorf("login shell over SSH: code %d, err %v, output %q; want 4, nil, \"shell-42\\n\"", code, err, out.String())
	}

	// Files of the workstation are invisible inside.
	for _, d := range []string{"/var/lib/bootlab", "/var/lib/libvirt/qemu", cache.Dir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.CreateTemp(d, "workstation-only-")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		t.Cleanup(func() { os.Remove(f.Name()) })
		if out, err := h.Exec(t, "test", "-e", f.Name()); err == nil {
			t.Errorf("%s (written in the root namespace) is visible inside the remote host %s", f.Name(), out)
		}
	}
	// And the host's libvirt state is invisible outside.
	if out, err := h.Exec(t, "ls", "/run/libvirt/network"); err != nil || !strings.Contains(out, "bootlab-e2e-remote-probe") {
		t.Errorf("the inner libvirtd's network state is not under its /run/libvirt: %v %s", err, out)
	}
	if _, err := os.Stat("/run/libvirt/network/bootlab-e2e-remote-probe.xml"); err == nil {
		t.Errorf("the inner libvirtd wrote its network state into the root's /run/libvirt")
	}
}
