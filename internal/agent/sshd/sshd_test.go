package sshd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/bootlab/bootlab/internal/node"
)

// testKeyPEM makes an OpenSSH ed25519 private key.
func testKeyPEM(t *testing.T) ([]byte, ssh.Signer) {
	t.Helper()
	_, sk, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(sk, "test")
	require.NoError(t, err)
	data := pem.EncodeToMemory(block)
	signer, err := ssh.ParsePrivateKey(data)
	require.NoError(t, err)
	return data, signer
}

// startTestSSHD serves the agent's SSH server on loopback and returns its
// address, the client key file and the host key.
func startTestSSHD(t *testing.T) (addr, keyFile string, hostKey ssh.PublicKey) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed: apt-get install -y bash")
	}
	hostPEM, hostSigner := testKeyPEM(t)
	clientPEM, clientSigner := testKeyPEM(t)
	keyFile = filepath.Join(t.TempDir(), "id_ed25519")
	require.NoError(t, os.WriteFile(keyFile, clientPEM, 0o600))
	srv, err := New(hostPEM, []string{string(ssh.MarshalAuthorizedKey(clientSigner.PublicKey()))}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv.shell, _ = exec.LookPath("bash")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), keyFile, hostSigner.PublicKey()
}

// The stage transport (node.DialSSH, as root) runs commands with real
// bash and gets stdout, stderr, stdin and the exit status; the host key is
// recorded on first use (in a known_hosts file of its own, as a lab's) and
// accepted again.
func TestSSHDServesTheStageTransport(t *testing.T) {
	t.Parallel()
	addr, keyFile, hostKey := startTestSSHD(t)
	host, port, _ := net.SplitHostPort(addr)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		n, err := node.DialSSH(ctx, node.SSHConfig{Host: host, Port: p, User: "root", KeyPath: keyFile, KnownHostsPath: kh, OwnKnownHosts: true})
		require.NoError(t, err)
		var out, errb bytes.Buffer
		code, err := n.Run(ctx, `read -r line; echo "out $line"; echo err >&2; exit 3`, strings.NewReader("hello\n"), &out, &errb)
		require.NoError(t, err)
		assert.Equal(t, 3, code)
		assert.Equal(t, "out hello\n", out.String())
		assert.Equal(t, "err\n", errb.String())
		require.NoError(t, n.WriteFile(ctx, filepath.Join(t.TempDir(), "a", "f"), []byte("x"), 0o600))
		require.NoError(t, n.Close())
	}
	data, err := os.ReadFile(kh)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(data), "\n"), "one host key recorded")
	assert.Contains(t, string(data), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hostKey))))
}

func dialRaw(t *testing.T, addr, user, keyFile string) *ssh.Client {
	t.Helper()
	data, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	signer, err := ssh.ParsePrivateKey(data)
	require.NoError(t, err)
	c, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// core logs in as uid 1000; an unknown user or key is refused.
func TestSSHDUsers(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("the server switches to core's uid: run the tests as root")
	}
	addr, keyFile, _ := startTestSSHD(t)
	c := dialRaw(t, addr, "core", keyFile)
	s, err := c.NewSession()
	require.NoError(t, err)
	out, err := s.Output("id -u; echo $USER $HOME")
	require.NoError(t, err)
	assert.Equal(t, "1000\ncore /var/home/core\n", string(out))

	_, other := testKeyPEM(t)
	_, err = ssh.Dial("tcp", addr, &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(other)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 5 * time.Second})
	require.Error(t, err, "a key that is not the lab's is refused")
	data, _ := os.ReadFile(keyFile)
	signer, _ := ssh.ParsePrivateKey(data)
	_, err = ssh.Dial("tcp", addr, &ssh.ClientConfig{User: "admin", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 5 * time.Second})
	require.Error(t, err, "only root and core")
}

// A PTY session runs an interactive login bash on a terminal of the
// requested size; a signal request reaches the running command.
func TestSSHDPTYAndSignal(t *testing.T) {
	t.Parallel()
	addr, keyFile, _ := startTestSSHD(t)
	c := dialRaw(t, addr, "root", keyFile)
	s, err := c.NewSession()
	require.NoError(t, err)
	require.NoError(t, s.RequestPty("xterm", 40, 100, ssh.TerminalModes{}))
	stdin, err := s.StdinPipe()
	require.NoError(t, err)
	var out bytes.Buffer
	s.Stdout = &out
	require.NoError(t, s.Shell())
	_, _ = io.WriteString(stdin, "tty; stty size; echo TERM=$TERM; exit 7\n")
	err = s.Wait()
	var ee *ssh.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 7, ee.ExitStatus())
	assert.Contains(t, out.String(), "/dev/pts/")
	assert.Contains(t, out.String(), "40 100")
	assert.Contains(t, out.String(), "TERM=xterm")

	s2, err := c.NewSession()
	require.NoError(t, err)
	require.NoError(t, s2.Start("sleep 30; echo not reached"))
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	require.NoError(t, s2.Signal(ssh.SIGTERM))
	err = s2.Wait()
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 128+15, ee.ExitStatus(), "killed by SIGTERM, reported as sshd does")
	assert.Less(t, time.Since(start), 20*time.Second)
}
