package sshc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/bootlab/bootlab/internal/userfile"
)

// Config says how to reach a host over SSH.
type Config struct {
	// Host is an address or name; Port defaults to 22.
	Host string
	Port int
	// User is the login name (required).
	User string
	// KeyFiles are private keys tried in order; missing files are an
	// error. With none, the user's ~/.ssh/id_* keys are tried.
	KeyFiles []string
	// Agent also offers the keys of the ssh-agent at $SSH_AUTH_SOCK.
	Agent bool
	// KnownHosts records host keys, trusted on first use (TrustOnFirstUse).
	// It must be a regular file that exists, unless OwnKnownHosts.
	KnownHosts string
	// OwnKnownHosts says KnownHosts is bootlab's own (a lab's
	// ssh/known_hosts): it is made, with its directory, when missing.
	OwnKnownHosts bool
	// InsecureIgnoreHostKey accepts any host key and records none
	// (libvirt's no_verify=1). Only for throwaway test hosts.
	InsecureIgnoreHostKey bool
	// Sudo runs every command through `sudo -n` when User is not root
	// (RHCOS's core user may sudo without a password).
	Sudo bool
	// Via is a connected jump host: the TCP connection to Host is opened
	// through it (OpenSSH's ProxyJump).
	Via *Client
	// Timeout bounds the TCP connect and SSH handshake (default 15s).
	Timeout time.Duration
	// KeepAlive is the period of keepalive@openssh.com requests, which keep
	// an idle connection (a libvirt connection during `lab wait`) open
	// through NAT and firewalls and notice a dead peer. 0 means 30s;
	// negative turns them off.
	KeepAlive time.Duration
	Log       *slog.Logger
}

// Client is one SSH connection. Its methods are safe for concurrent use:
// each command is its own session, each tunnel its own channel.
type Client struct {
	ssh  *ssh.Client
	user string
	addr string
	sudo bool
	log  *slog.Logger
}

// Dial connects and authenticates. A host key mismatch is returned as
// *HostKeyMismatchError.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Host == "" {
		return nil, errors.New("ssh: no host given")
	}
	if cfg.User == "" {
		return nil, fmt.Errorf("ssh %s: no user given", cfg.Host)
	}
	if cfg.Port == 0 {
		cfg.Port = 22
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	// The known_hosts file first: a FIFO or a missing file is refused
	// before any key or agent is looked at.
	var hostKeys ssh.HostKeyCallback
	var err error
	if cfg.InsecureIgnoreHostKey {
		hostKeys = ssh.InsecureIgnoreHostKey() //nolint:gosec // asked for explicitly (no_verify=1)
	} else if hostKeys, err = TrustOnFirstUse(cfg.KnownHosts, cfg.OwnKnownHosts, cfg.Log); err != nil {
		return nil, err
	}
	auth, err := authMethods(cfg)
	if err != nil {
		return nil, err
	}
	conf := &ssh.ClientConfig{User: cfg.User, Auth: auth, HostKeyCallback: hostKeys, Timeout: cfg.Timeout}

	dctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var conn net.Conn
	if cfg.Via != nil {
		conn, err = cfg.Via.DialContext(dctx, "tcp", addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("ssh %s@%s%s: %w", cfg.User, addr, via(cfg.Via), err)
	}
	// The handshake honours ctx as well as the timeout.
	stop := context.AfterFunc(dctx, func() { _ = conn.SetDeadline(time.Now()) })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, conf)
	stopped := stop()
	if err != nil {
		conn.Close()
		var mm *HostKeyMismatchError
		if errors.As(err, &mm) {
			return nil, mm
		}
		if !stopped && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("ssh %s@%s%s: %w", cfg.User, addr, via(cfg.Via), err)
	}
	_ = conn.SetDeadline(time.Time{})
	cl := &Client{ssh: ssh.NewClient(c, chans, reqs), user: cfg.User, addr: addr, sudo: cfg.Sudo && cfg.User != "root", log: cfg.Log}
	cfg.Log.Debug("ssh connected", "host", cl.String()+via(cfg.Via))
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = 30 * time.Second
	}
	if cfg.KeepAlive > 0 {
		go cl.keepAlive(cfg.KeepAlive, cfg.Timeout)
	}
	return cl, nil
}

// keepAlive asks the server for a reply every period until the connection
// ends; a server that does not answer within timeout is taken for dead and
// the connection closed, so every call on it fails instead of hanging.
func (c *Client) keepAlive(period, timeout time.Duration) {
	done := make(chan struct{})
	go func() { _ = c.ssh.Wait(); close(done) }()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		answered := make(chan error, 1)
		go func() {
			_, _, err := c.ssh.SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		select {
		case <-done:
			return
		case err := <-answered:
			if err != nil {
				return
			}
		case <-time.After(timeout):
			c.log.Warn("ssh peer stopped answering: closing the connection", "host", c.String())
			c.ssh.Close()
			return
		}
	}
}

func via(c *Client) string {
	if c == nil {
		return ""
	}
	return " via " + c.String()
}

func authMethods(cfg Config) ([]ssh.AuthMethod, error) {
	files, given := cfg.KeyFiles, len(cfg.KeyFiles) > 0
	if !given {
		files = DefaultKeyFiles()
	}
	var signers []ssh.Signer
	for _, f := range files {
		// A key file (?keyfile= of the libvirt URI) is a user's path:
		// a regular file of a key's size, never a FIFO read forever.
		data, err := userfile.Read(f, userfile.MaxTextBytes)
		if err == nil {
			var s ssh.Signer
			if s, err = ssh.ParsePrivateKey(data); err == nil {
				signers = append(signers, s)
				continue
			}
			err = fmt.Errorf("%w (a passphrase-protected key must be loaded into ssh-agent)", err)
		}
		if given {
			return nil, fmt.Errorf("ssh key %s: %w", f, err)
		}
		// A default key that cannot be used may still be in the agent.
		cfg.Log.Debug("skipping ssh key", "file", f, "err", err)
	}
	if cfg.Agent {
		if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
			if ac, err := net.Dial("unix", sock); err == nil {
				if as, err := agent.NewClient(ac).Signers(); err == nil {
					signers = append(signers, as...)
				}
			}
		}
	}
	if len(signers) == 0 {
		return nil, fmt.Errorf("ssh %s@%s: no private key: give one (libvirt.uri ?keyfile=FILE) or create ~/.ssh/id_ed25519", cfg.User, cfg.Host)
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, nil
}

// String is user@host:port.
func (c *Client) String() string { return c.user + "@" + c.addr }

// User is the login name.
func (c *Client) User() string { return c.user }

// Close ends the connection (and every tunnel through it).
func (c *Client) Close() error { return c.ssh.Close() }

// Wait blocks until the connection ends.
func (c *Client) Wait() error { return c.ssh.Wait() }

// Stream runs cmd with bash on the host (through `sudo -n` when the client
// was configured with Sudo and is not root), wiring stdin, stdout and
// stderr, and returns the exit status. A command killed by a signal
// returns -1 and no error; ctx ending sends SIGTERM and returns ctx.Err().
func (c *Client) Stream(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	sess, err := c.openSession(ctx)
	if err != nil {
		return -1, err
	}
	defer sess.Close()
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	sess.Stdin, sess.Stdout, sess.Stderr = stdin, stdout, stderr
	done := make(chan error, 1)
	go func() { done <- sess.Run(c.commandLine(cmd)) }()
	select {
	case <-ctx.Done():
		_ = sess.Signal(ssh.SIGTERM)
		sess.Close()
		<-done
		return -1, ctx.Err()
	case err = <-done:
	}
	return c.exitStatus(err, firstLine(cmd)+": the command")
}

// commandLine is how cmd runs on the host: bash -c, through `sudo -n`
// when the client was configured so.
func (c *Client) commandLine(cmd string) string {
	line := "bash -c " + Quote(cmd)
	if c.sudo {
		line = "sudo -n " + line
	}
	return line
}

// openSession opens a session apart, as it waits on the peer too: ctx
// ends a call to a host that stopped answering.
func (c *Client) openSession(ctx context.Context) (*ssh.Session, error) {
	type opened struct {
		s   *ssh.Session
		err error
	}
	op := make(chan opened, 1)
	go func() { s, err := c.ssh.NewSession(); op <- opened{s, err} }()
	select {
	case <-ctx.Done():
		go func() {
			if o := <-op; o.s != nil {
				o.s.Close()
			}
		}()
		return nil, ctx.Err()
	case o := <-op:
		if o.err != nil {
			return nil, fmt.Errorf("ssh %s: new session: %w", c, o.err)
		}
		return o.s, nil
	}
}

// exitStatus is the exit code of a finished session: its status, -1 with
// no error when a signal ended it, an error when the connection dropped
// before any status came (what names the command or shell in it).
func (c *Client) exitStatus(err error, what string) (int, error) {
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		if ee.Signal() != "" {
			return -1, nil
		}
		return ee.ExitStatus(), nil
	}
	var me *ssh.ExitMissingError
	if errors.As(err, &me) {
		return -1, fmt.Errorf("ssh %s: %s ended without an exit status (connection lost?)", c, what)
	}
	if err != nil {
		return -1, fmt.Errorf("ssh %s: %w", c, err)
	}
	return 0, nil
}

// Result is what a command printed and how it ended.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// Err is nil for exit code 0, else an error naming the command, the code and
// stderr's last line.
func (r Result) Err(cmd string) error {
	if r.ExitCode == 0 {
		return nil
	}
	msg := strings.TrimSpace(string(r.Stderr))
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	return fmt.Errorf("%s: exit status %d: %s", firstLine(cmd), r.ExitCode, msg)
}

// Run runs cmd (as Stream does) and collects its output.
func (c *Client) Run(ctx context.Context, cmd string) (Result, error) {
	var out, errb bytes.Buffer
	code, err := c.Stream(ctx, cmd, nil, &out, &errb)
	return Result{Stdout: out.Bytes(), Stderr: errb.Bytes(), ExitCode: code}, err
}

// DialContext opens a connection from the host: network "tcp" (also tcp4,
// tcp6) to host:port, or "unix" to a socket path on the host (OpenSSH
// needs AllowStreamLocalForwarding, its default). This is how libvirt's
// socket, the lab's load balancer and DNS, and nodes behind the hypervisor
// are reached.
func (c *Client) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
		conn, err := c.ssh.DialContext(ctx, network, addr)
		if err != nil {
			return nil, fmt.Errorf("dial %s %s through %s: %w", network, addr, c, err)
		}
		return conn, nil
	case "unix":
		type res struct {
			conn net.Conn
			err  error
		}
		ch := make(chan res, 1)
		go func() { conn, err := c.ssh.Dial("unix", addr); ch <- res{conn, err} }()
		select {
		case <-ctx.Done():
			go func() {
				if r := <-ch; r.conn != nil {
					r.conn.Close()
				}
			}()
			return nil, ctx.Err()
		case r := <-ch:
			if r.err != nil {
				return nil, fmt.Errorf("dial unix socket %s through %s: %w (does the socket exist there, and does sshd allow stream-local forwarding?)", addr, c, r.err)
			}
			return r.conn, nil
		}
	}
	return nil, fmt.Errorf("dial through %s: network %q is not supported (tcp or unix)", c, network)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
