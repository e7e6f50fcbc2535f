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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/sshc/sshctest"
)

// sshd is a real OpenSSH server on loopback, run by the test.
type sshd struct{ *sshctest.SSHD }

// startSSHD starts the tests' sshd; the users listed log in with its
// client key.
func startSSHD(t *testing.T, users ...string) sshd {
	t.Helper()
	return sshd{sshctest.StartOpenSSHD(t, users...)}
}

func (s sshd) config(u, knownHosts string) node.SSHConfig {
	return node.SSHConfig{Host: "127.0.0.1", Port: s.Port, User: u, KeyPath: s.KeyFile, KnownHostsPath: knownHosts, OwnKnownHosts: true}
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
	s := startSSHD(t, "root")
	kh := filepath.Join(t.TempDir(), "known_hosts")
	n, err := node.DialSSH(context.Background(), s.config("root", kh))
	require.NoError(t, err)
	defer n.Close()
	assert.Equal(t, "root@127.0.0.1:"+strconv.Itoa(s.Port), n.String())
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
		// sshd's session processes of the user were killed with it (the
		// cleanup before this one) and may not have exited yet: userdel
		// refuses a user with a process (exit 8).
		var out []byte
		var err error
		for range 50 {
			out, err = exec.Command("userdel", "--remove", name).CombinedOutput()
			var ee *exec.ExitError
			if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 8 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
	})
	require.NoError(t, os.WriteFile(sudoers, []byte(name+" ALL=(ALL) NOPASSWD: ALL\n"), 0o440))

	s := startSSHD(t, name)
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
	s := startSSHD(t, "root")
	kh := filepath.Join(t.TempDir(), "lab", "ssh", "known_hosts")

	n, err := node.DialSSH(context.Background(), s.config("root", kh))
	require.NoError(t, err, "unknown key is trusted on first use")
	n.Close()
	data, err := os.ReadFile(kh)
	require.NoError(t, err)
	assert.Contains(t, string(data), fmt.Sprintf("[127.0.0.1]:%d ssh-ed25519 ", s.Port), "and recorded")
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
	other := startSSHD(t, "root")
	cfg := other.config("root", kh)
	// Pretend the rebuilt node answers at the recorded address.
	require.NoError(t, os.WriteFile(kh, []byte(strings.Replace(string(data), fmt.Sprintf("]:%d ", s.Port), fmt.Sprintf("]:%d ", other.Port), 1)), 0o600))
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
