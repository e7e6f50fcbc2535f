package stages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/bootlab/bootlab/internal/sshc"
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
	// Via is a connected host the node is reached through, like OpenSSH's
	// ProxyJump: the hypervisor host of a lab on a remote libvirt, the only
	// machine on the lab network. nil dials the node directly.
	Via *sshc.Client
	// Timeout bounds the TCP connect and SSH handshake (default 15s).
	Timeout time.Duration
	Log     *slog.Logger
}

// SSHNode is a node reached over SSH, through bootlab's one SSH client
// (internal/sshc) and its one host-key policy.
type SSHNode struct {
	shellFiles
	client *sshc.Client
}

// HostKeyMismatchError is a host key that differs from the recorded one.
type HostKeyMismatchError = sshc.HostKeyMismatchError

// DialSSH connects to the node.
func DialSSH(ctx context.Context, cfg SSHConfig) (*SSHNode, error) {
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
		KnownHosts: cfg.KnownHostsPath, Sudo: true, Via: cfg.Via, Timeout: cfg.Timeout, Log: cfg.Log,
	})
	if err != nil {
		var mm *HostKeyMismatchError
		if errors.As(err, &mm) || ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w (is the node up? `bootlab lab status`)", err)
	}
	n := &SSHNode{client: c}
	n.shellFiles = shellFiles{run: n.Run}
	return n, nil
}

func (n *SSHNode) String() string { return n.client.String() }

// Close ends the connection.
func (n *SSHNode) Close() error { return n.client.Close() }

// Run runs cmd with bash on the node, as root: directly when logged in as
// root, else through `sudo -n` (RHCOS's core user may sudo without a password).
func (n *SSHNode) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return n.client.Stream(ctx, cmd, stdin, stdout, stderr)
}
