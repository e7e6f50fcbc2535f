package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHRunner runs commands on a node as core, with the lab's key. Host keys
// are trusted on first use and recorded in KnownHosts; a changed key is
// refused (a rebuilt node needs its line removed).
type SSHRunner struct {
	Addr       string // host:port
	User       string
	KeyPath    string
	KnownHosts string

	client *ssh.Client
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
	// Opening the session waits on the peer too: all of it runs apart, so
	// ctx ends a call to a node that stopped answering. The connection is
	// then dropped (the next call dials again).
	client := r.client
	type result struct {
		stdout, stderr []byte
		err, sessErr   error
	}
	done := make(chan result, 1)
	go func() {
		sess, err := client.NewSession()
		if err != nil {
			done <- result{sessErr: err}
			return
		}
		defer sess.Close()
		var stdout, stderr bytes.Buffer
		sess.Stdout, sess.Stderr = &stdout, &stderr
		err = sess.Run(cmd)
		done <- result{stdout: stdout.Bytes(), stderr: stderr.Bytes(), err: err}
	}()
	select {
	case <-ctx.Done():
		r.Close()
		return "", ctx.Err()
	case res := <-done:
		if res.sessErr != nil {
			r.Close()
			return "", res.sessErr
		}
		if res.err != nil {
			return string(res.stdout), fmt.Errorf("%s on %s: %w: %s", cmd, r.Addr, res.err, bytes.TrimSpace(res.stderr))
		}
		return string(res.stdout), nil
	}
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

func (r *SSHRunner) dial(ctx context.Context) (*ssh.Client, error) {
	key, err := os.ReadFile(r.KeyPath)
	if err != nil {
		return nil, fmt.Errorf("lab SSH key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("lab SSH key %s: %w", r.KeyPath, err)
	}
	cfg := &ssh.ClientConfig{
		User:            r.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: r.trustOnFirstUse,
		Timeout:         10 * time.Second,
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", r.Addr)
	if err != nil {
		return nil, err
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, r.Addr, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return ssh.NewClient(c, chans, reqs), nil
}

func (r *SSHRunner) trustOnFirstUse(host string, remote net.Addr, key ssh.PublicKey) error {
	if err := os.MkdirAll(filepath.Dir(r.KnownHosts), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(r.KnownHosts, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	check, err := knownhosts.New(r.KnownHosts)
	if err != nil {
		return err
	}
	err = check(host, remote, key)
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) && len(ke.Want) == 0 {
		line := knownHostsLine(host, key)
		af, err := os.OpenFile(r.KnownHosts, os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer af.Close()
		_, err = fmt.Fprintln(af, line)
		return err
	}
	if errors.As(err, &ke) {
		return fmt.Errorf("host key of %s changed (a rebuilt node?): remove its line from %s if you expect that", host, r.KnownHosts)
	}
	return err
}

// knownHostsLine is the known_hosts line of key for addr (host:port).
func knownHostsLine(addr string, key ssh.PublicKey) string {
	return knownhosts.Line([]string{knownhosts.Normalize(addr)}, key)
}
