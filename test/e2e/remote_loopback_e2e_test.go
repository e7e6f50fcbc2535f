//go:build e2e

package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// loopbackSSHD runs a private OpenSSH sshd on a free loopback port for
// root with a fresh key, and returns the port and the key file.
func loopbackSSHD(t *testing.T) (int, string) {
	t.Helper()
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		t.Fatal("sshd not found: apt-get install -y openssh-server")
	}
	require.NoError(t, os.MkdirAll("/run/sshd", 0o755))
	dir := t.TempDir()
	key := func(name string) ssh.PublicKey {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		block, err := ssh.MarshalPrivateKey(priv, name)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600))
		p, err := ssh.NewPublicKey(pub)
		require.NoError(t, err)
		return p
	}
	key("host")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(key("client")), 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	cfg := filepath.Join(dir, "sshd_config")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\nPidFile %s\n"+
		"PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\nAllowStreamLocalForwarding yes\n",
		port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"))), 0o600))
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
	for {
		select {
		case <-exited:
			t.Fatal("sshd exited")
		default:
		}
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return port, filepath.Join(dir, "client")
		}
	}
}

// TestRemoteURIOnLoopback builds a probe lab through qemu+ssh to this
// machine's own sshd: libvirt, the boot file uploads, haproxy, console
// logs and preflight all go through bootlab's SSH connection, and the lab
// verifies green. (The lab network is on this machine, so verify reaches it
// directly: the separate-host test is the namespace e2e.)
func TestRemoteURIOnLoopback(t *testing.T) {
	port, key := loopbackSSHD(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	uri := fmt.Sprintf("qemu+ssh://root@127.0.0.1:%d/system?keyfile=%s&known_hosts=%s", port, key, kh)
	hostDir := filepath.Join(e2eRoot, "remote-host-"+filepath.Base(t.TempDir()))
	l := newLabWith(t, fmt.Sprintf("topology:\n  masters: 1\n  workers: 0\nlibvirt:\n  uri: %q\n  hostDir: %s\n", uri, hostDir))
	t.Cleanup(func() { os.RemoveAll(hostDir) })

	r := mustRun(t, "lab", "preflight", "-f", l.SpecFile)
	assert.Contains(t, r.Stdout, fmt.Sprintf("[on root@127.0.0.1:%d]", port), "each check names the host")

	r = mustRun(t, "lab", "up", "-f", l.SpecFile)
	assert.Contains(t, r.Stdout+r.Stderr, fmt.Sprintf("on root@127.0.0.1:%d", port), "haproxy starts on the hypervisor's machine")
	kd, err := os.ReadFile(kh)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(kd), "\n"), "one host key recorded")

	v, vr := verifyJSON(t, l, "4m")
	require.Equal(t, 0, vr.Code, "verify failed:\n%s\n%s", strings.Join(failedChecks(v), "\n"), vr.Stderr)

	s := loadSpec(t, l)
	_, err = os.Stat(filepath.Join(hostDir, "haproxy", "haproxy.cfg"))
	assert.NoError(t, err, "haproxy's config is in libvirt.hostDir")
	_, err = os.Stat(filepath.Join(s.LabDir, "haproxy"))
	assert.True(t, os.IsNotExist(err), "not in the lab directory")
	r = mustRun(t, "lab", "console", "-f", l.SpecFile, "--no-follow", "--raw", "master-0")
	assert.NotEmpty(t, r.Stdout, "the console log is read over SSH")
	r = mustRun(t, "lab", "status", "-f", l.SpecFile, "-o", "json")
	assert.Contains(t, r.Stdout, `"running": true`, "status finds haproxy on the hypervisor")

	mustRun(t, "lab", "down", "-f", l.SpecFile)
	assert.Empty(t, leftovers(t, l))
	_, err = os.Stat(hostDir)
	assert.True(t, os.IsNotExist(err), "down removes libvirt.hostDir")
}
