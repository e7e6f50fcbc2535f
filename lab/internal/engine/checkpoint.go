package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// A checkpoint is one internal libvirt snapshot of every node of a lab (with
// memory for a running node, disks only for one that is off), all named
// bootlab-NAME, plus a copy of the lab's own files that change with the
// nodes (state.json, verify.json, the stage records) under
// <labDir>/checkpoints/NAME. Internal snapshots were chosen over external
// disk-only ones: they keep the qcow2 overlay the only file of a node (no
// chain to merge back), restore running nodes without a reboot, and are what
// libvirt reverts and deletes natively. docs/checkpoints.md has the numbers.

// snapshotPrefix marks the snapshots bootlab owns.
const snapshotPrefix = "bootlab-"

// consoleDir holds the nodes' serial console logs. A checkpoint carries them
// too (a probe node's reports are there: after a restore the node goes on
// reporting from the checkpoint's sequence number), but restore rewrites
// them in place: virtlogd keeps each open and appends to it.
const consoleDir = "console" // within a checkpoint, as labdir.Console in the lab directory

// checkpointMeta is <labDir>/checkpoints/NAME/checkpoint.json.
type checkpointMeta struct {
	Name    string    `json:"name"`
	Lab     string    `json:"lab"`
	LabUUID string    `json:"labUUID,omitempty"`
	Created time.Time `json:"created"`
	// Nodes maps each domain to the state it was snapshotted in.
	Nodes map[string]string `json:"nodes"`
}

// Checkpoint is one checkpoint of a lab as List reports it.
type Checkpoint struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	// Nodes maps every domain snapshotted to its state then ("running", "shutoff").
	Nodes map[string]string `json:"nodes"`
	// Missing names the domains whose snapshot is gone, and "files" when the
	// copy of the lab files is: such a checkpoint cannot be restored.
	Missing []string `json:"missing,omitempty"`
}

// RestoreOptions tune RestoreCheckpoint.
type RestoreOptions struct {
	Log *slog.Logger
	// SkipLoadBalancer leaves haproxy alone (unit tests, as UpOptions).
	SkipLoadBalancer bool
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidateCheckpointName refuses a name that is not a DNS label: it becomes
// a snapshot name and a directory name.
func ValidateCheckpointName(name string) error {
	if !dnsLabel.MatchString(name) {
		return fmt.Errorf("checkpoint name %q is not a DNS label: use 1 to 63 lowercase letters, digits and '-', starting and ending with a letter or digit (e.g. before-08)", name)
	}
	return nil
}

func snapshotDescription(s *spec.Spec, labUUID, name string) string {
	return fmt.Sprintf("bootlab checkpoint=%s lab=%s uuid=%s", name, s.Name, labUUID)
}

// ourCheckpoint returns the checkpoint name a snapshot of this lab's domain
// carries, or "" when bootlab did not take it for this lab.
func ourCheckpoint(s *spec.Spec, labUUID string, sn hypervisor.Snapshot) string {
	if !strings.HasPrefix(sn.Name, snapshotPrefix) {
		return ""
	}
	f := map[string]string{}
	for _, kv := range strings.Fields(sn.Description) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			f[k] = v
		}
	}
	name := strings.TrimPrefix(sn.Name, snapshotPrefix)
	if !strings.HasPrefix(sn.Description, "bootlab ") || f["checkpoint"] != name || f["lab"] != s.Name || f["uuid"] != labUUID {
		return ""
	}
	return name
}

// SaveOptions tune SaveCheckpoint.
type SaveOptions struct {
	// Nodes limits the checkpoint to these nodes (spec names, e.g.
	// "bootstrap"); empty means every node. Only their console logs are
	// carried: restore must not rewind the log of a node it does not revert.
	Nodes []string
	// Replace deletes a checkpoint of the same name first (stage run's
	// automatic before-NN) instead of refusing the name.
	Replace bool
	// Log gets the debug lines (where the time went); nil: none.
	Log *slog.Logger
}

// SaveCheckpoint snapshots the nodes opts names (every node by default)
// and copies the lab files into the checkpoint's directory. A name in use
// is refused unless opts.Replace; on failure the snapshots already taken
// are deleted again.
func SaveCheckpoint(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, name string, opts SaveOptions) (*Checkpoint, error) {
	if err := ValidateCheckpointName(name); err != nil {
		return nil, err
	}
	phases := timing.Start(opts.Log, "checkpoint save")
	r, unlock, err := lockedLabRun(hv, s, opts.Log, false)
	defer unlock()
	if err != nil {
		return nil, err
	}
	doms, err := r.checkpointDomains(ctx, opts.Nodes)
	if err != nil {
		return nil, err
	}
	dir := labdir.Checkpoint(s, name)
	if err := r.freeCheckpointName(ctx, doms, name, dir, opts.Replace); err != nil {
		return nil, err
	}
	phases.Mark("lock and look up")
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("create checkpoint directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range labdir.CheckpointEntries() {
		if err := copyTree(filepath.Join(s.LabDir, f), filepath.Join(tmp, f)); err != nil {
			return nil, fmt.Errorf("checkpoint %s: copy %s: %w", name, f, err)
		}
	}
	if err := r.saveConsoleLogs(ctx, filepath.Join(tmp, consoleDir), opts.Nodes); err != nil {
		return nil, fmt.Errorf("checkpoint %s: copy console logs: %w", name, err)
	}
	phases.Mark("copy lab files and console logs")

	sx, err := (&libvirtxml.DomainSnapshot{Name: snapshotPrefix + name, Description: snapshotDescription(s, r.state.UUID, name)}).Marshal()
	if err != nil {
		return nil, err
	}
	meta := checkpointMeta{Name: name, Lab: s.Name, LabUUID: r.state.UUID, Created: time.Now().UTC(), Nodes: map[string]string{}}
	for _, d := range doms {
		meta.Nodes[d.Name] = "shutoff"
		if d.Active {
			meta.Nodes[d.Name] = "running"
		}
	}
	if err := r.snapshotAll(ctx, doms, name, sx); err != nil {
		return nil, err
	}
	phases.Mark(fmt.Sprintf("snapshots of %d nodes (memory and disk)", len(doms)))
	data, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "checkpoint.json"), data, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", name, err)
	}
	phases.Mark("write checkpoint.json")
	return &Checkpoint{Name: name, Created: meta.Created, Nodes: meta.Nodes}, nil
}

// checkpointDomains are the lab's domains a checkpoint takes: nodes' when
// named, else all; none is an error.
func (r *labRun) checkpointDomains(ctx context.Context, nodes []string) ([]hypervisor.Object, error) {
	doms, err := r.ourDomains(ctx)
	if err != nil {
		return nil, err
	}
	if len(nodes) > 0 {
		if doms, err = onlyNodes(r.s, doms, nodes); err != nil {
			return nil, err
		}
	}
	if len(doms) == 0 {
		return nil, fmt.Errorf("lab %s has no VMs to checkpoint: run `bootlab lab up` first", r.s.Name)
	}
	return doms, nil
}

// freeCheckpointName refuses a checkpoint name in use (its directory, or
// a snapshot of that name an interrupted save left), or with replace
// deletes the old checkpoint first.
func (r *labRun) freeCheckpointName(ctx context.Context, doms []hypervisor.Object, name, dir string, replace bool) error {
	if replace {
		if _, err := r.deleteCheckpointSnapshots(ctx, func(n string) bool { return n == name }); err != nil {
			return fmt.Errorf("replace checkpoint %s: %w", name, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("replace checkpoint %s: %w", name, err)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("checkpoint %s of lab %s exists: restore it, or delete it first (bootlab lab checkpoint delete %s)", name, r.s.Name, name)
	}
	for _, d := range doms {
		snaps, err := r.hv.Snapshots(ctx, d.Name)
		if err != nil {
			return err
		}
		for _, sn := range snaps {
			if sn.Name == snapshotPrefix+name {
				return fmt.Errorf("domain %s already has a snapshot %s (left by an interrupted save?): delete it with `bootlab lab checkpoint delete %s`", d.Name, sn.Name, name)
			}
		}
	}
	return nil
}

// snapshotAll snapshots every domain as checkpoint name, all at once: each
// pauses while its memory is written, so the nodes' clocks and
// conversations stop at nearly the same moment. On failure the snapshots
// taken are deleted again.
func (r *labRun) snapshotAll(ctx context.Context, doms []hypervisor.Object, name, sx string) error {
	var taken []string
	var mu sync.Mutex
	_, err := parallel(ctx, doms, parallelism, func(ctx context.Context, d hypervisor.Object) (bool, error) {
		if err := r.hv.CreateSnapshot(ctx, d.Name, sx); err != nil {
			return false, err
		}
		mu.Lock()
		taken = append(taken, d.Name)
		mu.Unlock()
		return true, nil
	})
	if err == nil {
		return nil
	}
	for _, dn := range taken {
		// Without ctx: an interrupted save still cleans up what it made.
		if derr := r.hv.DeleteSnapshot(context.WithoutCancel(ctx), dn, snapshotPrefix+name); derr != nil {
			r.log.Warn("could not delete a snapshot of the failed checkpoint", "domain", dn, "err", derr)
		}
	}
	return fmt.Errorf("checkpoint %s: %w", name, err)
}

// onlyNodes keeps the domains of the named nodes, refusing a name the lab
// has no VM for.
func onlyNodes(s *spec.Spec, doms []hypervisor.Object, nodes []string) ([]hypervisor.Object, error) {
	var out []hypervisor.Object
	for _, n := range nodes {
		want := s.DomainName(spec.Node{Name: n})
		found := false
		for _, d := range doms {
			if d.Name == want {
				out = append(out, d)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("lab %s has no VM %s to checkpoint (node %s): `bootlab lab status` shows its nodes", s.Name, want, n)
		}
	}
	return out, nil
}

// RestoreCheckpoint reverts every node the checkpoint holds (disks, memory, run
// state), puts the lab files back as they were, and makes the load balancer
// match the restored state. What the checkpoint does not cover stays as it
// is now: the lab's identity, the network and pool, the host DNS set-up.
func RestoreCheckpoint(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, name string, opts RestoreOptions) (*Checkpoint, error) {
	if err := ValidateCheckpointName(name); err != nil {
		return nil, err
	}
	if err := requireOwned(s); err != nil {
		return nil, err
	}
	phases := timing.Start(opts.Log, "checkpoint restore")
	r, unlock, err := lockedLabRun(hv, s, opts.Log, false)
	defer unlock()
	if err != nil {
		return nil, err
	}
	cp, doms, err := r.restorable(ctx, name)
	if err != nil {
		return nil, err
	}
	phases.Mark("lock and look up")
	restored := &labdir.RestoreRecord{Checkpoint: name, Started: time.Now().UTC()}
	if _, err := parallel(ctx, doms, parallelism, func(ctx context.Context, d string) (bool, error) {
		return true, hv.RevertSnapshot(ctx, d, snapshotPrefix+name)
	}); err != nil {
		return nil, fmt.Errorf("restore checkpoint %s: %w", name, err)
	}
	restored.Finished = time.Now().UTC()
	phases.Mark(fmt.Sprintf("revert %d nodes (memory and disk)", len(doms)))

	dir := labdir.Checkpoint(s, name)
	for _, f := range labdir.CheckpointEntries() {
		dst := filepath.Join(s.LabDir, f)
		if err := os.RemoveAll(dst); err != nil {
			return nil, fmt.Errorf("restore checkpoint %s: %w", name, err)
		}
		if err := copyTree(filepath.Join(dir, f), dst); err != nil {
			return nil, fmt.Errorf("restore checkpoint %s: copy %s back: %w", name, f, err)
		}
	}
	// After the revert: lines the broken run wrote later must not follow
	// the checkpoint's (a resumed node's next report continues from it).
	if err := r.restoreConsoleLogs(ctx, filepath.Join(dir, consoleDir)); err != nil {
		return nil, fmt.Errorf("restore checkpoint %s: console logs: %w", name, err)
	}
	phases.Mark("copy lab files and console logs back")
	// The checkpoint's state, but the identity and the objects that exist
	// now (the checkpoint did not roll them back) as they are.
	now := r.state
	st, err := labdir.LoadState(s.LabDir)
	if err != nil {
		return nil, fmt.Errorf("restore checkpoint %s: %w", name, err)
	}
	st.Name, st.UUID = now.Name, now.UUID
	st.NetworkUUID, st.PoolUUID, st.HostDNS = now.NetworkUUID, now.PoolUUID, now.HostDNS
	st.Restored = restored
	// Every node now runs as the checkpoint left it: no reset is pending.
	st.Resets = nil
	if err := st.Save(s.LabDir); err != nil {
		return nil, err
	}
	phases.Mark("state")
	if r.caps.HostNetwork && !opts.SkipLoadBalancer {
		spec := s
		if st.Spec != nil {
			spec = st.Spec
		}
		if _, err := loadbalancer.Ensure(ctx, loadbalancer.LabConfigOn(r.host, spec, st.BootstrapRemoved), r.log); err != nil {
			return nil, fmt.Errorf("restore checkpoint %s: load balancer: %w", name, err)
		}
		phases.Mark("load balancer")
	}
	return cp, nil
}

// restorable finds checkpoint name and its domains, sorted, refusing one
// that does not exist or misses a part.
func (r *labRun) restorable(ctx context.Context, name string) (*Checkpoint, []string, error) {
	cps, err := r.checkpoints(ctx)
	if err != nil {
		return nil, nil, err
	}
	var cp *Checkpoint
	for i := range cps {
		if cps[i].Name == name {
			cp = &cps[i]
		}
	}
	if cp == nil {
		return nil, nil, fmt.Errorf("lab %s has no checkpoint %s: `bootlab lab checkpoint list` shows them", r.s.Name, name)
	}
	if len(cp.Missing) > 0 {
		return nil, nil, fmt.Errorf("checkpoint %s of lab %s is incomplete (missing: %s) and cannot be restored: delete it (bootlab lab checkpoint delete %s)",
			name, r.s.Name, strings.Join(cp.Missing, ", "), name)
	}
	doms := make([]string, 0, len(cp.Nodes))
	for d := range cp.Nodes {
		doms = append(doms, d)
	}
	sort.Strings(doms)
	return cp, doms, nil
}
