package sshd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/crypto/ssh"

	"github.com/bootlab/bootlab/internal/rhcos"
)

// Server serves SSH connections until its listener closes.
type Server struct {
	log    *slog.Logger
	config *ssh.ServerConfig
	shell  string // bash
}

// New makes a server with the host key (an OpenSSH private key) that
// accepts the authorized keys (authorized_keys lines) for every login
// account of the node (rhcos.LookupUser).
func New(hostKeyPEM []byte, authorized []string, log *slog.Logger) (*Server, error) {
	signer, err := ssh.ParsePrivateKey(hostKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	keys := map[string]bool{}
	for _, line := range authorized {
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("authorized key %q: %w", line, err)
		}
		keys[string(k.Marshal())] = true
	}
	if len(keys) == 0 {
		return nil, errors.New("no authorized keys: nobody could log in")
	}
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(md ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if _, ok := rhcos.LookupUser(md.User()); !ok {
				return nil, fmt.Errorf("no user %q (users: root, core)", md.User())
			}
			if !keys[string(key.Marshal())] {
				return nil, fmt.Errorf("key %s is not authorized for %s", ssh.FingerprintSHA256(key), md.User())
			}
			return &ssh.Permissions{Extensions: map[string]string{"pubkey-fp": ssh.FingerprintSHA256(key)}}, nil
		},
		ServerVersion: "SSH-2.0-bootlab-probe",
	}
	cfg.AddHostKey(signer)
	return &Server{log: log, config: cfg, shell: "/bin/bash"}, nil
}

// Serve accepts connections on ln until it is closed.
func (s *Server) Serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go s.handleConn(c)
	}
}

func (s *Server) handleConn(nc net.Conn) {
	defer nc.Close()
	conn, chans, reqs, err := ssh.NewServerConn(nc, s.config)
	if err != nil {
		s.log.Debug("ssh handshake failed", "remote", nc.RemoteAddr(), "err", err)
		return
	}
	defer conn.Close()
	u, _ := rhcos.LookupUser(conn.User())
	s.log.Info("ssh login", "user", u.Name, "remote", nc.RemoteAddr(), "key", conn.Permissions.Extensions["pubkey-fp"])
	go ssh.DiscardRequests(reqs)
	for nch := range chans {
		if nch.ChannelType() != "session" {
			_ = nch.Reject(ssh.UnknownChannelType, "only session channels are served")
			continue
		}
		ch, creqs, err := nch.Accept()
		if err != nil {
			continue
		}
		go s.session(u, ch, creqs)
	}
}

// session is one SSH session: env, pty-req and window-change requests,
// then one exec or shell; signal requests reach the process group.
func (s *Server) session(u rhcos.User, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	ss := &sessionState{srv: s, u: u, ch: ch, done: make(chan struct{}, 1)}
	for req := range reqs {
		ok := ss.handle(req)
		if req.WantReply {
			_ = req.Reply(ok, nil)
		}
	}
}

// sessionState is what one session has asked for (environment, PTY) and
// the process it started.
type sessionState struct {
	srv *Server
	u   rhcos.User
	ch  ssh.Channel

	env     []string
	ptyReq  *ptyRequest
	started bool
	done    chan struct{}

	mu      sync.Mutex // guards proc and ptyFile, which the waiter reads
	proc    *os.Process
	ptyFile *os.File
}

// handle answers one session request; false refuses it.
func (ss *sessionState) handle(req *ssh.Request) bool {
	switch req.Type {
	case "env":
		var kv struct{ Name, Value string }
		if ssh.Unmarshal(req.Payload, &kv) == nil && acceptEnv(kv.Name) {
			ss.env = append(ss.env, kv.Name+"="+kv.Value)
			return true
		}
	case "pty-req":
		if p, err := parsePtyRequest(req.Payload); err == nil && !ss.started {
			ss.ptyReq = p
			return true
		}
	case "window-change":
		var wc struct{ Cols, Rows, W, H uint32 }
		if ssh.Unmarshal(req.Payload, &wc) == nil {
			ss.mu.Lock()
			if ss.ptyFile != nil {
				_ = pty.Setsize(ss.ptyFile, &pty.Winsize{Cols: uint16(wc.Cols), Rows: uint16(wc.Rows)})
			}
			ss.mu.Unlock()
			return true
		}
	case "signal":
		var sig struct{ Name string }
		if ssh.Unmarshal(req.Payload, &sig) == nil {
			return ss.signal(ssh.Signal(sig.Name))
		}
	case "exec", "shell":
		return ss.start(req)
	}
	return false
}

// signal sends sig to the session's process group: bash -c and what it
// started.
func (ss *sessionState) signal(sig ssh.Signal) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.proc == nil {
		return false
	}
	n, known := signalOf(sig)
	if known {
		_ = syscall.Kill(-ss.proc.Pid, n)
	}
	return known
}

// start runs the session's one command (exec) or login shell (shell), on
// a PTY when one was asked for, and reports its exit status when it ends.
func (ss *sessionState) start(req *ssh.Request) bool {
	if ss.started {
		return false
	}
	var command string
	if req.Type == "exec" {
		var ex struct{ Command string }
		if ssh.Unmarshal(req.Payload, &ex) != nil {
			return false
		}
		command = ex.Command
	}
	cmd := ss.srv.command(ss.u, command, ss.env, ss.ptyReq)
	var err error
	if ss.ptyReq != nil {
		err = ss.startPTY(cmd)
	} else {
		err = ss.srv.startPiped(cmd, ss.ch)
		if err == nil {
			ss.mu.Lock()
			ss.proc = cmd.Process
			ss.mu.Unlock()
			ss.done <- struct{}{}
		}
	}
	if err != nil {
		fmt.Fprintf(ss.ch.Stderr(), "bootlab-probe sshd: %v\n", err)
		return false
	}
	ss.started = true
	go ss.wait(cmd)
	ss.srv.log.Debug("ssh session", "user", ss.u.Name, "type", req.Type, "command", command, "pty", ss.ptyReq != nil)
	return true
}

// startPTY starts cmd on a new PTY and copies between it and the channel.
func (ss *sessionState) startPTY(cmd *exec.Cmd) error {
	f, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: uint16(ss.ptyReq.cols), Rows: uint16(ss.ptyReq.rows)}, cmd.SysProcAttr)
	if err != nil {
		return err
	}
	ss.mu.Lock()
	ss.ptyFile, ss.proc = f, cmd.Process
	ss.mu.Unlock()
	go func() { _, _ = io.Copy(f, ss.ch) }()
	go func() {
		_, _ = io.Copy(ss.ch, f) // ends with EIO when the shell exits
		ss.done <- struct{}{}
	}()
	return nil
}

// wait sends the process's exit status once its output is done, and
// closes the channel.
func (ss *sessionState) wait(cmd *exec.Cmd) {
	<-ss.done
	status := waitStatus(cmd)
	ss.mu.Lock()
	if ss.ptyFile != nil {
		ss.ptyFile.Close()
	}
	ss.mu.Unlock()
	_, _ = ss.ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
	_ = ss.ch.CloseWrite()
	ss.ch.Close()
}

// command builds the process of a session: bash -c COMMAND for exec, a
// login bash for shell, as the user, in their home, in a new process group
// (a new session on a PTY) so a signal reaches everything it started.
func (s *Server) command(u rhcos.User, command string, env []string, p *ptyRequest) *exec.Cmd {
	var cmd *exec.Cmd
	if command != "" {
		cmd = exec.Command(s.shell, "-c", command)
	} else {
		cmd = exec.Command(s.shell, "-l")
		cmd.Args[0] = "-bash" // a login shell reads /etc/profile, as sshd starts it
	}
	cmd.Dir = u.Home
	if _, err := os.Stat(u.Home); err != nil {
		cmd.Dir = "/"
	}
	cmd.Env = append([]string{
		"HOME=" + u.Home, "USER=" + u.Name, "LOGNAME=" + u.Name, "SHELL=" + s.shell, "PATH=" + rhcos.DefaultPath,
	}, env...)
	attr := &syscall.SysProcAttr{}
	if p != nil {
		cmd.Env = append(cmd.Env, "TERM="+p.term)
		attr.Setsid, attr.Setctty = true, true
	} else {
		attr.Setpgid = true
	}
	if u.UID != 0 {
		attr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{10}}
	}
	cmd.SysProcAttr = attr
	return cmd
}

// startPiped starts cmd with stdin, stdout and stderr on the channel and
// waits for it and its output. Standard input is copied on its own: a
// client that never sends EOF must not keep the session open.
func (s *Server) startPiped(cmd *exec.Cmd, ch ssh.Channel) error {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		_, _ = io.Copy(stdin, ch)
		stdin.Close()
	}()
	return nil
}

// waitStatus waits for cmd and returns its exit status the way sshd
// reports it (128+n for a signal).
func waitStatus(cmd *exec.Cmd) uint32 {
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + uint32(ws.Signal())
		}
		return uint32(ee.ExitCode())
	}
	if err != nil {
		return 255
	}
	return 0
}

// acceptEnv is RHCOS sshd's AcceptEnv: locale and terminal settings only.
func acceptEnv(name string) bool {
	return name == "LANG" || name == "LANGUAGE" || name == "TERM" || name == "COLORTERM" || strings.HasPrefix(name, "LC_")
}

// signalOf maps an RFC 4254 signal name to the process signal.
func signalOf(name ssh.Signal) (syscall.Signal, bool) {
	n, ok := map[ssh.Signal]syscall.Signal{
		ssh.SIGABRT: syscall.SIGABRT, ssh.SIGALRM: syscall.SIGALRM, ssh.SIGFPE: syscall.SIGFPE, ssh.SIGHUP: syscall.SIGHUP,
		ssh.SIGILL: syscall.SIGILL, ssh.SIGINT: syscall.SIGINT, ssh.SIGKILL: syscall.SIGKILL, ssh.SIGPIPE: syscall.SIGPIPE,
		ssh.SIGQUIT: syscall.SIGQUIT, ssh.SIGSEGV: syscall.SIGSEGV, ssh.SIGTERM: syscall.SIGTERM, ssh.SIGUSR1: syscall.SIGUSR1,
		ssh.SIGUSR2: syscall.SIGUSR2,
	}[name]
	return n, ok
}

type ptyRequest struct {
	term       string
	cols, rows uint32
}

// parsePtyRequest reads RFC 4254 6.2: TERM, columns, rows, pixel width and
// height, encoded modes (ignored: the PTY keeps its defaults).
func parsePtyRequest(b []byte) (*ptyRequest, error) {
	var p struct {
		Term                      string
		Cols, Rows, Width, Height uint32
		Modes                     string
	}
	if err := ssh.Unmarshal(b, &p); err != nil {
		// Some clients send no modes string at all.
		r := bytes.NewReader(b)
		var n uint32
		if binary.Read(r, binary.BigEndian, &n) != nil || int(n) > r.Len() {
			return nil, err
		}
		term := make([]byte, n)
		_, _ = r.Read(term)
		var cr [2]uint32
		if binary.Read(r, binary.BigEndian, &cr) != nil {
			return nil, err
		}
		return &ptyRequest{term: string(term), cols: cr[0], rows: cr[1]}, nil
	}
	if p.Term == "" {
		p.Term = "vt100"
	}
	return &ptyRequest{term: p.Term, cols: p.Cols, rows: p.Rows}, nil
}
