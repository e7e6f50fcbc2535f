package engine

import (
	"context"
	"fmt"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"log/slog"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// PivotOptions tune pivot.
type PivotOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// Connect opens the hypervisor (default ConnectLibvirt).
	Connect hypervisor.Connector
}

// PivotResult is what `lab pivot -o json` prints.
type PivotResult struct {
	Lab string `json:"name"`
	// Changed is false when the bootstrap was already out of the load balancer.
	Changed      bool                         `json:"changed"`
	Before       []loadbalancer.BackendStatus `json:"before"`
	After        []loadbalancer.BackendStatus `json:"after"`
	RemovedNodes []string                     `json:"removedNodes,omitempty"`
}

// Pivot is `lab pivot` (Lab.Pivot) of a built lab: the end of the bootstrap. It takes
// the bootstrap out of the load balancer (haproxy reloads; connections in
// flight finish), records it under the lab's lock so a later up does not
// add it back, and on an OpenShift lab destroys the bootstrap VM and
// deletes its disk. A probe lab keeps its bootstrap VM. Running it again
// changes nothing. The hypervisor is opened first: its capabilities say
// whether the lab has a load balancer at all.
func Pivot(ctx context.Context, s *spec.Spec, o PivotOptions) (*PivotResult, error) {
	if o.Connect == nil {
		o.Connect = ConnectLibvirt
	}
	state, err := labdir.LoadState(s.LabDir)
	if err != nil {
		return nil, err
	}
	if len(s.NodesByRole(spec.RoleBootstrap)) == 0 {
		return nil, &InputError{Err: fmt.Errorf("lab %s has no bootstrap node: nothing to pivot", s.Name)}
	}
	res := &PivotResult{Lab: s.Name, Changed: !state.BootstrapRemoved}
	hv, err := o.Connect(ctx, s.Libvirt.URI, o.Log)
	if err != nil {
		return nil, err
	}
	defer hv.Close()
	// lab up starts haproxy only where the network is a bridge on the
	// hypervisor's machine (not on the test driver).
	withLB := hv.Capabilities().HostNetwork
	// The load balancer runs on the hypervisor's machine.
	var lbHost host.Host = host.Local{}
	if withLB && s.Remote() {
		lbHost = hv.Host()
	}

	if withLB {
		before, err := loadbalancer.Inspect(ctx, loadbalancer.LabConfigOn(lbHost, s, state.BootstrapRemoved))
		if err != nil {
			return nil, fmt.Errorf("read the load balancer's backends: %w", err)
		}
		if !before.Running {
			return nil, fmt.Errorf("the load balancer of lab %s is not running (%s): run `bootlab lab up` first", s.Name, loadbalancer.LabConfigOn(lbHost, s, false).PIDPath())
		}
		res.Before = before.Backends

		o.Status.Start("Removing the bootstrap from the load balancer")
		lbRes, err := loadbalancer.Ensure(ctx, loadbalancer.LabConfigOn(lbHost, s, true), o.Log)
		if err != nil {
			return nil, fmt.Errorf("reload the load balancer without the bootstrap: %w", err)
		}
		o.Status.End(true)
		if lbRes.Changed {
			res.Changed = true
		}
	}
	if err := UpdateState(s, false, func(st *labdir.State) error {
		st.BootstrapRemoved = true
		return nil
	}); err != nil {
		return nil, err
	}

	if s.Profile == spec.ProfileOpenShift {
		for _, n := range s.NodesByRole(spec.RoleBootstrap) {
			o.Status.Start("Destroying %s and deleting its disk", n.Name)
			if err := RemoveNode(ctx, hv, s, n.Name); err != nil {
				return nil, fmt.Errorf("remove node %s: %w (run `bootlab lab pivot` again to retry)", n.Name, err)
			}
			o.Status.End(true)
			res.RemovedNodes = append(res.RemovedNodes, n.Name)
		}
	}

	if withLB {
		after, err := loadbalancer.Inspect(ctx, loadbalancer.LabConfigOn(lbHost, s, true))
		if err != nil {
			return nil, fmt.Errorf("read the load balancer's backends: %w", err)
		}
		res.After = after.Backends
	}
	return res, nil
}
