package stages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHConfig says how to reach a node over SSH.
type SSHConfig struct {
	// Host is an address or name; Port defaults to 22.
	Host string
	Port int
	// User defaults to core (RHCOS). A user other than root runs every
	// command through `sudo -n`.
	User string
	// KeyPath is the private key (the lab key: spec.SSHKeyPath()).
	KeyPath string
	// KnownHostsPath records host keys: an unknown key is trusted on first
	// use and written here; a different key later is refused.
	KnownHostsPath string
	// Timeout bounds the TCP connect and SSH handshake (default 15s).
	Timeout time.Duration
	Log     *slog.Logger
}

// SSHNode is a node reached over SSH.
type SSHNode struct {
	shellFiles
	client *ssh.Client
	user   string
	addr   string
}

// HostKeyMismatchError is a host key that differs from the recorded one.
type HostKeyMismatchError struct {
	Host, KnownHosts string
	Line             int
}

func (e *HostKeyMismatchError) Error() string {
	return fmt.Sprintf("host key of %s differs from the one recorded in %s line %d: refusing to connect. If the node was rebuilt, forget the old key with `ssh-keygen -R %s -f %s` and retry",
		e.Host, e.KnownHosts, e.Line, knownhosts.Normalize(e.Host), e.KnownHosts)
}

// DialSSH connects to the node.
func DialSSH(ctx context.Context, cfg SSHConfig) (*SSHNode, error) {
	if cfg.Host == "" {
		return nil, errors.New("ssh: no host: give --host or a lab with a bootstrap node")
	}
	if cfg.Port == 0 {
		cfg.Port = 22
	}
	if cfg.User == "" {
		cfg.User = "core"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	keyData, err := os.ReadFile(cfg.KeyPath)
	if err != nil {
		return nil, fmt.Errorf("ssh key %s: %w (give --key, or run `bootlab lab up` to create the lab key)", cfg.KeyPath, err)
	}
	signer, err := ssh.ParsePrivateKey(keyData)
	if err != nil {
		return nil, fmt.Errorf("ssh key %s: %w", cfg.KeyPath, err)
	}
	hostKeys, err := tofuHostKeys(cfg.KnownHostsPath, cfg.Log)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	conf := &ssh.ClientConfig{
		User:            cfg.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hostKeys,
		Timeout:         cfg.Timeout,
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh %s@%s: %w (is the node up? `bootlab lab status`)", cfg.User, addr, err)
	}
	_ = conn.SetDeadline(time.Now().Add(cfg.Timeout))
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, conf)
	if err != nil {
		conn.Close()
		var mm *HostKeyMismatchError
		if errors.As(err, &mm) {
			return nil, mm
		}
		return nil, fmt.Errorf("ssh %s@%s: %w", cfg.User, addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	n := &SSHNode{client: ssh.NewClient(c, chans, reqs), user: cfg.User, addr: addr}
	n.shellFiles = shellFiles{run: n.Run}
	cfg.Log.Debug("connected", "node", n.String())
	return n, nil
}

// tofuHostKeys checks host keys against path, recording unknown ones.
func tofuHostKeys(path string, log *slog.Logger) (ssh.HostKeyCallback, error) {
	if path == "" {
		return nil, errors.New("ssh: no known_hosts file given")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	f.Close()
	var mu sync.Mutex
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		mu.Lock()
		defer mu.Unlock()
		check, err := knownhosts.New(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		err = check(hostname, remote, key)
		var ke *knownhosts.KeyError
		if !errors.As(err, &ke) {
			return err
		}
		if len(ke.Want) > 0 {
			return &HostKeyMismatchError{Host: hostname, KnownHosts: path, Line: ke.Want[0].Line}
		}
		line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key)
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("record host key in %s: %w", path, err)
		}
		defer f.Close()
		if _, err := fmt.Fprintln(f, line); err != nil {
			return fmt.Errorf("record host key in %s: %w", path, err)
		}
		log.Info("trusting the node's host key on first use", "host", hostname, "fingerprint", ssh.FingerprintSHA256(key), "known_hosts", path)
		return nil
	}, nil
}

func (n *SSHNode) String() string { return n.user + "@" + n.addr }

// Close ends the connection.
func (n *SSHNode) Close() error { return n.client.Close() }

// Run runs cmd with bash on the node, as root: directly when logged in as
// root, else through `sudo -n` (RHCOS's core user may sudo without a password).
func (n *SSHNode) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	sess, err := n.client.NewSession()
	if err != nil {
		return -1, fmt.Errorf("ssh %s: new session: %w", n, err)
	}
	defer sess.Close()
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	sess.Stdin, sess.Stdout, sess.Stderr = stdin, stdout, stderr
	line := "bash -c " + ShellQuote(cmd)
	if n.user != "root" {
		line = "sudo -n " + line
	}
	done := make(chan error, 1)
	go func() { done <- sess.Run(line) }()
	select {
	case <-ctx.Done():
		_ = sess.Signal(ssh.SIGTERM)
		sess.Close()
		<-done
		return -1, ctx.Err()
	case err = <-done:
	}
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		return ee.ExitStatus(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("ssh %s: %w", n, err)
	}
	return 0, nil
}
