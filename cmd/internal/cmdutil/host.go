package cmdutil

import (
	"context"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/host"
)

// LabHost opens the hypervisor host of spec's libvirt URI: this machine, or
// one SSH connection to a remote hypervisor (qemu+ssh). A lab's network is
// reachable only from its host, so everything that talks to it (verify,
// lab ssh, the stage commands) goes through it. The caller closes it.
func LabHost(ctx context.Context, f *Factory, spec *spec.Spec) (host.Host, error) {
	return host.Open(ctx, spec.Libvirt.URI, host.Options{Log: f.Log})
}

// NodeVia is the SSH connection nodes on h are reached through, like
// OpenSSH's ProxyJump: nil when h is this machine (nodes are dialled
// directly).
func NodeVia(h host.Host) *sshc.Client {
	if s, ok := h.(*host.SSH); ok {
		return s.Client()
	}
	return nil
}
