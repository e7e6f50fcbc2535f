package sshc

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/crypto/ssh"
	"golang.org/x/term"
)

// Shell runs the user's login shell on the host, as `ssh host` does: with a
// pseudo-terminal the size of the local one, and the local terminal in raw
// mode, when stdin is a terminal; with plain pipes otherwise. It returns
// the shell's exit status.
func (c *Client) Shell(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	sess, err := c.ssh.NewSession()
	if err != nil {
		return -1, fmt.Errorf("ssh %s: new session: %w", c, err)
	}
	defer sess.Close()
	sess.Stdin, sess.Stdout, sess.Stderr = stdin, stdout, stderr
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fd := int(f.Fd())
		w, h, err := term.GetSize(fd)
		if err != nil {
			w, h = 80, 24
		}
		tt := os.Getenv("TERM")
		if tt == "" {
			tt = "xterm"
		}
		if err := sess.RequestPty(tt, h, w, ssh.TerminalModes{ssh.ECHO: 1}); err != nil {
			return -1, fmt.Errorf("ssh %s: request a terminal: %w", c, err)
		}
		old, err := term.MakeRaw(fd)
		if err != nil {
			return -1, fmt.Errorf("terminal raw mode: %w", err)
		}
		defer func() { _ = term.Restore(fd, old) }()
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer func() { signal.Stop(winch); close(winch) }()
		go func() {
			for range winch {
				if w, h, err := term.GetSize(fd); err == nil {
					_ = sess.WindowChange(h, w)
				}
			}
		}()
	}
	if err := sess.Shell(); err != nil {
		return -1, fmt.Errorf("ssh %s: start a shell: %w", c, err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case <-ctx.Done():
		sess.Close()
		return -1, ctx.Err()
	case err = <-done:
	}
	return c.exitStatus(err, "the shell")
}
