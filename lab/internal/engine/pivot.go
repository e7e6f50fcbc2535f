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
	// DryRun changes nothing (haproxy, state, libvirt): the result's
	// Changes say what pivot would do, decided by the same steps.
	DryRun bool
}

// PivotResult is what `lab pivot -o json` prints.
type PivotResult struct {
	Lab string `json:"name"`
	// Changed is false when the bootstrap was already out of the load balancer.
	Changed      bool                         `json:"changed"`
	Before       []loadbalancer.BackendStatus `json:"before"`
	After        []loadbalancer.BackendStatus `json:"after"`
	RemovedNodes []string                     `json:"removedNodes,omitempty"`
	// Changes is the plan of a dry run, in order (After is then empty).
	Changes []Change `json:"changes,omitempty"`
}

// Pivot is `lab pivot` (Lab.Pivot) of a built lab: the end of the bootstrap. It takes
// the bootstrap out of the load balancer (haproxy reloads; connections in
// flight finish), records it under the lab's lock so a later up does not
// add it back, and on an OpenShift lab destroys the bootstrap VM and
// deletes its disk. A probe lab keeps its bootstrap VM. Running it again
// changes nothing. The hypervisor is opened first: its capabilities say
// whether the lab has a load balancer at all. A dry run takes the same
// steps over a load balancer, state and hypervisor that record instead of
// changing (the load balancer and libvirt are read as for a real pivot).
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
		changed, err := pivotLoadBalancer(ctx, s, loadbalancer.LabConfigOn(lbHost, s, true), o, res)
		if err != nil {
			return nil, err
		}
		res.Changed = res.Changed || changed
	}
	if err := pivotState(s, state, o.DryRun, res); err != nil {
		return nil, err
	}

	if s.Profile == spec.ProfileOpenShift {
		for _, n := range s.NodesByRole(spec.RoleBootstrap) {
			if err := pivotRemoveNode(ctx, hv, s, n.Name, o, res); err != nil {
				return nil, err
			}
		}
	}

	if withLB && !o.DryRun {
		after, err := loadbalancer.Inspect(ctx, loadbalancer.LabConfigOn(lbHost, s, true))
		if err != nil {
			return nil, fmt.Errorf("read the load balancer's backends: %w", err)
		}
		res.After = after.Backends
	}
	return res, nil
}

// pivotLoadBalancer reloads haproxy with config c (the lab without its
// bootstrap), or on a dry run notes what Ensure would do (loadbalancer.Plan,
// as up's dry run does); changed says whether anything did or would change.
func pivotLoadBalancer(ctx context.Context, s *spec.Spec, c loadbalancer.Config, o PivotOptions, res *PivotResult) (bool, error) {
	if o.DryRun {
		action, err := loadbalancer.Plan(ctx, c)
		if err != nil {
			return false, fmt.Errorf("read the load balancer: %w", err)
		}
		if action != "" {
			res.Changes = append(res.Changes, Change{Action: action, Kind: "loadBalancer", Name: "haproxy on " + s.Network.APIAddress, Detail: "without the bootstrap"})
		}
		return action != "", nil
	}
	o.Status.Start("Removing the bootstrap from the load balancer")
	lbRes, err := loadbalancer.Ensure(ctx, c, o.Log)
	if err != nil {
		o.Status.End(false)
		return false, fmt.Errorf("reload the load balancer without the bootstrap: %w", err)
	}
	o.Status.End(true)
	return lbRes.Changed, nil
}

// pivotState records in the lab's state that the bootstrap is out, so a
// later up does not add it back (a dry run notes it).
func pivotState(s *spec.Spec, state *labdir.State, dryRun bool, res *PivotResult) error {
	if dryRun {
		if !state.BootstrapRemoved {
			res.Changes = append(res.Changes, Change{Action: "update", Kind: "labDir", Name: labdir.StatePath(s.LabDir), Detail: "the bootstrap is out of the load balancer"})
		}
		return nil
	}
	return UpdateState(s, false, func(st *labdir.State) error {
		st.BootstrapRemoved = true
		return nil
	})
}

// pivotRemoveNode destroys node name and deletes its disk (RemoveNode), or
// on a dry run notes what that would remove, by the same steps.
func pivotRemoveNode(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, name string, o PivotOptions, res *PivotResult) error {
	if !o.DryRun {
		o.Status.Start("Destroying %s and deleting its disk", name)
	}
	changes, err := removeNode(ctx, hv, s, name, o.DryRun)
	if !o.DryRun {
		o.Status.End(err == nil)
	}
	if err != nil {
		return fmt.Errorf("remove node %s: %w (run `bootlab lab pivot` again to retry)", name, err)
	}
	if o.DryRun {
		res.Changes = append(res.Changes, changes...)
		return nil
	}
	res.RemovedNodes = append(res.RemovedNodes, name)
	return nil
}
