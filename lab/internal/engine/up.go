package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// UpOptions tune Up.
type UpOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// DeferRoles are defined but not started (StartNodes starts them later).
	DeferRoles []spec.Role
	// SkipLoadBalancer leaves haproxy alone (always skipped on test:// URIs).
	SkipLoadBalancer bool
	// Accelerator is kvm or tcg, already chosen by ChooseAccelerator.
	Accelerator spec.Accelerator
	// DryRun changes nothing (libvirt, haproxy, files, state): the result's
	// Changes say what up would do, decided by the same steps.
	DryRun bool
	// Class, when set, records the lab as a member of that class (with its
	// identity, before any object exists, so `class down` finds even a
	// half-built lab).
	Class string
	// Share, when set, lets the labs of a class on one host send each
	// boot file once (class up gives one per host).
	Share BootFileShare
}

// UpResult says what Up did.
type UpResult struct {
	// Changed is false when the lab already matched the spec.
	Changed bool
	// Steps lists every step with whether it changed anything.
	Steps []StepResult
	// Accelerator is the one the domains use.
	Accelerator spec.Accelerator
	// Changes is the plan of a dry run, in order.
	Changes []Change
	// DeferredOff counts the nodes of the deferred roles (DeferRoles)
	// that are defined and not running.
	DeferredOff int
}

// labRun holds what one Up, Down or Inspect shares.
type labRun struct {
	hv hypervisor.Hypervisor
	// host is hv's machine (hv.Host()).
	host  host.Host
	s     *spec.Spec
	log   *slog.Logger
	mu    sync.Mutex // guards state
	state *labdir.State
	// caps are hv's capabilities: what up sets up on the machine.
	caps hypervisor.Capabilities
	// plan is set on a dry run: hv is the planning wrapper, nothing on the
	// host changes and the state is not written.
	plan *planningHV
	// share, when set, is the class's: its labs on this host send each
	// boot file once.
	share BootFileShare
	// deferredOff counts deferred domains left off by ensureDomains.
	deferredOff atomic.Int32
}

// lockedLabRun takes the lab's lock (creating the lab directory when
// create) and reads its state: what every command that changes a lab starts
// with. unlock releases the lock; it is a no-op after an error.
func lockedLabRun(hv hypervisor.Hypervisor, s *spec.Spec, log *slog.Logger, create bool) (r *labRun, unlock func(), err error) {
	unlock, err = labdir.Lock(s, create)
	if err != nil {
		return nil, func() {}, err
	}
	if r, err = newLabRun(hv, s, log); err != nil {
		unlock()
		return nil, func() {}, err
	}
	return r, unlock, nil
}

// labRunFor is lockedLabRun, or on a dry run a run that plans: it takes
// no lock, because the lock is a file (and maybe a directory) a dry run
// must not make, and a plan read while another command changes the lab
// is only a plan. Its hypervisor records changes instead of making them.
func labRunFor(hv hypervisor.Hypervisor, s *spec.Spec, log *slog.Logger, create, dryRun bool) (r *labRun, unlock func(), err error) {
	if !dryRun {
		return lockedLabRun(hv, s, log, create)
	}
	if r, err = newLabRun(hv, s, log); err != nil {
		return nil, func() {}, err
	}
	r.plan = newPlanningHV(hv)
	r.hv = r.plan
	return r, func() {}, nil
}

func newLabRun(hv hypervisor.Hypervisor, s *spec.Spec, log *slog.Logger) (*labRun, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := labdir.LoadState(s.LabDir)
	if errors.Is(err, labdir.ErrNoState) {
		st, err = &labdir.State{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := st.CheckIdentity(s); err != nil {
		return nil, err
	}
	return &labRun{hv: hv, host: hv.Host(), caps: hv.Capabilities(), s: s, log: log, state: st}, nil
}

// record updates the state and saves it at once, so an object that exists
// is always known to `down`, even if the next step fails or is interrupted.
func (r *labRun) record(f func(st *labdir.State)) error {
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
func Up(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, opts UpOptions) (*UpResult, error) {
	if opts.Accelerator != spec.AccelKVM && opts.Accelerator != spec.AccelTCG {
		return nil, fmt.Errorf("lab up: accelerator must be chosen (kvm or tcg), got %q", opts.Accelerator)
	}
	r, unlock, err := labRunFor(hv, s, opts.Log, true, opts.DryRun)
	defer unlock()
	if err != nil {
		return nil, err
	}
	r.share = opts.Share
	if err := r.recordIdentity(opts); err != nil {
		return nil, err
	}
	lp, base, err := r.upPlan(ctx, opts)
	if err != nil {
		return nil, err
	}
	results, err := runSteps(ctx, opts.Status, r.log, r.upSteps(lp, base, opts))
	res := &UpResult{Steps: results, Accelerator: opts.Accelerator, DeferredOff: int(r.deferredOff.Load())}
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
	if err := r.record(func(st *labdir.State) { st.Spec = s; st.Accelerator = opts.Accelerator }); err != nil {
		return res, err
	}
	return res, nil
}

// recordIdentity writes the lab's identity (name, UUID, class) before any
// object exists, so every object can carry it and `down` can always find
// them; a dry run writes nothing.
func (r *labRun) recordIdentity(opts UpOptions) error {
	st := r.state
	if opts.DryRun || st.UUID != "" && st.Name != "" && (opts.Class == "" || st.Class == opts.Class) && st.Libvirt != nil {
		return nil
	}
	return r.record(func(st *labdir.State) {
		st.Name = r.s.Name
		if st.UUID == "" {
			st.UUID = labdir.NewLabUUID()
		}
		if opts.Class != "" {
			st.Class = opts.Class
		}
		if st.Libvirt == nil {
			where := r.s.Libvirt
			st.Libvirt = &where
		}
	})
}

// upPlan is what up makes of the spec: the lab's plan (without the
// bootstrap once a real lab removed it) and the base image it imports.
func (r *labRun) upPlan(ctx context.Context, opts UpOptions) (*plan.Plan, *plan.ImageInfo, error) {
	s := r.s
	var base *plan.ImageInfo
	var err error
	if s.Image.Path != "" {
		if base, err = ReadImageInfo(s.Image.Path); err != nil {
			return nil, nil, err
		}
	}
	boot, err := ReadBootFiles(s)
	if err != nil {
		return nil, nil, err
	}
	var owner *plan.VolumeOwner
	if r.caps.RunsGuests {
		owner = qemuOwner(ctx, r.host)
	}
	lp, err := plan.NewPlan(s, plan.PlanInput{Accelerator: opts.Accelerator, Base: base, LabUUID: r.state.UUID, Ignition: ignitionDigests(s),
		Boot: boot, QEMUOwner: owner})
	if err != nil {
		return nil, nil, err
	}
	if r.state.BootstrapRemoved && s.Profile == spec.ProfileOpenShift {
		lp = lp.WithoutRole(spec.RoleBootstrap)
	}
	return lp, base, nil
}

// upSteps are up's steps for plan lp, in order.
func (r *labRun) upSteps(lp *plan.Plan, base *plan.ImageInfo, opts UpOptions) []step {
	s := r.s
	steps := []step{
		{"Preparing lab directory " + s.LabDir, r.prepareDirs},
		{"Creating network " + lp.Network.Name, func(ctx context.Context) (string, error) { return r.ensureNetwork(ctx, lp.Network) }},
		{"Creating storage pool " + lp.Pool.Name, func(ctx context.Context) (string, error) { return r.ensurePool(ctx, lp.Pool) }},
	}
	if lp.BaseVolume != nil {
		steps = append(steps, step{"Importing base image " + filepath.Base(s.Image.Path), func(ctx context.Context) (string, error) {
			return r.ensureBaseVolume(ctx, *lp.BaseVolume, base)
		}})
	}
	if len(lp.BootVolumes) > 0 {
		steps = append(steps, step{fmt.Sprintf("Uploading %d boot files to pool %s", len(lp.BootVolumes), lp.Pool.Name), func(ctx context.Context) (string, error) {
			return r.ensureBootVolumes(ctx, lp.BootVolumes)
		}})
	}
	steps = append(steps, step{fmt.Sprintf("Creating %d disk overlays", len(lp.Overlays)), func(ctx context.Context) (string, error) {
		return r.ensureOverlays(ctx, lp.Overlays)
	}})
	if !opts.SkipLoadBalancer && r.caps.HostNetwork {
		where := ""
		if r.host.Remote() {
			where = ", on " + r.host.Name()
		}
		steps = append(steps, step{"Starting load balancer (haproxy on " + s.Network.APIAddress + where + ")", r.ensureLoadBalancer})
	}
	deferred := map[spec.Role]bool{}
	for _, role := range opts.DeferRoles {
		deferred[role] = true
	}
	return append(steps, step{fmt.Sprintf("Creating %d nodes (%s)", len(lp.Domains), opts.Accelerator), func(ctx context.Context) (string, error) {
		detail, err := r.ensureDomains(ctx, lp.Domains, deferred)
		if err != nil || len(lp.BootVolumes) == 0 {
			return detail, err
		}
		// Only now no domain names the boot files of an earlier up.
		removed, err := r.staleBootVolumes(ctx, lp.BootVolumes)
		if removed != "" {
			detail = strings.TrimPrefix(detail+", "+removed, ", ")
		}
		return detail, err
	}})
}

// ensureLoadBalancer starts or reloads the lab's haproxy (a dry run says
// what it would do).
func (r *labRun) ensureLoadBalancer(ctx context.Context) (string, error) {
	s := r.s
	if r.plan != nil {
		action, err := loadbalancer.Plan(ctx, loadbalancer.LabConfigOn(r.host, s, r.state.BootstrapRemoved))
		if action != "" {
			r.plan.note(action, "loadBalancer", "haproxy on "+s.Network.APIAddress, "")
		}
		return action, err
	}
	res, err := loadbalancer.Ensure(ctx, loadbalancer.LabConfigOn(r.host, s, r.state.BootstrapRemoved), r.log)
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
}

func (r *labRun) prepareDirs(ctx context.Context) (string, error) {
	created := false
	dirs := []string{r.s.LabDir}
	consoleDir := filepath.Dir(labdir.ConsoleLog(r.s, spec.Node{Name: "x"}))
	if r.host.Remote() {
		// virtlogd writes the console logs on the hypervisor, in a host
		// directory marked as this lab's when bootlab makes it.
		c, err := r.prepareHostDir(ctx, consoleDir)
		if err != nil {
			return "", err
		}
		created = c
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
