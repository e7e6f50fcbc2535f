package units

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// SocketPath is where the agent answers the systemctl stand-in, as systemd
// answers systemctl on /run/systemd/private.
const SocketPath = "/run/bootlab/units.sock"

// Request is one systemctl verb on one unit.
type Request struct {
	Verb string `json:"verb"` // start, stop, restart, status
	Unit string `json:"unit"`
}

// Reply is the agent's answer: the unit's state after the verb, or why not.
type Reply struct {
	State State `json:"state"`
	// NoUnit says the agent runs no such unit; Error is any other failure.
	NoUnit bool   `json:"noUnit,omitempty"`
	Error  string `json:"error,omitempty"`
	// Units are the units the agent runs (with NoUnit).
	Units []string `json:"units,omitempty"`
}

// ErrNotRoot is a verb that changes a unit asked by someone not root.
var ErrNotRoot = errors.New("access denied: only root starts and stops units (sudo systemctl ...)")

// Serve answers requests on a unix socket at path until ctx ends. Anyone
// may ask a unit's status, as systemctl status needs no root; only root
// (by the peer's credentials) may start, stop or restart one.
func (m *Manager) Serve(ctx context.Context, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	if err := os.Chmod(path, 0o666); err != nil {
		_ = ln.Close()
		return err
	}
	go func() { <-ctx.Done(); _ = ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go m.serveConn(ctx, c.(*net.UnixConn))
	}
}

func (m *Manager) serveConn(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var req Request
	line, err := bufio.NewReader(c).ReadBytes('\n')
	var r Reply
	switch {
	case err != nil:
		r.Error = "read the request: " + err.Error()
	case json.Unmarshal(line, &req) != nil:
		r.Error = "the request is not JSON"
	default:
		r = m.answer(ctx, req, peerUID(c))
	}
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	data, _ := json.Marshal(r)
	_, _ = c.Write(append(data, '\n'))
}

// peerUID is the connecting process's uid (-1: unknown).
func peerUID(c *net.UnixConn) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	uid := -1
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			uid = int(cred.Uid)
		}
	})
	return uid
}

// answer runs req for a peer of uid.
func (m *Manager) answer(ctx context.Context, req Request, uid int) Reply {
	var err error
	switch req.Verb {
	case "status":
	case "start", "stop", "restart":
		if uid != 0 {
			return Reply{Error: ErrNotRoot.Error()}
		}
		switch req.Verb {
		case "start":
			err = m.Start(req.Unit)
		case "stop":
			err = m.Stop(ctx, req.Unit)
		default:
			err = m.Restart(ctx, req.Unit)
		}
	default:
		return Reply{Error: fmt.Sprintf("verb %q is not played (start, stop, restart, status are)", req.Verb)}
	}
	if err == nil {
		var st State
		st, err = m.Status(req.Unit)
		if err == nil {
			return Reply{State: st}
		}
	}
	if errors.Is(err, ErrNoUnit) {
		return Reply{NoUnit: true, Units: m.Names()}
	}
	return Reply{Error: err.Error()}
}

// Ask sends req to the agent at path and returns its reply.
func Ask(ctx context.Context, path string, req Request) (Reply, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return Reply{}, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	data, _ := json.Marshal(req)
	if _, err := c.Write(append(data, '\n')); err != nil {
		return Reply{}, err
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return Reply{}, fmt.Errorf("the agent's answer: %w", err)
	}
	var r Reply
	if err := json.Unmarshal(line, &r); err != nil {
		return Reply{}, fmt.Errorf("the agent's answer is not JSON")
	}
	if r.Error != "" {
		return r, errors.New(strings.TrimSpace(r.Error))
	}
	return r, nil
}
