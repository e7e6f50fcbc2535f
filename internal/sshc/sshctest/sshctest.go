// Package sshctest is an in-process SSH server for tests of code that
// dials through internal/sshc: it authenticates one client key, runs exec
// requests with the local sh (as sshd does with a login shell), and serves
// direct-tcpip and direct-streamlocal channels (tunnels to TCP ports and
// unix sockets of this machine). It stands in for a remote host in unit
// tests; integration tests use a real sshd.
package sshctest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Server is a running test SSH server.
type Server struct {
	// Addr is host:port on loopback; Host and Port are its parts.
	Addr string
	Host string
	Port int
	// Any login name is accepted; commands run as the test's own user.
	// KeyFile is the client's private key (OpenSSH PEM, 0600).
	KeyFile string
	// HostKey is the server's public host key.
	HostKey ssh.PublicKey

	conns    atomic.Int64
	globals  atomic.Int64
	mu       sync.Mutex
	commands []string
	dials    []string
}

// LibvirtURI is a qemu+ssh libvirt URI that reaches this server as root
// with its key, recording its host key in knownHosts (a fresh file under
// t's temporary directory when ""). A known_hosts file the URI names must
// exist, as a user's must: a missing knownHosts is made, empty.
func (s *Server) LibvirtURI(t testing.TB, knownHosts string) string {
	t.Helper()
	if knownHosts == "" {
		knownHosts = KnownHosts(t)
	} else if _, err := os.Stat(knownHosts); os.IsNotExist(err) {
		if err := os.WriteFile(knownHosts, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("qemu+ssh://root@%s/system?keyfile=%s&known_hosts=%s", s.Addr, s.KeyFile, knownHosts)
}

// KnownHosts is a new, empty known_hosts file under t's temporary
// directory: what a user names in ?known_hosts= (bootlab makes only its
// labs' own known_hosts files).
func KnownHosts(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Conns counts the SSH connections accepted so far.
func (s *Server) Conns() int { return int(s.conns.Load()) }

// GlobalRequests counts the connection-level requests (keepalives) received.
func (s *Server) GlobalRequests() int { return int(s.globals.Load()) }

// Commands lists the exec requests received, in order.
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.commands...)
}

// Dials lists the tunnels opened ("tcp host:port" or "unix path").
func (s *Server) Dials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.dials...)
}

// Key makes an ed25519 key and returns its OpenSSH PEM and signer.
func Key(t testing.TB) ([]byte, ssh.Signer) {
	t.Helper()
	_, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(sk, "test")
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(block)
	signer, err := ssh.ParsePrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return data, signer
}

// Start serves on a free loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed: apt-get install -y bash")
	}
	_, hostSigner := Key(t)
	clientPEM, clientSigner := Key(t)
	keyFile := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(keyFile, clientPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	want := clientSigner.PublicKey().Marshal()
	conf := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if string(key.Marshal()) == string(want) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	conf.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, KeyFile: keyFile, HostKey: hostSigner.PublicKey()}
	var wg sync.WaitGroup
	var open sync.Map
	t.Cleanup(func() {
		ln.Close()
		open.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			open.Store(nc, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer open.Delete(nc)
				s.serve(nc, conf)
			}()
		}
	}()
	return s
}

func (s *Server) serve(nc net.Conn, conf *ssh.ServerConfig) {
	defer nc.Close()
	_, chans, reqs, err := ssh.NewServerConn(nc, conf)
	if err != nil {
		return
	}
	s.conns.Add(1)
	go func() {
		for req := range reqs {
			s.globals.Add(1)
			if req.WantReply {
				_ = req.Reply(false, nil) // as OpenSSH answers an unknown request
			}
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for nch := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch nch.ChannelType() {
			case "session":
				s.session(nch)
			case "direct-tcpip":
				var p struct {
					Host     string
					Port     uint32
					OrigHost string
					OrigPort uint32
				}
				if err := ssh.Unmarshal(nch.ExtraData(), &p); err != nil {
					_ = nch.Reject(ssh.ConnectionFailed, err.Error())
					return
				}
				s.forward(nch, "tcp", net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port))))
			case "direct-streamlocal@openssh.com":
				var p struct {
					Path     string
					Reserved string
					Port     uint32
				}
				if err := ssh.Unmarshal(nch.ExtraData(), &p); err != nil {
					_ = nch.Reject(ssh.ConnectionFailed, err.Error())
					return
				}
				s.forward(nch, "unix", p.Path)
			default:
				_ = nch.Reject(ssh.UnknownChannelType, "unsupported")
			}
		}()
	}
}

func (s *Server) forward(nch ssh.NewChannel, network, addr string) {
	s.mu.Lock()
	s.dials = append(s.dials, network+" "+addr)
	s.mu.Unlock()
	c, err := net.Dial(network, addr)
	if err != nil {
		_ = nch.Reject(ssh.ConnectionFailed, err.Error())
		return
	}
	defer c.Close()
	ch, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	go ssh.DiscardRequests(reqs)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(c, ch); closeWrite(c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(ch, c); _ = ch.CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

func (s *Server) session(nch ssh.NewChannel) {
	ch, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	var cmd *exec.Cmd
	done := make(chan uint32, 1)
	for {
		select {
		case status := <-done:
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
			return
		case req, ok := <-reqs:
			if !ok { // the client closed the session: end the command
				if cmd != nil {
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					<-done
				}
				return
			}
			switch {
			case req.Type == "exec" && cmd == nil:
				var p struct{ Command string }
				if err := ssh.Unmarshal(req.Payload, &p); err != nil {
					_ = req.Reply(false, nil)
					continue
				}
				s.mu.Lock()
				s.commands = append(s.commands, p.Command)
				s.mu.Unlock()
				cmd = exec.Command("sh", "-c", p.Command)
				stdin, err := cmd.StdinPipe()
				if err != nil {
					_ = req.Reply(false, nil)
					return
				}
				cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := cmd.Start(); err != nil {
					_ = req.Reply(false, nil)
					return
				}
				_ = req.Reply(true, nil)
				go func() { _, _ = io.Copy(stdin, ch); stdin.Close() }()
				go func() { done <- waitStatus(cmd.Wait()) }()
			case req.Type == "signal" && cmd != nil:
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			default:
				if req.WantReply {
					_ = req.Reply(false, nil)
				}
			}
		}
	}
}

func waitStatus(err error) uint32 {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + uint32(st.Signal())
		}
		return uint32(ee.ExitCode())
	}
	return 0
}
