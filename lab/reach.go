package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// NotUp reports whether err says the lab has no complete up recorded:
// the commands' "no such lab" exit code.
func NotUp(err error) bool { return errors.Is(err, labdir.ErrNoState) }

// Found is a lab directory found under a bootlab home (FindLabs): what a
// command needs of a lab before it opens one (lab down --all, class
// members, the only lab on this host).
type Found struct {
	// Name is the lab's name; Dir its lab directory.
	Name, Dir string
	// Spec names the lab: the effective spec its last complete up
	// recorded, or (Built false) its name and directory with every
	// default, enough to find and remove what a cut-short up made.
	Spec  *spec.Spec
	Built bool
	// Class is the class the lab was built for ("" for none).
	Class string
	// Err says why its state could not be read (Spec is then nil).
	Err error
}

// FindLabs are the lab directories under home, sorted by name.
func FindLabs(home string) ([]Found, error) {
	refs, err := labdir.Find(home)
	if err != nil {
		return nil, err
	}
	out := make([]Found, len(refs))
	for i, r := range refs {
		f := Found{Name: r.Name, Dir: r.Dir, Err: r.Err}
		if r.Err == nil {
			f.Class, f.Spec, f.Built = r.State.Class, r.State.Spec, r.State.Spec != nil
			if !f.Built {
				f.Spec = &spec.Spec{Name: r.Name, LabDir: r.Dir}
				f.Spec.Defaults()
			}
		}
		out[i] = f
	}
	return out, nil
}

// Hop is how this machine reaches the lab network: directly for a lab on
// this machine, through one SSH connection to the hypervisor host for a
// lab on a remote one (qemu+ssh), as OpenSSH's ProxyJump. Close it.
type Hop struct{ h host.Host }

// LocalHop is the hop of a lab on this machine (no connection to close).
func LocalHop() *Hop { return &Hop{h: host.Local{}} }

// Hop opens the lab's hop (see Hop).
func (l *Lab) Hop(ctx context.Context) (*Hop, error) {
	h, err := host.Open(ctx, l.spec.Libvirt.URI, host.Options{Log: l.o.Log})
	if err != nil {
		return nil, err
	}
	return &Hop{h: h}, nil
}

// Remote reports whether the hop goes through another machine.
func (h *Hop) Remote() bool { return h.h.Remote() }

// Name is the hypervisor host's name ("localhost" on this machine).
func (h *Hop) Name() string { return h.h.Name() }

// Dial opens a connection to addr on the lab network.
func (h *Hop) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return h.h.Dial(ctx, network, addr)
}

// Via is the SSH connection nodes are reached through (nil: directly).
func (h *Hop) Via() *sshc.Client {
	if s, ok := h.h.(*host.SSH); ok {
		return s.Client()
	}
	return nil
}

// net is the hop as the cluster clients take it.
func (h *Hop) net() cluster.Net { return netOf(h.h) }

// Close closes the connection to the hypervisor host, if there is one.
func (h *Hop) Close() error { return h.h.Close() }

// DialOptions tune DialNode.
type DialOptions struct {
	// Port is the node's SSH port (0: 22).
	Port int
}

// DialNode logs in to node n of the lab as core with the lab's key,
// through the lab's hop; its host key goes to the lab's known_hosts.
// done closes the client and the hop.
func (l *Lab) DialNode(ctx context.Context, n spec.Node, o DialOptions) (*sshc.Client, func(), error) {
	key := l.SSHKey()
	if _, err := os.Stat(key); err != nil {
		return nil, nil, fmt.Errorf("lab SSH key %s missing: run `bootlab lab up` first", key)
	}
	if o.Port == 0 {
		o.Port = 22
	}
	hop, err := l.Hop(ctx)
	if err != nil {
		return nil, nil, err
	}
	cfg := NodeSSH(l.spec, n.IP, hop)
	cfg.Port, cfg.AsUser, cfg.Log = o.Port, true, l.o.Log
	s, err := node.DialSSH(ctx, cfg)
	if err != nil {
		_ = hop.Close()
		return nil, nil, fmt.Errorf("lab ssh %s: %w", n.Name, err)
	}
	c := s.Client()
	return c, func() { _ = c.Close(); _ = hop.Close() }, nil
}

// NodeSSH is how bootlab logs in to host, a node of the lab spec s
// describes: as core with the lab's key and known_hosts, through hop (nil:
// directly). Every verb reaches a node this way (lab/cluster.NodeSSH).
func NodeSSH(s *spec.Spec, host string, hop *Hop) node.SSHConfig {
	var via *sshc.Client
	if hop != nil {
		via = hop.Via()
	}
	return cluster.NodeSSH(s, host, via)
}
