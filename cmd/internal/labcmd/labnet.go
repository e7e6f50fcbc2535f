package labcmd

import (
	"context"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab/cluster"
)

// labNet says how the lab network is reached from here: directly for a lab
// on this machine, through its hypervisor host's SSH connection for a lab
// on a remote one (qemu+ssh). done closes that connection.
func labNet(ctx context.Context, f *cmdutil.Factory, spec *spec.Spec) (n cluster.Net, done func(), err error) {
	h, err := cmdutil.LabHost(ctx, f, spec)
	if err != nil {
		return cluster.Net{}, nil, err
	}
	done = func() { _ = h.Close() }
	if !h.Remote() {
		return cluster.Net{}, done, nil
	}
	return cluster.Net{Dial: h.Dial, Via: cmdutil.NodeVia(h)}, done, nil
}
