package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// The lab as built, and where its files are: what every command turns its
// flags into before a verb. The lab directory is labdir's; the commands
// see it through these, so that a change of layout is one package's.
type (
	// State is what the last complete `lab up` recorded.
	State = labdir.State
	// LabRef is one lab directory found under a home (FindLabs).
	LabRef = labdir.Ref
	// VerifyRecord is the last `lab verify`'s outcome, as recorded.
	VerifyRecord = labdir.VerifyRecord
	// IdentityError is a lab directory that holds another lab.
	IdentityError = labdir.IdentityError
	// Net is how the lab network is reached from this machine (Hop.Net).
	Net = cluster.Net
)

// Resolve is the spec of the lab as built, if it was: the effective spec
// the last `lab up` recorded, with its state. A lab never built is s and
// a nil state; a lab directory holding another lab is an *IdentityError.
func Resolve(s *spec.Spec) (*spec.Spec, *State, error) { return labdir.Resolve(s) }

// FindLabs are the lab directories under home.
func FindLabs(home string) ([]LabRef, error) { return labdir.Find(home) }

// NotUp reports whether err says the lab has no complete up recorded:
// the commands' "no such lab" exit code.
func NotUp(err error) bool { return errors.Is(err, labdir.ErrNoState) }

// LoadVerifyRecord is the verify record of the lab in labDir built as
// labUUID (nil when none was recorded for it).
func LoadVerifyRecord(labDir, labUUID string) (*VerifyRecord, error) {
	return labdir.LoadVerifyRecord(labDir, labUUID)
}

// SSHKey is the lab's private SSH key (its nodes let core in with it).
func SSHKey(s *spec.Spec) string { return labdir.SSHKey(s) }

// KnownHosts is the lab's own known_hosts: its nodes' host keys change at
// every rebuild, so they never go to the user's.
func KnownHosts(s *spec.Spec) string { return labdir.KnownHosts(s) }

// StageDir holds the stage commands' records and logs of the lab.
func StageDir(s *spec.Spec) string { return labdir.Stages(s) }

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

// Net is the hop as the cluster clients take it.
func (h *Hop) Net() Net { return netOf(h.h) }

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
	key := SSHKey(l.spec)
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
	c, err := sshc.Dial(ctx, sshc.Config{
		Host: n.IP, Port: o.Port, User: "core", KeyFiles: []string{key},
		KnownHosts: KnownHosts(l.spec), Via: hop.Via(), Log: l.o.Log,
	})
	if err != nil {
		_ = hop.Close()
		return nil, nil, fmt.Errorf("lab ssh %s: %w (is it up? `bootlab lab status`)", n.Name, err)
	}
	return c, func() { _ = c.Close(); _ = hop.Close() }, nil
}
