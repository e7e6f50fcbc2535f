//go:build integration

package node_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/node"
)

// sshd is a real OpenSSH server on loopback, run by the test.
type sshd struct {
	dir, userKey string
	port         int
}

func keygen(t *testing.T, path string) {
	t.Helper()
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bootlab-test", "-f", path).CombinedOutput()
	require.NoError(t, err, "ssh-keygen (apt-get install -y openssh-client): %s", out)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startSSHD starts sshd -D with a fresh host key; users listed in
// authorized get the test's user key.
func startSSHD(t *testing.T, hostKey string, authorized ...string) *sshd {
	t.Helper()
	bin := "/usr/sbin/sshd"
	_, err := os.Stat(bin)
	require.NoError(t, err, "sshd is needed: apt-get install -y openssh-server")
	require.Equal(t, 0, os.Geteuid(), "the sshd integration test runs sshd as root: run it as root (make integration)")
	require.NoError(t, os.MkdirAll("/run/sshd", 0o755), "sshd privilege separation directory")

	s := &sshd{dir: t.TempDir(), port: freePort(t)}
	if hostKey == "" {
		hostKey = filepath.Join(s.dir, "host_key")
		keygen(t, hostKey)
	}
	s.userKey = filepath.Join(s.dir, "user_key")
	keygen(t, s.userKey)
	pub, err := os.ReadFile(s.userKey + ".pub")
	require.NoError(t, err)
	for _, u := range authorized {
		require.NoError(t, os.WriteFile(filepath.Join(s.dir, "authorized_keys_"+u), pub, 0o644))
	}
	cfg := filepath.Join(s.dir, "sshd_config")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s/authorized_keys_%%u
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
# bash sources ~/.bashrc for a command sshd runs unless SHLVL says it is
# not the top shell: this machine's root dotfiles (1 s here) stay out.
SetEnv SHLVL=1
`, hostKey, s.dir)), 0o600))
	// The test's directory must be traversable by the throwaway user.
	require.NoError(t, os.Chmod(s.dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(s.dir), 0o755))

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-D", "-e", "-f", cfg, "-p", strconv.Itoa(s.port))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sshd log:\n%s", logs.String())
		}
	})
	// Wait until sshd listens (it exits on a bad config: report that).
	exited := make(chan struct{})
	go func() { _, _ = cmd.Process.Wait(); close(exited) }()
	for {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)))
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("sshd exited: %s", logs.String())
		default:
		}
	}
	return s
}

func (s *sshd) config(u, knownHosts string) node.SSHConfig {
	return node.SSHConfig{Host: "127.0.0.1", Port: s.port, User: u, KeyPath: s.userKey, KnownHostsPath: knownHosts}
}

func exerciseNode(t *testing.T, n node.Node) {
	t.Helper()
	ctx := context.Background()

	var out, errb bytes.Buffer
	code, err := n.Run(ctx, `id -u; for i in 1 2 3; do echo line $i; done; echo oops >&2; exit 3`, nil, &out, &errb)
	require.NoError(t, err)
	assert.Equal(t, 3, code, "exit code comes back")
	assert.Equal(t, "0\nline 1\nline 2\nline 3\n", out.String(), "runs as root, output streamed")
	assert.Equal(t, "oops\n", errb.String())

	out.Reset()
	code, err = n.Run(ctx, "cat; echo", strings.NewReader("from stdin"), &out, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, "from stdin\n", out.String())

	dir := t.TempDir()
	p := filepath.Join(dir, "sub dir", "secret's.txt")
	require.NoError(t, n.WriteFile(ctx, p, []byte("top\nsecret\n"), 0o600))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	assert.EqualValues(t, 0, fi.Sys().(*syscall.Stat_t).Uid, "written as root")

	data, err := n.ReadFile(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, "top\nsecret\n", string(data))

	info, err := n.Stat(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, node.FileInfo{Mode: 0o600, Size: 11}, info)
	info, err = n.Stat(ctx, filepath.Dir(p))
	require.NoError(t, err)
	assert.True(t, info.IsDir)

	_, err = n.Stat(ctx, filepath.Join(dir, "nope"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = n.ReadFile(ctx, filepath.Join(dir, "nope"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestSSHNodeAsRoot(t *testing.T) {
	t.Parallel()
	s := startSSHD(t, "", "root")
	kh := filepath.Join(t.TempDir(), "known_hosts")
	n, err := node.DialSSH(context.Background(), s.config("root", kh))
	require.NoError(t, err)
	defer n.Close()
	assert.Equal(t, "root@127.0.0.1:"+strconv.Itoa(s.port), n.String())
	exerciseNode(t, n)
	sh := n.OneShell()
	defer sh.Close()
	exerciseNode(t, sh)
}

func TestSSHNodeWithSudo(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("sudo")
	require.NoError(t, err, "sudo is needed for the sudo path: apt-get install -y sudo")
	_, err = exec.LookPath("useradd")
	require.NoError(t, err, "useradd is needed: apt-get install -y passwd")
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "bltest" + hex.EncodeToString(b)
	// Password "*": no password works, but the account is not locked (sshd
	// refuses locked accounts even for keys).
	out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/bash", "--password", "*", name).CombinedOutput()
	require.NoError(t, err, "useradd: %s", out)
	sudoers := "/etc/sudoers.d/" + name
	t.Cleanup(func() {
		_ = os.Remove(sudoers)
		if out, err := exec.Command("userdel", "--remove", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
	})
	require.NoError(t, os.WriteFile(sudoers, []byte(name+" ALL=(ALL) NOPASSWD: ALL\n"), 0o440))

	s := startSSHD(t, "", name)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	n, err := node.DialSSH(context.Background(), s.config(name, kh))
	require.NoError(t, err)
	defer n.Close()

	// The user logs in as itself; its commands run as root...
	var plain bytes.Buffer
	code, err := n.Run(context.Background(), "id -un", nil, &plain, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, "root\n", plain.String(), "commands of a non-root user go through sudo")
	exerciseNode(t, n)
	sh := n.OneShell()
	defer sh.Close()
	plain.Reset()
	_, err = sh.Run(context.Background(), "id -un", nil, &plain, nil)
	require.NoError(t, err)
	assert.Equal(t, "root\n", plain.String(), "the one shell is root's too")
	exerciseNode(t, sh)

	// ...and a user without sudo rights gets sudo's refusal as a failure.
	require.NoError(t, os.Remove(sudoers))
	var errb bytes.Buffer
	code, err = n.Run(context.Background(), "true", nil, nil, &errb)
	require.NoError(t, err)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errb.String(), "sudo")
	// A shell that sudo refuses runs each command apart: the same refusal.
	refused := n.OneShell()
	defer refused.Close()
	errb.Reset()
	code, err = refused.Run(context.Background(), "true", nil, nil, &errb)
	require.NoError(t, err)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errb.String(), "sudo")
}

func TestSSHHostKeyTrustOnFirstUseThenRefuseMismatch(t *testing.T) {
	t.Parallel()
	s := startSSHD(t, "", "root")
	kh := filepath.Join(t.TempDir(), "lab", "ssh", "known_hosts")

	n, err := node.DialSSH(context.Background(), s.config("root", kh))
	require.NoError(t, err, "unknown key is trusted on first use")
	n.Close()
	data, err := os.ReadFile(kh)
	require.NoError(t, err)
	assert.Contains(t, string(data), fmt.Sprintf("[127.0.0.1]:%d ssh-ed25519 ", s.port), "and recorded")
	fi, err := os.Stat(kh)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())

	n, err = node.DialSSH(context.Background(), s.config("root", kh))
	require.NoError(t, err, "the recorded key is accepted")
	n.Close()
	again, err := os.ReadFile(kh)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again), "a known key is not recorded twice")

	// A rebuilt node on the same address has a new host key: refused.
	other := startSSHD(t, "", "root")
	cfg := other.config("root", kh)
	// Pretend the rebuilt node answers at the recorded address.
	require.NoError(t, os.WriteFile(kh, []byte(strings.Replace(string(data), fmt.Sprintf("]:%d ", s.port), fmt.Sprintf("]:%d ", other.port), 1)), 0o600))
	_, err = node.DialSSH(context.Background(), cfg)
	require.Error(t, err)
	var mm *node.HostKeyMismatchError
	require.True(t, errors.As(err, &mm), "%v", err)
	assert.Contains(t, err.Error(), "refusing to connect")
	assert.Contains(t, err.Error(), "ssh-keygen -R")
}

// TestLocalNode: bootlab running on the node itself (root, or sudo -n).
func TestLocalNode(t *testing.T) {
	t.Parallel()
	n := node.NewLocal()
	assert.Equal(t, "localhost", n.String())
	exerciseNode(t, n)
}
