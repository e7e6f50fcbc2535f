package lab

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/lab/internal/engine"

	"github.com/bootlab/bootlab/lab/spec"
)

// GracefulRebootCommand is what a graceful `lab reboot` runs on the node,
// as a person would: the power stand-in asks the agent (PID 1) to stop the
// static pods, sync and unmount the node disk, and reboot.
const GracefulRebootCommand = "sudo -n systemctl reboot"

// Reboot reboots node name of the lab: gracefully through its agent (a
// rehearsal bootstrap: over SSH, GracefulRebootCommand), or hard with a
// power reset of its VM (any running node: nothing is synced, as when a
// host crashes; `lab status` shows a probe node rebooting until its next
// boot reports). It returns once the node was asked; the node boots on its
// own.
func (l *Lab) Reboot(ctx context.Context, name string, hard bool) error {
	n, ok := l.spec.Node(name)
	if !ok {
		names := make([]string, len(l.spec.Nodes))
		for i, m := range l.spec.Nodes {
			names[i] = m.Name
		}
		return fmt.Errorf("no node %q in lab %s (nodes: %s)", name, l.spec.Name, strings.Join(names, ", "))
	}
	if hard {
		hv, err := l.hypervisor(ctx)
		if err != nil {
			return err
		}
		return engine.ResetNode(ctx, hv, l.spec, n)
	}
	if !l.spec.Rehearsal() || n.Role != spec.RoleBootstrap {
		return fmt.Errorf("%s runs no SSH server, so its agent cannot be asked to reboot gracefully (only a rehearsal lab's bootstrap can): `bootlab lab reboot %s --hard` resets its VM", n.Name, n.Name)
	}
	if err := l.askReboot(ctx, n); err != nil {
		return err
	}
	return l.waitDown(ctx, n)
}

// askReboot runs GracefulRebootCommand on node n.
func (l *Lab) askReboot(ctx context.Context, n spec.Node) error {
	c, done, err := l.DialNode(ctx, n, DialOptions{})
	if err != nil {
		return err
	}
	defer done()
	r, err := c.Run(ctx, GracefulRebootCommand)
	if err != nil {
		// The node may end the session as it goes down: asked it was.
		if r.ExitCode == 0 && len(r.Stderr) > 0 {
			return nil
		}
		return fmt.Errorf("reboot %s: %w", n.Name, err)
	}
	return r.Err(GracefulRebootCommand)
}

// downWait bounds the wait for a node going down gracefully: its pods get
// 10 s after SIGTERM, its other processes 5 s.
const downWait = 2 * time.Minute

// waitDown waits until node n's SSH port no longer answers: the node is
// down, and the next command that reaches it reaches its next boot (stage
// commands wait for a booting node to answer).
func (l *Lab) waitDown(ctx context.Context, n spec.Node) error {
	hop, err := l.Hop(ctx)
	if err != nil {
		return err
	}
	defer hop.Close()
	ctx, cancel := context.WithTimeout(ctx, downWait)
	defer cancel()
	addr := net.JoinHostPort(n.IP, "22")
	for {
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := hop.Dial(dctx, "tcp", addr)
		dcancel()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s was asked to reboot and still answers on %s after %s: `bootlab lab console %s` shows what it does", n.Name, addr, downWait, n.Name)
			}
			return nil
		}
		_ = c.Close()
		if !timing.Sleep(ctx, 500*time.Millisecond) {
			return fmt.Errorf("%s was asked to reboot and still answers on %s after %s: `bootlab lab console %s` shows what it does", n.Name, addr, downWait, n.Name)
		}
	}
}
