package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// DownOptions tune Down.
type DownOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// KeepImages keeps the imported base image (the pool directory and its
	// base volume file) so the next `up` does not upload it again.
	KeepImages bool
	// DryRun removes nothing (libvirt, haproxy, files, state): PlanDown
	// returns what Down would remove, decided by the same steps.
	DryRun bool
}

// Down removes exactly what this lab created, in reverse order: its
// domains (found by bootlab metadata), the load balancer, the volumes and
// pool and the network (found by name and the UUIDs in the lab state), then
// the host files it wrote. It works after a half-failed `up` and never
// touches an object that is not this lab's. The steps say what each
// removed: none Changed means there was nothing of this lab to remove.
func Down(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, opts DownOptions) ([]StepResult, error) {
	res, _, err := downRun(ctx, hv, s, opts)
	return res, err
}

// PlanDown is what Down would remove, in order, removing nothing: Down's
// own steps over a hypervisor that records instead of deleting.
func PlanDown(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, opts DownOptions) ([]Change, error) {
	opts.DryRun = true
	_, changes, err := downRun(ctx, hv, s, opts)
	return changes, err
}

func downRun(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, opts DownOptions) ([]StepResult, []Change, error) {
	r, unlock, err := labRunFor(hv, s, opts.Log, false, opts.DryRun)
	defer unlock()
	if err != nil {
		return nil, nil, err
	}
	steps := []step{
		{"Deleting nodes", r.deleteDomains},
	}
	if len(portFaultsSet(s)) > 0 {
		// A port block's filter outlives the domain that referenced it.
		steps = append(steps, step{"Removing the network filters of the faults set", r.removeFaultFilters})
	}
	if r.caps.HostNetwork {
		steps = append(steps, step{"Stopping load balancer", func(ctx context.Context) (string, error) {
			// Its pid file and socket are removed too: only from a
			// directory that is provably this lab's.
			if owned, err := r.hostDirOwned(ctx); err != nil || !owned {
				return "", err
			}
			c := loadbalancer.LabConfigOn(r.host, s, r.state.BootstrapRemoved)
			if _, err := r.host.ReadFile(ctx, c.PIDPath()); errors.Is(err, os.ErrNotExist) {
				return "", nil
			}
			if r.plan != nil {
				r.plan.note("stop", "loadBalancer", "haproxy on "+s.Network.APIAddress, "")
				return "stopped", nil
			}
			if err := loadbalancer.Stop(ctx, c); err != nil {
				return "", fmt.Errorf("stop load balancer: %w", err)
			}
			return "stopped", nil
		}})
	}
	steps = append(steps,
		step{"Deleting storage pool " + s.PoolName(), func(ctx context.Context) (string, error) { return r.deletePool(ctx, opts.KeepImages) }},
		step{"Deleting network " + s.NetworkName(), r.deleteNetwork},
	)
	// The files on a remote machine go first: their proof of ownership
	// starts with the lab state, which the last step removes.
	if r.host.Remote() && r.caps.RunsGuests {
		steps = append(steps, step{"Removing lab files on " + r.host.Name() + " in " + labdir.HostDir(s), r.removeHostFiles})
	}
	steps = append(steps, step{"Removing lab files in " + s.LabDir, func(ctx context.Context) (string, error) { return r.removeFiles(opts.KeepImages) }})
	res, err := runSteps(ctx, opts.Status, r.log, steps)
	if r.plan != nil {
		return res, sortedDownChanges(r.plan.changes), err
	}
	return res, nil, err
}

// sortedDownChanges orders a plan of down the way down removes: each
// domain (stopped, its snapshots, itself; down removes domains in
// parallel, a plan reads in one order), then the rest in step order.
func sortedDownChanges(cs []Change) []Change {
	out := append([]Change(nil), cs...)
	isDomain := func(c Change) bool { return c.Kind == "domain" || c.Kind == "snapshot" }
	node := func(c Change) string { n, _, _ := strings.Cut(c.Name, "/"); return n }
	step := func(c Change) int {
		switch {
		case c.Action == "stop":
			return 0
		case c.Kind == "snapshot":
			return 1
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !isDomain(a) || !isDomain(b) {
			return isDomain(a) && !isDomain(b)
		}
		if node(a) != node(b) {
			return node(a) < node(b)
		}
		return step(a) < step(b)
	})
	return out
}

// hostDirOwned says whether the lab's directory on the hypervisor's
// machine is this lab's: the lab directory holds the lab's state and, on
// a remote machine, the host directory holds the marker naming the lab
// (written when bootlab made it).
func (r *labRun) hostDirOwned(ctx context.Context) (bool, error) {
	st, ok := labdir.Owned(r.s)
	if !ok || !r.host.Remote() {
		return ok, nil
	}
	if st.UUID == "" {
		return false, nil
	}
	owned, err := hostMarked(ctx, r.host, r.s, st.UUID)
	var notOurs *labdir.NotOursError
	if !owned && (err == nil || errors.As(err, &notOurs)) {
		r.log.Warn("leaving the lab's host directory: it has no marker of this lab", "host", r.host.Name(), "dir", labdir.HostDir(r.s))
		return false, nil
	}
	return owned, err
}

// removeHostFiles removes what bootlab wrote on a remote hypervisor's
// machine: the console logs and the load balancer's directory, then its
// marker and the lab's host directory when nothing else is left in it.
// A host directory without this lab's marker is left as it is.
func (r *labRun) removeHostFiles(ctx context.Context) (string, error) {
	if owned, err := r.hostDirOwned(ctx); err != nil || !owned {
		return "", err
	}
	dir := labdir.HostDir(r.s)
	if r.plan != nil {
		r.plan.note("remove", "hostDir", r.host.Name()+":"+dir, "the lab's console logs and load balancer files")
		return "planned", nil
	}
	quoted := []string{sshc.Quote(dir + "/" + hostMarker)}
	for _, p := range labdir.HostEntries(r.s) {
		quoted = append(quoted, sshc.Quote(p))
	}
	cmd := fmt.Sprintf("[ -d %[1]s ] || exit 0; rm -rf -- %[2]s && rmdir -- %[1]s 2>/dev/null; echo removed",
		sshc.Quote(dir), strings.Join(quoted, " "))
	out, err := host.Output(ctx, r.host, cmd)
	if err != nil {
		return "", fmt.Errorf("remove lab files on %s: %w", r.host.Name(), err)
	}
	return strings.TrimSpace(out), nil
}

// ourDomains lists this lab's domains: named bootlab-<lab>-* and carrying
// bootlab metadata naming this lab.
func (r *labRun) ourDomains(ctx context.Context) ([]hypervisor.Object, error) {
	all, err := r.hv.Domains(ctx)
	if err != nil {
		return nil, err
	}
	prefix := r.s.DomainPrefix()
	var out []hypervisor.Object
	for _, o := range all {
		if !strings.HasPrefix(o.Name, prefix) {
			continue
		}
		md := plan.ParseLabMetadata(o.XML)
		if md == nil || md.Name != r.s.Name || prefix+md.Node != o.Name {
			r.log.Warn("leaving domain without this lab's bootlab metadata", "domain", o.Name)
			continue
		}
		if !r.ownsUUID(md) {
			r.log.Warn("leaving domain of another lab with the same name (its lab directory is elsewhere)", "domain", o.Name, "labUUID", md.LabUUID)
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

func (r *labRun) deleteDomains(ctx context.Context) (string, error) {
	doms, err := r.ourDomains(ctx)
	if err != nil {
		return "", err
	}
	n, err := parallel(ctx, doms, parallelism, func(ctx context.Context, o hypervisor.Object) (bool, error) {
		node := strings.TrimPrefix(o.Name, r.s.DomainPrefix())
		if o.Active {
			began := time.Now()
			if err := r.hv.DestroyDomain(ctx, o.Name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
				return false, err
			}
			timing.Log(r.log, "nodes", node+" destroy", time.Since(began))
		}
		began := time.Now()
		// libvirt refuses to undefine a domain that has snapshots: its
		// checkpoints (and any other snapshot of this, our, domain) go first.
		snaps, err := r.hv.Snapshots(ctx, o.Name)
		if err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			return false, err
		}
		for _, sn := range snaps {
			if err := r.hv.DeleteSnapshot(ctx, o.Name, sn.Name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
				return false, err
			}
		}
		if err := r.hv.UndefineDomain(ctx, o.Name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			return false, err
		}
		timing.Log(r.log, "nodes", node+" undefine", time.Since(began))
		return true, nil
	})
	if n > 0 {
		return fmt.Sprintf("%d deleted", n), err
	}
	return "", err
}

func (r *labRun) deletePool(ctx context.Context, keepImages bool) (string, error) {
	name := r.s.PoolName()
	o, err := r.hv.LookupPool(ctx, name)
	if errors.Is(err, hypervisor.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if r.state.PoolUUID == "" || o.UUID != r.state.PoolUUID {
		r.log.Warn("leaving storage pool this lab did not create", "pool", name, "uuid", o.UUID)
		return "", nil
	}
	var did []string
	vols, err := r.poolVolumes(ctx, o)
	if err != nil {
		return "", err
	}
	var doomed []hypervisor.Volume
	kept, foreign := false, 0
	for _, v := range vols {
		switch {
		case !ownVolume(v.Name, r.s, r.state.Spec):
			// Not a name bootlab gives: someone put it there. It stays,
			// and so does the pool's directory.
			r.log.Warn("leaving a file bootlab did not make in the pool directory", "volume", v.Name, "dir", r.s.Storage.PoolDir)
			foreign++
		case keepImages && v.Name == r.s.BaseVolumeName():
			kept = true
		default:
			doomed = append(doomed, v)
		}
	}
	n, err := parallel(ctx, doomed, parallelism, func(ctx context.Context, v hypervisor.Volume) (bool, error) {
		if err := r.hv.DeleteVolume(ctx, name, v.Name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return "", err
	}
	if n > 0 {
		did = append(did, fmt.Sprintf("%d volumes deleted", n))
	}
	if err := r.hv.DestroyPool(ctx, name); err != nil {
		return "", err
	}
	switch {
	case foreign > 0:
		did = append(did, fmt.Sprintf("directory %s kept: it holds %d files bootlab did not make", r.s.Storage.PoolDir, foreign))
	case kept:
		did = append(did, "base image kept")
	default:
		if err := r.hv.DeletePool(ctx, name); err != nil && !errors.Is(err, hypervisor.ErrUnsupported) {
			return "", err
		}
	}
	if err := r.hv.UndefinePool(ctx, name); err != nil {
		return "", err
	}
	if err := r.record(func(st *labdir.State) { st.PoolUUID = "" }); err != nil {
		return "", err
	}
	return strings.Join(append(did, "pool deleted"), ", "), nil
}

// poolVolumes lists the volumes of pool o, starting it if needed: volumes
// can only be listed and deleted in an active pool. A dry run starts
// nothing and plans the removal of the volumes of the pool bootlab made.
func (r *labRun) poolVolumes(ctx context.Context, o *hypervisor.Object) ([]hypervisor.Volume, error) {
	if !o.Active && r.plan != nil {
		r.plan.note("remove", "volume", o.Name+"/*", "every volume of the inactive pool that bootlab made")
		return nil, nil
	}
	if !o.Active {
		if err := r.hv.StartPool(ctx, o.Name); err != nil {
			return nil, err
		}
	}
	return r.hv.Volumes(ctx, o.Name)
}

func (r *labRun) deleteNetwork(ctx context.Context) (string, error) {
	name := r.s.NetworkName()
	o, err := r.hv.LookupNetwork(ctx, name)
	if errors.Is(err, hypervisor.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if r.state.NetworkUUID == "" || o.UUID != r.state.NetworkUUID {
		r.log.Warn("leaving network this lab did not create", "network", name, "uuid", o.UUID)
		return "", nil
	}
	if o.Active {
		if err := r.hv.DestroyNetwork(ctx, name); err != nil {
			return "", err
		}
	}
	if err := r.hv.UndefineNetwork(ctx, name); err != nil {
		return "", err
	}
	if err := r.record(func(st *labdir.State) { st.NetworkUUID = "" }); err != nil {
		return "", err
	}
	return "deleted", nil
}

func (r *labRun) removeFiles(keepImages bool) (string, error) {
	if _, ok := labdir.Owned(r.s); !ok {
		// No state of this lab: the directory is not the lab's (never built
		// here, or someone else's), and nothing in it is removed.
		return "", nil
	}
	removed := 0
	for _, f := range labdir.Entries() {
		p := filepath.Join(r.s.LabDir, f)
		if keepImages && p == labdir.BaseImageMarker(r.s) {
			continue
		}
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		removed++
		if r.plan != nil {
			r.plan.note("remove", "labDir", p, "")
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return "", fmt.Errorf("remove %s: %w", p, err)
		}
	}
	if r.plan != nil {
		if removed > 0 {
			return "planned", nil
		}
		return "", nil
	}
	// The lock Down holds goes too (uncounted: Down made it); the directory
	// itself goes when nothing else is left in it.
	_ = os.Remove(labdir.LockPath(r.s.LabDir))
	if entries, err := os.ReadDir(r.s.LabDir); err == nil && len(entries) == 0 {
		_ = os.Remove(r.s.LabDir)
	}
	if removed > 0 {
		return fmt.Sprintf("%d removed", removed), nil
	}
	return "", nil
}
