package sshc

import (
	"context"
	"fmt"
	"io"
	"time"

	"golang.org/x/crypto/ssh"
)

// Process is a command started on the host whose standard streams are
// pipes: a long-lived shell fed one command after another (node.Shell).
type Process struct {
	Stdin          io.WriteCloser
	Stdout, Stderr io.Reader
	sess           *ssh.Session
	done           chan error
}

// Start starts cmd as Stream would run it (bash -c, through `sudo -n`
// when configured) and returns at once; the caller must read Stdout and
// Stderr as the command writes them, and Close the process.
func (c *Client) Start(ctx context.Context, cmd string) (*Process, error) {
	sess, err := c.openSession(ctx)
	if err != nil {
		return nil, err
	}
	p := &Process{sess: sess, done: make(chan error, 1)}
	if err := p.pipes(); err != nil {
		sess.Close()
		return nil, fmt.Errorf("ssh %s: pipes for %s: %w", c, firstLine(cmd), err)
	}
	if err := sess.Start(c.commandLine(cmd)); err != nil {
		sess.Close()
		return nil, fmt.Errorf("ssh %s: start %s: %w", c, firstLine(cmd), err)
	}
	go func() { p.done <- sess.Wait() }()
	return p, nil
}

func (p *Process) pipes() error {
	var err error
	if p.Stdin, err = p.sess.StdinPipe(); err != nil {
		return err
	}
	if p.Stdout, err = p.sess.StdoutPipe(); err != nil {
		return err
	}
	p.Stderr, err = p.sess.StderrPipe()
	return err
}

// Close ends the process: its stdin closes (a shell reading commands
// exits and cleans up after itself) and the session closes once it has
// exited, or after grace if it has not.
func (p *Process) Close(grace time.Duration) error {
	_ = p.Stdin.Close()
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.sess.Signal(ssh.SIGTERM)
	}
	return p.sess.Close()
}
