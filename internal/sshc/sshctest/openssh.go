package sshctest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// OpenSSHD runs a private OpenSSH sshd (the real one, not Start's
// in-process stand-in) on a free loopback port. It accepts root with a
// fresh ed25519 key by key only, and allows stream-local forwarding, so a
// qemu+ssh URI reaches libvirt's socket through it. It returns the port
// and the client's private key file; the test's cleanup stops sshd and its
// per-connection children.
func OpenSSHD(t testing.TB) (port int, keyFile string) {
	t.Helper()
	s := StartOpenSSHD(t)
	return s.Port, s.KeyFile
}

// SSHD is a private OpenSSH sshd a test started (StartOpenSSHD).
type SSHD struct {
	// Port is where it listens on 127.0.0.1.
	Port int
	// KeyFile is the client's private key, which logs in as each user.
	KeyFile string
}

// StartOpenSSHD is OpenSSHD for the users named (root when none): the
// client's key logs in as each of them, by key only. The one sshd
// configuration of the tests: every test logging in to this machine
// gets the same settings, ~/.bashrc kept out among them.
func StartOpenSSHD(t testing.TB, users ...string) *SSHD {
	t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	if _, err := os.Stat(sshd); err != nil {
		t.Fatal("sshd not found: apt-get install -y openssh-server")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the test runs sshd, which needs root: run it as root (make test)")
	}
	if len(users) == 0 {
		users = []string{"root"}
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // privilege separation directory
		t.Fatal(err)
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cfgFile, err := writeSSHDFiles(dir, port, users)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfgFile)
	logFile, err := os.Create(filepath.Join(dir, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logFile
	// Its own process group, so cleanup also ends the per-connection children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("sshd log:\n%s", b)
		}
	})
	// Ready when it accepts connections (or failed when it exits).
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(logFile.Name())
			t.Fatalf("sshd exited: %s", b)
		default:
		}
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return &SSHD{Port: port, KeyFile: filepath.Join(dir, "client")}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// writeSSHDFiles writes into dir a host key, the client's key pair
// (authorized for each user) and the sshd configuration, whose path it
// returns.
func writeSSHDFiles(dir string, port int, users []string) (string, error) {
	writeKey := func(name string) (ssh.PublicKey, error) {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		block, err := ssh.MarshalPrivateKey(priv, name)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			return nil, err
		}
		return ssh.NewPublicKey(pub)
	}
	if _, err := writeKey("host"); err != nil {
		return "", err
	}
	client, err := writeKey("client")
	if err != nil {
		return "", err
	}
	for _, u := range users {
		// sshd reads it as the user: readable, in a directory the user
		// can reach.
		if err := os.WriteFile(filepath.Join(dir, "authorized_keys_"+u), ssh.MarshalAuthorizedKey(client), 0o644); err != nil {
			return "", err
		}
		if u == "root" {
			continue
		}
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if err := os.Chmod(d, 0o755); err != nil {
				return "", err
			}
		}
	}
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s/authorized_keys_%%u
PidFile none
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
AllowStreamLocalForwarding yes
# bash sources ~/.bashrc for a command sshd runs unless SHLVL says it
# is not the top shell: this machine's root dotfiles stay out of the test.
SetEnv SHLVL=1
`, port, filepath.Join(dir, "host"), dir)
	cfgFile := filepath.Join(dir, "sshd_config")
	return cfgFile, os.WriteFile(cfgFile, []byte(cfg), 0o600)
}
