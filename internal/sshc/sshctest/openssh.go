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
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	if _, err := os.Stat(sshd); err != nil {
		t.Fatal("sshd not found: apt-get install -y openssh-server")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll("/run/sshd", 0o755)) // privilege separation directory
	dir := t.TempDir()
	writeKey := func(name string) ssh.PublicKey {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		must(err)
		block, err := ssh.MarshalPrivateKey(priv, name)
		must(err)
		must(os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600))
		sp, err := ssh.NewPublicKey(pub)
		must(err)
		return sp
	}
	writeKey("host")
	must(os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(writeKey("client")), 0o600))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	port = l.Addr().(*net.TCPAddr).Port
	must(l.Close())
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
AllowStreamLocalForwarding yes
# bash sources ~/.bashrc for a command sshd runs unless SHLVL says it
# is not the top shell: this machine's root dotfiles stay out of the test.
SetEnv SHLVL=1
`, port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"))
	cfgFile := filepath.Join(dir, "sshd_config")
	must(os.WriteFile(cfgFile, []byte(cfg), 0o600))
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfgFile)
	logFile, err := os.Create(filepath.Join(dir, "sshd.log"))
	must(err)
	defer logFile.Close()
	cmd.Stderr = logFile
	// Its own process group, so cleanup also ends the per-connection children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
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
			return port, filepath.Join(dir, "client")
		}
	}
}
