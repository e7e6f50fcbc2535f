package lab

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// UpOptions tune Up.
type UpOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// DeferRoles are defined but not started (StartNodes starts them later).
	DeferRoles []Role
	// SkipLoadBalancer leaves haproxy alone (always skipped on test:// URIs).
	SkipLoadBalancer bool
	// Accelerator is kvm or tcg, already chosen by ChooseAccelerator.
	Accelerator Accelerator
	// DryRun changes nothing (libvirt, haproxy, files, state): the result's
	// Changes say what up would do, decided by the same steps.
	DryRun bool
	// Class, when set, records the lab as a member of that class (with its
	// identity, before any object exists, so `class down` finds even a
	// half-built lab).
	Class string
}

// UpResult says what Up did.
type UpResult struct {
	// Changed is false when the lab already matched the spec.
	Changed bool
	// Steps lists every step with whether it changed anything.
	Steps []StepResult
	// Accelerator is the one the domains use.
	Accelerator Accelerator
	// Changes is the plan of a dry run, in order.
	Changes []Change
}

// StepResult is the outcome of one step of Up or Down.
type StepResult struct {
	Name    string
	Changed bool
	// Detail says what changed ("defined", "started", "3 created"...).
	Detail string
}

// step is one idempotent unit of Up or Down: run reports what it changed.
type step struct {
	name string
	run  func(ctx context.Context) (detail string, err error)
}

func runSteps(ctx context.Context, st *status.Status, log *slog.Logger, steps []step) ([]StepResult, error) {
	var out []StepResult
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		st.Start("%s", s.name)
		detail, err := s.run(ctx)
		if err != nil {
			st.End(false)
			// Ctrl-C kills what the step ran (haproxy's starter, say): say
			// it was interrupted, so the caller offers to resume.
			if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				err = fmt.Errorf("%s interrupted (%v): %w", s.name, err, cerr)
			}
			return out, err
		}
		st.EndDetail(true, detail)
		if detail != "" {
			log.Debug(s.name, "changed", detail)
		} else {
			log.Debug(s.name, "changed", "nothing")
		}
		out = append(out, StepResult{Name: s.name, Changed: detail != "", Detail: detail})
	}
	// An interrupt during the last step is not swallowed: the step may have
	// stopped short of some of its objects.
	return out, ctx.Err()
}

// isTestURI is true for libvirt's in-memory test driver, which runs no VMs,
// cannot upload volumes and has no dnsmasq: nothing on the host is set up for it.
func isTestURI(uri string) bool { return ClassifyURI(uri) == URITest }

// lab holds what one Up, Down or Inspect shares.
type labRun struct {
	hv Hypervisor
	// host is hv's machine (hv.Host()).
	host  host.Host
	s     *Spec
	log   *slog.Logger
	mu    sync.Mutex // guards state
	state *State
	// plan is set on a dry run: hv is the planning wrapper, nothing on the
	// host changes and the state is not written.
	plan *planningHV
}

// lockedLabRun takes the lab's lock (creating the lab directory when
// create) and reads its state: what every command that changes a lab starts
// with. unlock releases the lock; it is a no-op after an error.
func lockedLabRun(hv Hypervisor, s *Spec, log *slog.Logger, create bool) (r *labRun, unlock func(), err error) {
	unlock, err = lockLab(s, create)
	if err != nil {
		return nil, func() {}, err
	}
	if r, err = newLabRun(hv, s, log); err != nil {
		unlock()
		return nil, func() {}, err
	}
	return r, unlock, nil
}

func newLabRun(hv Hypervisor, s *Spec, log *slog.Logger) (*labRun, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := LoadState(s.LabDir)
	if errors.Is(err, ErrNoState) {
		st, err = &State{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := st.CheckIdentity(s); err != nil {
		return nil, err
	}
	return &labRun{hv: hv, host: hv.Host(), s: s, log: log, state: st}, nil
}

// record updates the state and saves it at once, so an object that exists
// is always known to `down`, even if the next step fails or is interrupted.
func (r *labRun) record(f func(st *State)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.state)
	if r.plan != nil {
		return nil // a dry run records nothing
	}
	if err := r.state.Save(r.s.LabDir); err != nil {
		return fmt.Errorf("record lab state in %s: %w", r.s.LabDir, err)
	}
	return nil
}

// Up builds (or converges) the lab of spec s: network, pool, base image,
// overlays, load balancer, domains. It is idempotent and resumes where a
// failed or interrupted run stopped.
func Up(ctx context.Context, hv Hypervisor, s *Spec, opts UpOptions) (*UpResult, error) {
	if opts.Accelerator != AccelKVM && opts.Accelerator != AccelTCG {
		return nil, fmt.Errorf("lab up: accelerator must be chosen (kvm or tcg), got %q", opts.Accelerator)
	}
	r, unlock, err := lockedLabRun(hv, s, opts.Log, !opts.DryRun)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if opts.DryRun {
		r.plan = newPlanningHV(hv)
		r.hv = r.plan
	}
	// The lab's identity is written before any object exists, so every
	// object below can carry it and `down` can always find them.
	if (r.state.UUID == "" || r.state.Name == "" || opts.Class != "" && r.state.Class != opts.Class) && !opts.DryRun {
		if err := r.record(func(st *State) {
			st.Name = s.Name
			if st.UUID == "" {
				st.UUID = newLabUUID()
			}
			if opts.Class != "" {
				st.Class = opts.Class
			}
		}); err != nil {
			return nil, err
		}
	}
	var base *ImageInfo
	if s.Image.Path != "" {
		if base, err = ReadImageInfo(s.Image.Path); err != nil {
			return nil, err
		}
	}
	boot, err := ReadBootFiles(s)
	if err != nil {
		return nil, err
	}
	var owner *VolumeOwner
	if !isTestURI(s.Libvirt.URI) {
		owner = qemuOwner(ctx, r.host)
	}
	plan, err := NewPlan(s, PlanInput{Accelerator: opts.Accelerator, Base: base, LabUUID: r.state.UUID, Ignition: ignitionDigests(s),
		Boot: boot, QEMUOwner: owner})
	if err != nil {
		return nil, err
	}
	if r.state.BootstrapRemoved && s.Profile == ProfileOpenShift {
		plan = plan.withoutRole(RoleBootstrap)
	}
	deferred := map[Role]bool{}
	for _, role := range opts.DeferRoles {
		deferred[role] = true
	}
	steps := []step{
		{"Preparing lab directory " + s.LabDir, r.prepareDirs},
		{"Creating network " + plan.Network.Name, func(ctx context.Context) (string, error) { return r.ensureNetwork(ctx, plan.Network) }},
		{"Creating storage pool " + plan.Pool.Name, func(ctx context.Context) (string, error) { return r.ensurePool(ctx, plan.Pool) }},
	}
	if plan.BaseVolume != nil {
		steps = append(steps, step{"Importing base image " + filepath.Base(s.Image.Path), func(ctx context.Context) (string, error) {
			return r.ensureBaseVolume(ctx, *plan.BaseVolume, base)
		}})
	}
	if len(plan.BootVolumes) > 0 {
		steps = append(steps, step{fmt.Sprintf("Uploading %d boot files to pool %s", len(plan.BootVolumes), plan.Pool.Name), func(ctx context.Context) (string, error) {
			return r.ensureBootVolumes(ctx, plan.BootVolumes)
		}})
	}
	steps = append(steps, step{fmt.Sprintf("Creating %d disk overlays", len(plan.Overlays)), func(ctx context.Context) (string, error) {
		return r.ensureOverlays(ctx, plan.Overlays)
	}})
	if !opts.SkipLoadBalancer && !isTestURI(s.Libvirt.URI) {
		where := ""
		if r.host.Remote() {
			where = ", on " + r.host.Name()
		}
		steps = append(steps, step{"Starting load balancer (haproxy on " + s.Network.APIAddress + where + ")", func(ctx context.Context) (string, error) {
			if r.plan != nil {
				action, err := loadbalancer.Plan(ctx, LoadBalancerOn(r.host, s, r.state.BootstrapRemoved))
				if action != "" {
					r.plan.note(action, "loadBalancer", "haproxy on "+s.Network.APIAddress, "")
				}
				return action, err
			}
			res, err := loadbalancer.Ensure(ctx, LoadBalancerOn(r.host, s, r.state.BootstrapRemoved), r.log)
			if err != nil {
				return "", fmt.Errorf("load balancer: %w", err)
			}
			switch {
			case res.Started:
				return "started", nil
			case res.Reloaded:
				return "reloaded", nil
			case res.Changed:
				return "config changed", nil
			}
			return "", nil
		}})
	}
	steps = append(steps, step{fmt.Sprintf("Creating %d nodes (%s)", len(plan.Domains), opts.Accelerator), func(ctx context.Context) (string, error) {
		detail, err := r.ensureDomains(ctx, plan.Domains, deferred)
		if err != nil || len(plan.BootVolumes) == 0 {
			return detail, err
		}
		// Only now no domain names the boot files of an earlier up.
		removed, err := r.staleBootVolumes(ctx, plan.BootVolumes)
		if removed != "" {
			detail = strings.TrimPrefix(detail+", "+removed, ", ")
		}
		return detail, err
	}})
	results, err := runSteps(ctx, opts.Status, r.log, steps)
	res := &UpResult{Steps: results, Accelerator: opts.Accelerator}
	if r.plan != nil {
		res.Changes = sortedChanges(r.plan.changes)
		res.Changed = len(res.Changes) > 0
		return res, err
	}
	for _, sr := range results {
		res.Changed = res.Changed || sr.Changed
	}
	if err != nil {
		// The state keeps the spec of the last up that succeeded: a refused
		// or failed up must not make status, verify or stage act on
		// addresses or images the lab does not have.
		return res, err
	}
	// Only now does the lab match s: record it.
	if err := r.record(func(st *State) { st.Spec = s; st.Accelerator = opts.Accelerator }); err != nil {
		return res, err
	}
	return res, nil
}

func (r *labRun) prepareDirs(ctx context.Context) (string, error) {
	created := false
	dirs := []string{r.s.LabDir}
	consoleDir := filepath.Dir(r.s.ConsoleLogPath(Node{Name: "x"}))
	if r.host.Remote() {
		// virtlogd writes the console logs on the hypervisor.
		out, err := host.Output(ctx, r.host, "test -d "+sshc.Quote(consoleDir)+" && echo present || echo absent")
		if err != nil {
			return "", fmt.Errorf("console log directory on %s: %w", r.host.Name(), err)
		}
		if strings.TrimSpace(out) != "present" {
			if r.plan != nil {
				r.plan.note("create", "hostDir", r.host.Name()+":"+consoleDir, "")
			} else {
				if _, err := host.Output(ctx, r.host, "mkdir -p -- "+sshc.Quote(consoleDir)); err != nil {
					return "", fmt.Errorf("create the console log directory (libvirt.hostDir): %w", err)
				}
				created = true
			}
		}
	} else {
		dirs = append(dirs, consoleDir)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			continue
		}
		if r.plan != nil {
			r.plan.note("create", "labDir", d, "")
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("create %s: %w (check labDir)", d, err)
		}
		created = true
	}
	if created {
		return "created", nil
	}
	return "", nil
}

// ownedNetwork checks that an existing network called like ours is ours:
// its UUID is the one recorded in the lab state.
func (r *labRun) ownedNetwork(o *Object) error {
	if r.state.NetworkUUID == o.UUID {
		return nil
	}
	return fmt.Errorf("network %s exists but this lab did not create it (UUID %s, lab state has %q): remove it (`virsh net-destroy %[1]s; virsh net-undefine %[1]s`) or choose another lab name", o.Name, o.UUID, r.state.NetworkUUID)
}

func (r *labRun) ensureNetwork(ctx context.Context, want NamedXML) (string, error) {
	var did []string
	o, err := r.hv.LookupNetwork(ctx, want.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		o, err = r.hv.DefineNetwork(ctx, want.XML)
		if err != nil {
			return "", err
		}
		if err := r.record(func(st *State) { st.NetworkUUID = o.UUID }); err != nil {
			return "", err
		}
		did = append(did, "defined")
		if err := r.hv.SetNetworkAutostart(ctx, want.Name); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	default:
		if err := r.ownedNetwork(o); err != nil {
			return "", err
		}
		edits, drift, err := networkDiff(want.XML, o.XML)
		if err != nil {
			return "", err
		}
		if drift != "" {
			return "", fmt.Errorf("network %s differs from the spec in what cannot change in place (%s): run `bootlab lab down` and `bootlab lab up` to rebuild it", want.Name, drift)
		}
		for _, e := range edits {
			if err := r.hv.UpdateNetwork(ctx, want.Name, e); err != nil {
				return "", err
			}
		}
		if len(edits) > 0 {
			did = append(did, fmt.Sprintf("%d DHCP/DNS entries updated", len(edits)))
		}
	}
	if !o.Active {
		if err := r.hv.StartNetwork(ctx, want.Name); err != nil {
			return "", err
		}
		did = append(did, "started")
	}
	return strings.Join(did, ", "), nil
}

// networkDiff compares a live network with the plan. DHCP reservations and
// DNS host records that differ come back as edits, applied to the running
// network; anything else that differs (bridge, addresses, forward mode,
// domain, DHCP range, dnsmasq options) comes back as drift, which needs the
// network rebuilt.
func networkDiff(wantXML, haveXML string) (edits []NetworkEdit, drift string, err error) {
	var want, have libvirtxml.Network
	if err := want.Unmarshal(wantXML); err != nil {
		return nil, "", fmt.Errorf("parse planned network XML: %w", err)
	}
	if err := have.Unmarshal(haveXML); err != nil {
		return nil, "", fmt.Errorf("parse network XML from libvirt: %w", err)
	}
	shape := func(n *libvirtxml.Network, withOptions bool) string {
		var b strings.Builder
		if n.Bridge != nil {
			fmt.Fprintf(&b, "bridge %s; ", n.Bridge.Name)
		}
		if n.Forward != nil {
			fmt.Fprintf(&b, "forward %s; ", n.Forward.Mode)
		}
		if n.Domain != nil {
			fmt.Fprintf(&b, "domain %s; ", n.Domain.Name)
		}
		for _, ip := range n.IPs {
			fmt.Fprintf(&b, "ip %s/%d; ", ip.Address, ip.Prefix)
			if ip.DHCP != nil {
				for _, r := range ip.DHCP.Ranges {
					fmt.Fprintf(&b, "range %s-%s; ", r.Start, r.End)
				}
			}
		}
		if withOptions && n.DnsmasqOptions != nil {
			for _, o := range n.DnsmasqOptions.Option {
				fmt.Fprintf(&b, "option %s; ", o.Value)
			}
		}
		return b.String()
	}
	// The test driver drops dnsmasq options; compare them only when kept.
	withOptions := have.DnsmasqOptions != nil
	if w, h := shape(&want, withOptions), shape(&have, withOptions); w != h {
		return nil, fmt.Sprintf("live: %sspec: %s", h, w), nil
	}

	dhcp := func(n *libvirtxml.Network) map[string]libvirtxml.NetworkDHCPHost {
		m := map[string]libvirtxml.NetworkDHCPHost{}
		for _, ip := range n.IPs {
			if ip.DHCP == nil {
				continue
			}
			for _, h := range ip.DHCP.Hosts {
				m[strings.ToLower(h.MAC)+"|"+h.Name+"|"+h.IP] = h
			}
		}
		return m
	}
	dns := func(n *libvirtxml.Network) map[string]libvirtxml.NetworkDNSHost {
		m := map[string]libvirtxml.NetworkDNSHost{}
		if n.DNS == nil {
			return m
		}
		for _, h := range n.DNS.Host {
			names := make([]string, 0, len(h.Hostnames))
			for _, hn := range h.Hostnames {
				names = append(names, hn.Hostname)
			}
			m[h.IP+"|"+strings.Join(names, ",")] = h
		}
		return m
	}
	var dels, adds []NetworkEdit
	edit := func(del bool, sec NetworkSection, v any) error {
		x, err := xml.Marshal(v)
		if err != nil {
			return err
		}
		e := NetworkEdit{Delete: del, Section: sec, XML: string(x)}
		if del {
			dels = append(dels, e)
		} else {
			adds = append(adds, e)
		}
		return nil
	}
	wd, hd := dhcp(&want), dhcp(&have)
	for _, k := range sortedKeys(hd) {
		if _, ok := wd[k]; !ok {
			if err := edit(true, NetworkDHCPHost, hd[k]); err != nil {
				return nil, "", err
			}
		}
	}
	for _, k := range sortedKeys(wd) {
		if _, ok := hd[k]; !ok {
			if err := edit(false, NetworkDHCPHost, wd[k]); err != nil {
				return nil, "", err
			}
		}
	}
	wn, hn := dns(&want), dns(&have)
	for _, k := range sortedKeys(hn) {
		if _, ok := wn[k]; !ok {
			if err := edit(true, NetworkDNSHost, hn[k]); err != nil {
				return nil, "", err
			}
		}
	}
	for _, k := range sortedKeys(wn) {
		if _, ok := hn[k]; !ok {
			if err := edit(false, NetworkDNSHost, wn[k]); err != nil {
				return nil, "", err
			}
		}
	}
	// Deletions first: a changed reservation frees its MAC and address.
	return append(dels, adds...), "", nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (r *labRun) ownedPool(o *Object) error {
	if r.state.PoolUUID == o.UUID {
		return nil
	}
	return fmt.Errorf("storage pool %s exists but this lab did not create it (UUID %s, lab state has %q): remove it (`virsh pool-destroy %[1]s; virsh pool-undefine %[1]s`) or choose another lab name", o.Name, o.UUID, r.state.PoolUUID)
}

func (r *labRun) ensurePool(ctx context.Context, want NamedXML) (string, error) {
	var did []string
	o, err := r.hv.LookupPool(ctx, want.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		o, err = r.hv.DefinePool(ctx, want.XML)
		if o != nil {
			if rerr := r.record(func(st *State) { st.PoolUUID = o.UUID }); rerr != nil {
				return "", rerr
			}
		}
		if err != nil {
			return "", err
		}
		did = append(did, "defined")
		if err := r.hv.SetPoolAutostart(ctx, want.Name); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	default:
		if err := r.ownedPool(o); err != nil {
			return "", err
		}
	}
	if !o.Active {
		if err := r.hv.StartPool(ctx, want.Name); err != nil {
			return "", err
		}
		did = append(did, "started")
	}
	return strings.Join(did, ", "), nil
}

// baseMarker records that the base volume was filled completely, so an
// upload cut short is redone and a complete one never repeated. It lives
// in the pool directory's lab-side twin: the lab directory.
func (r *labRun) baseMarker() string { return filepath.Join(r.s.LabDir, "base-image.done") }

func baseMarkerContent(s *Spec, info *ImageInfo) string {
	return fmt.Sprintf("%s %s %d\n", s.Storage.PoolDir, info.Format, info.FileSize)
}

func (r *labRun) ensureBaseVolume(ctx context.Context, want VolumePlan, info *ImageInfo) (string, error) {
	pool := r.s.PoolName()
	marker := baseMarkerContent(r.s, info)
	_, err := r.hv.LookupVolume(ctx, pool, want.Name)
	if err == nil {
		if b, rerr := os.ReadFile(r.baseMarker()); rerr == nil && string(b) == marker {
			return "", nil
		}
		if isTestURI(r.s.Libvirt.URI) {
			return "", nil
		}
		// Present but not known complete: an interrupted upload. Redo it.
		r.log.Info("base volume incomplete, importing again", "volume", want.Name)
		if err := r.hv.DeleteVolume(ctx, pool, want.Name); err != nil {
			return "", err
		}
	} else if !errors.Is(err, ErrNotFound) {
		return "", err
	}
	if _, err := r.hv.CreateVolume(ctx, pool, want.XML); err != nil {
		return "", err
	}
	if isTestURI(r.s.Libvirt.URI) {
		// The test driver cannot upload: the volume exists, empty.
		return "created (test driver: not uploaded)", nil
	}
	f, err := os.Open(r.s.Image.Path)
	if err != nil {
		return "", fmt.Errorf("open base image %s (image.path): %w", r.s.Image.Path, err)
	}
	defer f.Close()
	if err := r.hv.UploadVolume(ctx, pool, want.Name, f, info.FileSize); err != nil {
		return "", err
	}
	if r.plan != nil {
		return "planned", nil
	}
	if err := os.WriteFile(r.baseMarker(), []byte(marker), 0o644); err != nil {
		return "", fmt.Errorf("record base image import: %w", err)
	}
	return fmt.Sprintf("uploaded %d MiB", info.FileSize>>20), nil
}

// parallel runs f for each item, at most limit at a time, and returns the
// first error (every started item still runs to completion or failure; once
// ctx is done no more are started).
func parallel[T any](ctx context.Context, items []T, limit int, f func(context.Context, T) (bool, error)) (int, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		changed int
		sem     = make(chan struct{}, limit)
	)
	for _, it := range items {
		sem <- struct{}{}
		if err := ctx.Err(); err != nil {
			// Interrupted: start nothing more; what runs finishes.
			<-sem
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
			break
		}
		wg.Add(1)
		go func(it T) {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := f(ctx, it)
			mu.Lock()
			defer mu.Unlock()
			if c {
				changed++
			}
			if err != nil && first == nil {
				first = err
			}
		}(it)
	}
	wg.Wait()
	return changed, first
}

const parallelism = 8

func (r *labRun) ensureOverlays(ctx context.Context, vols []VolumePlan) (string, error) {
	pool := r.s.PoolName()
	n, err := parallel(ctx, vols, parallelism, func(ctx context.Context, v VolumePlan) (bool, error) {
		_, err := r.hv.LookupVolume(ctx, pool, v.Name)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return false, err
		}
		_, err = r.hv.CreateVolume(ctx, pool, v.XML)
		return err == nil, err
	})
	if n > 0 {
		return fmt.Sprintf("%d created", n), err
	}
	return "", err
}

// ignitionDigests hashes the probe lab's Ignition files (absent files are
// left out: the profile's preparer has not written one). Every node gets
// the digest of the whole set: a master serves what it fetched from the
// bootstrap at boot, so a change to any node's config (a node added) means
// every node reads its config again.
func ignitionDigests(s *Spec) map[string]string {
	if s.Profile != ProfileProbe {
		// A real node reads its Ignition once, at first boot: a later change
		// is nothing to restart for.
		return nil
	}
	h := sha256.New()
	found := false
	for _, n := range s.Nodes {
		data, err := os.ReadFile(s.IgnitionPath(n))
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
func (r *labRun) ownsUUID(md *Metadata) bool {
	return md.LabUUID == "" || md.LabUUID == r.state.UUID
}

// ownDomain checks that an existing domain is this lab's node.
func (r *labRun) ownDomain(o *Object, node string) error {
	md := ParseLabMetadata(o.XML)
	if md == nil || md.Name != r.s.Name || md.Node != node {
		return fmt.Errorf("domain %s exists but is not node %s of lab %s (no matching bootlab metadata): remove it or choose another lab name", o.Name, node, r.s.Name)
	}
	if !r.ownsUUID(md) {
		return fmt.Errorf("domain %s belongs to another lab named %s (lab UUID %s; this lab directory, %s, records %q): that lab has another lab directory; remove it with `bootlab lab down` and that lab's spec, or choose another lab name", o.Name, r.s.Name, md.LabUUID, r.s.LabDir, r.state.UUID)
	}
	return nil
}

func (r *labRun) ensureDomains(ctx context.Context, doms []DomainPlan, deferred map[Role]bool) (string, error) {
	var mu sync.Mutex
	var details []string
	note := func(s string) { mu.Lock(); details = append(details, s); mu.Unlock() }
	_, err := parallel(ctx, doms, parallelism, func(ctx context.Context, d DomainPlan) (bool, error) {
		restarted := false
		o, err := r.hv.LookupDomain(ctx, d.Name)
		switch {
		case errors.Is(err, ErrNotFound):
			if o, err = r.hv.DefineDomain(ctx, d.XML); err != nil {
				return false, err
			}
			note(d.Node.Name + " defined")
		case err != nil:
			return false, err
		default:
			if err := r.ownDomain(o, d.Node.Name); err != nil {
				return false, err
			}
			if md := ParseLabMetadata(o.XML); md.Plan != d.Digest {
				x, err := withDomainUUID(d.XML, o.UUID)
				if err != nil {
					return false, err
				}
				wasActive := o.Active
				if o, err = r.hv.DefineDomain(ctx, x); err != nil {
					return false, fmt.Errorf("redefine node %s: %w", d.Node.Name, err)
				}
				o.Active = wasActive
				switch {
				case !wasActive:
					note(d.Node.Name + " redefined")
				case r.s.Profile == ProfileProbe:
					// A probe node keeps nothing on disk: restart it so the
					// new definition (kernel, initrd, size) takes effect now.
					if err := r.hv.DestroyDomain(ctx, d.Name); err != nil {
						return false, fmt.Errorf("restart node %s: %w", d.Node.Name, err)
					}
					o.Active, restarted = false, true
					note(d.Node.Name + " redefined and restarted")
				default:
					note(d.Node.Name + " redefined (takes effect at its next boot: `virsh reboot " + d.Name + "`)")
				}
			}
		}
		if !o.Active && !deferred[d.Node.Role] {
			if err := r.hv.StartDomain(ctx, d.Name); err != nil {
				return false, err
			}
			if !restarted {
				note(d.Node.Name + " started")
			}
		}
		return true, nil
	})
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

// staleDomains handles this lab's domains the spec no longer has (nodes
// removed from it): their DHCP, DNS and load balancer entries are gone. A
// probe node keeps nothing, so it is removed with its disk; a real node may
// hold a cluster member's data, so up leaves it and says how to remove it.
func (r *labRun) staleDomains(ctx context.Context, doms []DomainPlan) (string, error) {
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
			stale = append(stale, strings.TrimPrefix(o.Name, "bootlab-"+r.s.Name+"-"))
		}
	}
	if len(stale) == 0 {
		return "", nil
	}
	sort.Strings(stale)
	if r.s.Profile != ProfileProbe || r.state.BootstrapRemoved && len(stale) == 1 && stale[0] == "bootstrap" {
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
// deferred by `up` until the control plane is ready).
func StartNodes(ctx context.Context, hv Hypervisor, s *Spec, role Role) error {
	r, err := newLabRun(hv, s, nil)
	if err != nil {
		return err
	}
	nodes := s.NodesByRole(role)
	_, err = parallel(ctx, nodes, parallelism, func(ctx context.Context, n Node) (bool, error) {
		o, err := hv.LookupDomain(ctx, s.DomainName(n))
		if errors.Is(err, ErrNotFound) {
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
// overlay (the bootstrap after the pivot, say).
func RemoveNode(ctx context.Context, hv Hypervisor, s *Spec, name string) error {
	if _, ok := s.Node(name); !ok {
		return fmt.Errorf("no node %q in lab %s (see `bootlab lab status`)", name, s.Name)
	}
	r, err := newLabRun(hv, s, nil)
	if err != nil {
		return err
	}
	return r.removeNode(ctx, name)
}

// removeNode powers off and undefines this lab's node name and deletes its
// overlay, whether or not the spec still lists it.
func (r *labRun) removeNode(ctx context.Context, name string) error {
	n := Node{Name: name}
	o, err := r.hv.LookupDomain(ctx, r.s.DomainName(n))
	switch {
	case errors.Is(err, ErrNotFound):
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
		if err := r.hv.UndefineDomain(ctx, o.Name); err != nil {
			return err
		}
	}
	if p, err := r.hv.LookupPool(ctx, r.s.PoolName()); err == nil && p.UUID == r.state.PoolUUID {
		if err := r.hv.DeleteVolume(ctx, r.s.PoolName(), r.s.VolumeName(n)); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// ReadImageInfo reads a base image's format and sizes from its header.
func ReadImageInfo(path string) (*ImageInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("base image (image.path): %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("base image (image.path): %w", err)
	}
	info := &ImageInfo{Format: "raw", FileSize: fi.Size(), VirtualSize: uint64(fi.Size())}
	hdr := make([]byte, 32)
	if _, err := io.ReadFull(f, hdr); err == nil && string(hdr[:4]) == "QFI\xfb" {
		info.Format = "qcow2"
		info.VirtualSize = binary.BigEndian.Uint64(hdr[24:32])
	}
	return info, nil
}
