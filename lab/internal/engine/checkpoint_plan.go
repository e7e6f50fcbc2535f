package engine

import (
	"context"
	"path/filepath"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/lab/labdir"
)

// PlanRestoreCheckpoint is what RestoreCheckpoint would change, changing
// nothing: `lab checkpoint restore --dry-run`. It refuses what restore
// refuses (no such checkpoint, an incomplete one) with the same errors.
func PlanRestoreCheckpoint(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, name string, opts RestoreOptions) ([]Change, error) {
	if err := ValidateCheckpointName(name); err != nil {
		return nil, err
	}
	r, unlock, err := labRunFor(hv, s, opts.Log, false, true)
	defer unlock()
	if err != nil {
		return nil, err
	}
	_, doms, err := r.restorable(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []Change
	for _, d := range doms {
		out = append(out, Change{Action: "revert", Kind: "snapshot", Name: d + "/" + snapshotPrefix + name, Detail: "disks, memory and run state"})
	}
	from := labdir.Checkpoint(s, name)
	for _, f := range labdir.CheckpointEntries() {
		out = append(out, Change{Action: "replace", Kind: "labDir", Name: filepath.Join(s.LabDir, f), Detail: "with the checkpoint's copy in " + from})
	}
	out = append(out, Change{Action: "replace", Kind: "consoleLogs", Name: labdir.Console(s), Detail: "with the checkpoint's copy"})
	if r.caps.HostNetwork && !opts.SkipLoadBalancer {
		out = append(out, Change{Action: "reload", Kind: "loadBalancer", Name: "haproxy on " + s.Network.APIAddress, Detail: "if the restored state needs it"})
	}
	return out, nil
}
