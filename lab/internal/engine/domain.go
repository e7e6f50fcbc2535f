package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/lab/labdir"
)

// ignitionDigests hashes the probe lab's Ignition files (absent files are
// left out: the profile's preparer has not written one). Every node gets
// the digest of the whole set: a master serves what it fetched from the
// bootstrap at boot, so a change to any node's config (a node added) means
// every node reads its config again.
func ignitionDigests(s *spec.Spec) map[string]string {
	if s.Profile != spec.ProfileProbe {
		// A real node reads its Ignition once, at first boot: a later change
		// is nothing to restart for.
		return nil
	}
	h := sha256.New()
	found := false
	for _, n := range s.Nodes {
		data, err := os.ReadFile(labdir.Ignition(s, n))
		if err != nil {
			continue
		}
		found = true
		fmt.Fprintf(h, "%s %d\n", n.Name, len(data))
		h.Write(data)
	}
	if !found {
		return nil
	}
	sum := hex.EncodeToString(h.Sum(nil)[:8])
	out := map[string]string{}
	for _, n := range s.Nodes {
		out[n.Name] = sum
	}
	return out
}

// withDomainUUID sets uuid in a planned domain definition: libvirt refuses
// to redefine a domain under a definition without its UUID.
func withDomainUUID(domainXML, uuid string) (string, error) {
	var d libvirtxml.Domain
	if err := d.Unmarshal(domainXML); err != nil {
		return "", fmt.Errorf("parse planned domain XML: %w", err)
	}
	d.UUID = uuid
	return d.Marshal()
}

// ownsUUID says whether a domain's metadata is this lab's by UUID. Domains
// made before labs had UUIDs carry none and are told apart by name alone.
func (r *labRun) ownsUUID(md *plan.Metadata) bool {
	return md.LabUUID == "" || md.LabUUID == r.state.UUID
}

// ownDomain checks that an existing domain is this lab's node.
func (r *labRun) ownDomain(o *hypervisor.Object, node string) error {
	md := plan.ParseLabMetadata(o.XML)
	if md == nil || md.Name != r.s.Name || md.Node != node {
		return fmt.Errorf("domain %s exists but is not node %s of lab %s (no matching bootlab metadata): remove it or choose another lab name", o.Name, node, r.s.Name)
	}
	if !r.ownsUUID(md) {
		return fmt.Errorf("domain %s belongs to another lab named %s (lab UUID %s; this lab directory, %s, records %q): that lab has another lab directory; remove it with `bootlab lab down` and that lab's spec, or choose another lab name", o.Name, r.s.Name, md.LabUUID, r.s.LabDir, r.state.UUID)
	}
	return nil
}

// ensureDomains defines, redefines and starts the planned domains. They
// start paused and run together once all have started: a guest booting
// under TCG takes a core from the QEMUs libvirt is still starting (six
// probe nodes: 1.0 s from the first start to the last resume, against
// 1.3 s started running; docs/benchmarks.md, twenty-fifth round). A domain
// found paused (an up stopped between the two, or `virsh suspend`) runs
// again too: up leaves every node it started running.
func (r *labRun) ensureDomains(ctx context.Context, doms []plan.DomainPlan, deferred map[spec.Role]bool) (string, error) {
	var mu sync.Mutex
	var details []string
	var paused []plan.DomainPlan
	note := func(s string) { mu.Lock(); details = append(details, s); mu.Unlock() }
	toResume := func(d plan.DomainPlan) { mu.Lock(); paused = append(paused, d); mu.Unlock() }
	ss := r.savedStarter(ctx)
	_, err := parallel(ctx, doms, parallelism, func(ctx context.Context, d plan.DomainPlan) (bool, error) {
		restarted := false
		o, err := r.hv.LookupDomain(ctx, d.Name)
		switch {
		case errors.Is(err, hypervisor.ErrNotFound):
			began := time.Now()
			if o, err = r.hv.DefineDomain(ctx, d.XML); err != nil {
				return false, err
			}
			timing.Log(r.log, "nodes", d.Node.Name+" define", time.Since(began))
			note(d.Node.Name + " defined")
		case err != nil:
			return false, err
		default:
			if err := r.ownDomain(o, d.Node.Name); err != nil {
				return false, err
			}
			if md := plan.ParseLabMetadata(o.XML); md.Plan != d.Digest {
				if o, restarted, err = r.redefineDomain(ctx, o, d, note); err != nil {
					return false, err
				}
			}
		}
		if !o.Active && deferred[d.Node.Role] {
			r.deferredOff.Add(1)
		}
		if o.Active && o.Paused {
			toResume(d)
			note(d.Node.Name + " resumed (it was paused)")
		}
		if !o.Active && !deferred[d.Node.Role] {
			began := time.Now()
			how, err := r.startPaused(ctx, ss, d)
			if err != nil {
				return false, err
			}
			timing.Log(r.log, "nodes", d.Node.Name+" start", time.Since(began))
			toResume(d)
			if !restarted {
				note(d.Node.Name + " started" + how)
			}
		}
		return true, nil
	})
	// Resumed even when another node failed to start: a failed up leaves
	// its started nodes running, as it did when they started running.
	if rerr := r.resumeDomains(ctx, paused); err == nil {
		err = rerr
	}
	if err == nil {
		var removed string
		removed, err = r.staleDomains(ctx, doms)
		if removed != "" {
			details = append(details, removed)
		}
	}
	sort.Strings(details)
	return strings.Join(details, ", "), err
}

// redefineDomain gives the existing domain o its changed definition d. A
// running probe node keeps nothing on disk: it is powered off (restarted
// says so) for its caller to start again, so the new definition (kernel,
// initrd, size) takes effect now; a real node takes it at its next boot.
func (r *labRun) redefineDomain(ctx context.Context, o *hypervisor.Object, d plan.DomainPlan, note func(string)) (*hypervisor.Object, bool, error) {
	x, err := withDomainUUID(d.XML, o.UUID)
	if err != nil {
		return nil, false, err
	}
	wasActive := o.Active
	if o, err = r.hv.DefineDomain(ctx, x); err != nil {
		return nil, false, fmt.Errorf("redefine node %s: %w", d.Node.Name, err)
	}
	o.Active = wasActive
	switch {
	case !wasActive:
		note(d.Node.Name + " redefined")
	case r.s.Profile == spec.ProfileProbe:
		if err := r.hv.DestroyDomain(ctx, d.Name); err != nil {
			return nil, false, fmt.Errorf("restart node %s: %w", d.Node.Name, err)
		}
		again := ""
		if r.s.Rehearsal() && d.Node.Role == spec.RoleBootstrap {
			again = " (a new boot: its stages start again from 01)"
		}
		note(d.Node.Name + " redefined and restarted" + again)
		o.Active, o.Paused = false, false
		return o, true, nil
	default:
		note(d.Node.Name + " redefined (takes effect at its next boot: `virsh reboot " + d.Name + "`)")
	}
	return o, false, nil
}

// resumeDomains runs the vCPUs of the paused domains.
func (r *labRun) resumeDomains(ctx context.Context, doms []plan.DomainPlan) error {
	_, err := parallel(ctx, doms, parallelism, func(ctx context.Context, d plan.DomainPlan) (bool, error) {
		began := time.Now()
		if err := r.hv.ResumeDomain(ctx, d.Name); err != nil {
			return false, fmt.Errorf("node %s started paused and did not resume (`bootlab lab up` again resumes it): %w", d.Node.Name, err)
		}
		timing.Log(r.log, "nodes", d.Node.Name+" resume", time.Since(began))
		return true, nil
	})
	return err
}

// staleDomains handles this lab's domains the spec no longer has (nodes
// removed from it): their DHCP, DNS and load balancer entries are gone. A
// probe node keeps nothing, so it is removed with its disk; a real node may
// hold a cluster member's data, so up leaves it and says how to remove it.
func (r *labRun) staleDomains(ctx context.Context, doms []plan.DomainPlan) (string, error) {
	want := map[string]bool{}
	for _, d := range doms {
		want[d.Name] = true
	}
	ours, err := r.ourDomains(ctx)
	if err != nil {
		return "", err
	}
	var stale []string
	for _, o := range ours {
		if !want[o.Name] {
			stale = append(stale, strings.TrimPrefix(o.Name, r.s.DomainPrefix()))
		}
	}
	if len(stale) == 0 {
		return "", nil
	}
	sort.Strings(stale)
	if r.s.Profile != spec.ProfileProbe || r.state.BootstrapRemoved && len(stale) == 1 && stale[0] == "bootstrap" {
		r.log.Warn("nodes no longer in the spec are left as they are, without DHCP, DNS or load balancer entries: put them back in the spec, or remove each with `virsh destroy bootlab-"+r.s.Name+"-NODE; virsh undefine bootlab-"+r.s.Name+"-NODE` (its disk stays in pool "+r.s.PoolName()+")", "nodes", strings.Join(stale, ","))
		return "", nil
	}
	for _, name := range stale {
		if err := r.removeNode(ctx, name); err != nil {
			return "", err
		}
	}
	return "removed " + strings.Join(stale, ", ") + " (no longer in the spec)", nil
}

// StartNodes starts the defined but stopped domains of role (workers
// deferred by `up` until the control plane is ready), under the lab's lock.
func StartNodes(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, role spec.Role) error {
	r, unlock, err := lockedLabRun(hv, s, nil, false)
	defer unlock()
	if err != nil {
		return err
	}
	nodes := s.NodesByRole(role)
	_, err = parallel(ctx, nodes, parallelism, func(ctx context.Context, n spec.Node) (bool, error) {
		o, err := hv.LookupDomain(ctx, s.DomainName(n))
		if errors.Is(err, hypervisor.ErrNotFound) {
			return false, fmt.Errorf("node %s has no domain: run `bootlab lab up` first", n.Name)
		}
		if err != nil {
			return false, err
		}
		if err := r.ownDomain(o, n.Name); err != nil {
			return false, err
		}
		if o.Active {
			return false, nil
		}
		return true, hv.StartDomain(ctx, o.Name)
	})
	return err
}

// RemoveNode powers off and undefines node name's domain and deletes its
// overlay (the bootstrap after the pivot, say), under the lab's lock.
func RemoveNode(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, name string) error {
	_, err := removeNode(ctx, hv, s, name, false)
	return err
}

// removeNode is RemoveNode, or on a dry run what it would remove, by the
// same steps over a hypervisor that records instead of removing.
func removeNode(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, name string, dryRun bool) ([]Change, error) {
	if _, ok := s.Node(name); !ok {
		return nil, fmt.Errorf("no node %q in lab %s (see `bootlab lab status`)", name, s.Name)
	}
	r, unlock, err := labRunFor(hv, s, nil, false, dryRun)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if err := r.removeNode(ctx, name); err != nil {
		return nil, err
	}
	if r.plan != nil {
		return r.plan.changes, nil
	}
	return nil, nil
}

// removeNode powers off and undefines this lab's node name and deletes its
// overlay, whether or not the spec still lists it.
func (r *labRun) removeNode(ctx context.Context, name string) error {
	n := spec.Node{Name: name}
	o, err := r.hv.LookupDomain(ctx, r.s.DomainName(n))
	switch {
	case errors.Is(err, hypervisor.ErrNotFound):
	case err != nil:
		return err
	default:
		if err := r.ownDomain(o, name); err != nil {
			return err
		}
		if o.Active {
			if err := r.hv.DestroyDomain(ctx, o.Name); err != nil {
				return err
			}
		}
		// A transient domain (a saved-start template) is gone once stopped.
		if err := r.hv.UndefineDomain(ctx, o.Name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			return err
		}
	}
	if p, err := r.hv.LookupPool(ctx, r.s.PoolName()); err == nil && p.UUID == r.state.PoolUUID {
		if err := r.hv.DeleteVolume(ctx, r.s.PoolName(), r.s.VolumeName(n)); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			return err
		}
	}
	return nil
}
