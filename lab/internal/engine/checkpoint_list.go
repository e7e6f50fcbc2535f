package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/lab/labdir"
)

// ListCheckpoints lists the lab's checkpoints, oldest first: every name
// found in the lab's snapshots or checkpoint directories, with what is missing.
func ListCheckpoints(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec) ([]Checkpoint, error) {
	r, err := newLabRun(hv, s, nil)
	if err != nil {
		return nil, err
	}
	return r.checkpoints(ctx)
}

func (r *labRun) checkpoints(ctx context.Context) ([]Checkpoint, error) {
	doms, err := r.ourDomains(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*Checkpoint{}
	get := func(name string) *Checkpoint {
		if byName[name] == nil {
			byName[name] = &Checkpoint{Name: name, Nodes: map[string]string{}}
		}
		return byName[name]
	}
	has := map[string]map[string]bool{} // checkpoint -> domain
	for _, d := range doms {
		snaps, err := r.hv.Snapshots(ctx, d.Name)
		if err != nil {
			return nil, err
		}
		for _, sn := range snaps {
			name := ourCheckpoint(r.s, r.state.UUID, sn)
			if name == "" {
				continue
			}
			cp := get(name)
			cp.Nodes[d.Name] = sn.State
			if cp.Created.IsZero() || sn.Created.Before(cp.Created) {
				cp.Created = sn.Created
			}
			if has[name] == nil {
				has[name] = map[string]bool{}
			}
			has[name][d.Name] = true
		}
	}
	entries, err := os.ReadDir(labdir.Checkpoints(r.s))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	withFiles := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".partial") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(labdir.Checkpoint(r.s, e.Name()), "checkpoint.json"))
		if err != nil {
			continue
		}
		var m checkpointMeta
		if err := json.Unmarshal(data, &m); err != nil || m.Name != e.Name() {
			r.log.Warn("ignoring a checkpoint directory bootlab cannot read", "dir", e.Name(), "err", err)
			continue
		}
		withFiles[m.Name] = true
		cp := get(m.Name)
		cp.Created = m.Created
		for d, state := range m.Nodes {
			cp.Nodes[d] = state
		}
	}
	out := make([]Checkpoint, 0, len(byName))
	for name, cp := range byName {
		for d := range cp.Nodes {
			if !has[name][d] {
				cp.Missing = append(cp.Missing, d)
			}
		}
		sort.Strings(cp.Missing)
		if !withFiles[name] {
			cp.Missing = append(cp.Missing, "files")
		}
		out = append(out, *cp)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// DeleteCheckpoint deletes the checkpoint's snapshot on every node and its
// directory. It finishes what an interrupted save or delete left.
func DeleteCheckpoint(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, name string) error {
	if err := ValidateCheckpointName(name); err != nil {
		return err
	}
	_, err := deleteCheckpoint(ctx, hv, s, name, false)
	return err
}

// PlanDeleteCheckpoint is what DeleteCheckpoint would remove, removing
// nothing: `lab checkpoint delete --dry-run`.
func PlanDeleteCheckpoint(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, name string) ([]Change, error) {
	if err := ValidateCheckpointName(name); err != nil {
		return nil, err
	}
	return deleteCheckpoint(ctx, hv, s, name, true)
}

func deleteCheckpoint(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, name string, dryRun bool) ([]Change, error) {
	if err := requireOwned(s); err != nil {
		return nil, err
	}
	r, unlock, err := labRunFor(hv, s, nil, false, dryRun)
	defer unlock()
	if err != nil {
		return nil, err
	}
	found, err := r.deleteCheckpointSnapshots(ctx, func(n string) bool { return n == name })
	if err != nil {
		return nil, err
	}
	dir := labdir.Checkpoint(s, name)
	for _, d := range []string{dir, dir + ".partial"} {
		if _, err := os.Stat(d); err == nil {
			found++
			if r.plan != nil {
				r.plan.note("remove", "labDir", d, "")
				continue
			}
			if err := os.RemoveAll(d); err != nil {
				return nil, fmt.Errorf("delete checkpoint %s: %w", name, err)
			}
		}
	}
	if found == 0 {
		return nil, fmt.Errorf("lab %s has no checkpoint %s: `bootlab lab checkpoint list` shows them", s.Name, name)
	}
	if r.plan != nil {
		return r.plan.changes, nil
	}
	return nil, nil
}

// deleteCheckpointSnapshots deletes this lab's checkpoint snapshots whose
// checkpoint name match accepts, and says how many it deleted.
func (r *labRun) deleteCheckpointSnapshots(ctx context.Context, match func(string) bool) (int, error) {
	doms, err := r.ourDomains(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range doms {
		snaps, err := r.hv.Snapshots(ctx, d.Name)
		if err != nil {
			return n, err
		}
		for _, sn := range snaps {
			if name := ourCheckpoint(r.s, r.state.UUID, sn); name != "" && match(name) {
				if err := r.hv.DeleteSnapshot(ctx, d.Name, sn.Name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
					return n, err
				}
				n++
			}
		}
	}
	return n, nil
}
