package engine

import (
	"context"
	"fmt"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"log/slog"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/hostdns"
	"github.com/bootlab/bootlab/lab/labdir"
)

// TeardownOptions tune Lab.Down and Lab.PlanDown.
type TeardownOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// Connect opens the hypervisor (default ConnectLibvirt).
	Connect hypervisor.Connector
	// KeepImages keeps the imported base image (see DownOptions).
	KeepImages bool
}

// Teardown is `lab down` (Lab.Down): host DNS is undone first, before libvirt is even
// asked (Down removes the state that records it, and an unreachable
// libvirt must not leave the host resolving the lab's domain), then the
// hypervisor is opened and Down removes what the lab made. The steps say
// what each removed: none Changed means there was nothing of this lab.
func Teardown(ctx context.Context, s *spec.Spec, o TeardownOptions) ([]StepResult, error) {
	if o.Connect == nil {
		o.Connect = ConnectLibvirt
	}
	if st, err := labdir.LoadState(s.LabDir); err == nil && !st.HostDNS.IsZero() {
		o.Status.Start("Removing host name resolution for %s", s.Cluster.Domain())
		if err := hostdns.Undo(ctx, st.HostDNS); err != nil {
			o.Status.End(false)
			return nil, fmt.Errorf("undo host DNS (%s): %w", st.HostDNS, err)
		}
		if err := UpdateState(s, false, func(st *labdir.State) error {
			st.HostDNS = labdir.HostDNS{}
			return nil
		}); err != nil {
			o.Status.End(false)
			return nil, err
		}
		o.Status.End(true)
	}
	hv, err := o.Connect(ctx, s.Libvirt.URI, o.Log)
	if err != nil {
		return nil, err
	}
	defer hv.Close()
	return Down(ctx, hv, s, DownOptions{Log: o.Log, Status: o.Status, KeepImages: o.KeepImages})
}

// PlanTeardown is what teardown would undo and remove, in order, changing
// nothing: `lab down --dry-run`.
func PlanTeardown(ctx context.Context, s *spec.Spec, o TeardownOptions) ([]Change, error) {
	if o.Connect == nil {
		o.Connect = ConnectLibvirt
	}
	var changes []Change
	if st, err := labdir.LoadState(s.LabDir); err == nil && !st.HostDNS.IsZero() {
		changes = append(changes, Change{Action: "remove", Kind: "hostDNS", Name: s.Cluster.Domain(), Detail: st.HostDNS.String()})
	}
	hv, err := o.Connect(ctx, s.Libvirt.URI, o.Log)
	if err != nil {
		return nil, err
	}
	defer hv.Close()
	down, err := PlanDown(ctx, hv, s, DownOptions{Log: o.Log, KeepImages: o.KeepImages})
	return append(changes, down...), err
}
