package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/internal/userfile"
)

// SSHConfig says how to reach a node over SSH.
type SSHConfig struct {
	// Host is an address or name; Port defaults to 22.
	Host string
	Port int
	// User defaults to core (RHCOS). A user other than root runs every
	// command through `sudo -n`.
	User string
	// KeyPath is the private key (the lab key: labdir.SSHKey(spec)).
	KeyPath string
	// KnownHostsPath records host keys: an unknown key is trusted on first
	// use and written here; a different key later is refused. It must
	// exist, unless OwnKnownHosts.
	KnownHostsPath string
	// OwnKnownHosts says KnownHostsPath is the lab's own (made when
	// missing), not a file the user named.
	OwnKnownHosts bool
	// Via is a connected host the node is reached through, like OpenSSH's
	// ProxyJump: the hypervisor host of a lab on a remote libvirt, the only
	// machine on the lab network. nil dials the node directly.
	Via *sshc.Client
	// Timeout bounds the TCP connect and SSH handshake (default 15s).
	Timeout time.Duration
	// AsUser runs commands as User, not through `sudo -n`: for watching
	// a node with what its user may read (lab wait), never for stages.
	AsUser bool
	Log    *slog.Logger
}

// SSH is a node reached over SSH, through bootlab's one SSH client
// (internal/sshc) and its one host-key policy.
type SSH struct {
	shellFiles
	client *sshc.Client
}

// HostKeyMismatchError is a host key that differs from the recorded one.
type HostKeyMismatchError = sshc.HostKeyMismatchError

// DialSSH connects to the node.
func DialSSH(ctx context.Context, cfg SSHConfig) (*SSH, error) {
	if cfg.Host == "" {
		return nil, errors.New("ssh: no host: give --host or a lab with a bootstrap node")
	}
	if cfg.User == "" {
		cfg.User = "core"
	}
	if _, err := os.Stat(cfg.KeyPath); err != nil {
		return nil, fmt.Errorf("ssh key %s: %w (give --key, or run `bootlab lab up` to create the lab key)", cfg.KeyPath, err)
	}
	c, err := sshc.Dial(ctx, sshc.Config{
		Host: cfg.Host, Port: cfg.Port, User: cfg.User, KeyFiles: []string{cfg.KeyPath},
		KnownHosts: cfg.KnownHostsPath, OwnKnownHosts: cfg.OwnKnownHosts, Sudo: !cfg.AsUser, Via: cfg.Via, Timeout: cfg.Timeout, Log: cfg.Log,
	})
	if err != nil {
		var (
			mm *HostKeyMismatchError
			fe *userfile.Error // the key or known_hosts file, not the node
		)
		if errors.As(err, &mm) || errors.As(err, &fe) || ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w (is the node up? `bootlab lab status`)", err)
	}
	n := &SSH{client: c}
	n.shellFiles = shellFiles{run: n.Run}
	return n, nil
}

func (n *SSH) String() string { return n.client.String() }

// Client is the SSH connection, for what runs more than commands over it
// (an interactive session with a terminal: lab ssh).
func (n *SSH) Client() *sshc.Client { return n.client }

// Close ends the connection.
func (n *SSH) Close() error { return n.client.Close() }

// Run runs cmd with bash on the node, as root: directly when logged in as
// root, else through `sudo -n` (RHCOS's core user may sudo without a password).
func (n *SSH) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return n.client.Stream(ctx, cmd, stdin, stdout, stderr)
}

// Redialing is a node reached over SSH that dials on first use and again
// after any call that broke: a command cut off by its context (a node that
// stopped answering) or a dropped connection (a node that rebooted). It is
// for watching a node over a long time; stages use one SSH connection.
type Redialing struct {
	shellFiles
	cfg SSHConfig

	mu sync.Mutex
	n  *SSH
}

// NewRedialing returns a node reached with cfg, not yet dialled.
func NewRedialing(cfg SSHConfig) *Redialing {
	r := &Redialing{cfg: cfg}
	r.shellFiles = shellFiles{run: r.Run}
	return r
}

// Config is how the node is reached.
func (r *Redialing) Config() SSHConfig { return r.cfg }

func (r *Redialing) String() string {
	u := r.cfg.User
	if u == "" {
		u = "core"
	}
	return u + "@" + r.cfg.Host
}

// Connected says whether a connection is open now.
func (r *Redialing) Connected() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n != nil
}

// Run runs cmd on the node, dialling first if needed; a call that fails
// to run drops the connection so the next one dials again.
func (r *Redialing) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	r.mu.Lock()
	n := r.n
	r.mu.Unlock()
	if n == nil {
		var err error
		if n, err = DialSSH(ctx, r.cfg); err != nil {
			return -1, err
		}
		r.mu.Lock()
		r.n = n
		r.mu.Unlock()
	}
	code, err := n.Run(ctx, cmd, stdin, stdout, stderr)
	if err != nil {
		r.Close()
	}
	return code, err
}

// Close closes the connection, if one is open.
func (r *Redialing) Close() error {
	r.mu.Lock()
	n := r.n
	r.n = nil
	r.mu.Unlock()
	if n == nil {
		return nil
	}
	return n.Close()
}

// shellGrace is how long a shell gets to exit (and remove its temporary
// file) once its stdin closes.
const shellGrace = 2 * time.Second

// Start starts cmd as a root bash with piped streams: what a Shell runs.
func (n *SSH) Start(ctx context.Context, cmd string) (*ShellProcess, error) {
	p, err := n.client.Start(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return &ShellProcess{Stdin: p.Stdin, Stdout: p.Stdout, Stderr: p.Stderr,
		Close: func() error { return p.Close(shellGrace) }}, nil
}

// OneShell is n running all its commands in one root shell (Shell): one
// sudo and one bash for a whole stage run. Close it before n.
func (n *SSH) OneShell() *Shell { return NewShell(n.String(), n.Start, n.Run) }
