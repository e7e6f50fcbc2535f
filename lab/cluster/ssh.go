package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/bootlab/bootlab/internal/sshc"
)

// SSHRunner runs commands on a node as core, with the lab's key, through
// bootlab's one SSH client: host keys are trusted on first use and recorded
// in KnownHosts; a changed key is refused (a rebuilt node needs its line
// removed).
type SSHRunner struct {
	Addr       string // host:port
	User       string
	KeyPath    string
	KnownHosts string
	// Via is the host the node is reached through (a remote hypervisor,
	// like ProxyJump); nil dials directly.
	Via *sshc.Client

	client *sshc.Client
}

// Run runs cmd and returns its stdout; a non-zero exit is an error
// carrying stderr.
func (r *SSHRunner) Run(ctx context.Context, cmd string) (string, error) {
	if r.client == nil {
		c, err := r.dial(ctx)
		if err != nil {
			return "", err
		}
		r.client = c
	}
	res, err := r.client.Run(ctx, cmd)
	if err != nil {
		// ctx ended a call to a node that stopped answering, or the
		// connection broke: drop it, the next call dials again.
		r.Close()
		return "", err
	}
	if res.ExitCode != 0 {
		return string(res.Stdout), fmt.Errorf("%s on %s: exit status %d: %s", cmd, r.Addr, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return string(res.Stdout), nil
}

// Close closes the connection.
func (r *SSHRunner) Close() error {
	if r.client == nil {
		return nil
	}
	err := r.client.Close()
	r.client = nil
	return err
}

func (r *SSHRunner) dial(ctx context.Context) (*sshc.Client, error) {
	host, p, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return nil, fmt.Errorf("node address %q: %w", r.Addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("node address %q: port: %w", r.Addr, err)
	}
	return sshc.Dial(ctx, sshc.Config{
		Host: host, Port: port, User: r.User, KeyFiles: []string{r.KeyPath},
		KnownHosts: r.KnownHosts, Via: r.Via,
	})
}
