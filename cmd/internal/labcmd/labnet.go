package labcmd

import (
	"context"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// labNet says how the lab network is reached from here: directly for a lab
// on this machine, through its hypervisor host's SSH connection for a lab
// on a remote one (qemu+ssh). done closes that connection.
func labNet(ctx context.Context, f *cmdutil.Factory, spec *spec.Spec) (n lab.Net, done func(), err error) {
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return lab.Net{}, nil, err
	}
	defer l.Close()
	h, err := l.Hop(ctx)
	if err != nil {
		return lab.Net{}, nil, err
	}
	return h.Net(), func() { _ = h.Close() }, nil
}
