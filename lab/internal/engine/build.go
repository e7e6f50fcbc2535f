package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/libvirt"
	"github.com/bootlab/bootlab/lab/openshift"
	"github.com/bootlab/bootlab/lab/preflight"
)

// InputError is a lab that cannot be built as asked, found before anything
// is made: an input the user must change (a pull secret, a cluster domain
// another lab holds, an accelerator the host cannot give).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ConnectLibvirt is the hypervisor.Connector of a real libvirt daemon (local, or
// remote over qemu+ssh): the only caller of libvirt.Connect.
func ConnectLibvirt(ctx context.Context, uri string, log *slog.Logger) (hypervisor.Hypervisor, error) {
	c, err := libvirt.Connect(ctx, uri, log)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// BuildOptions tune Lab.Up and Lab.PlanUp.
type BuildOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// Connect opens the hypervisor (default ConnectLibvirt).
	Connect hypervisor.Connector
	// Accelerator, when set, is used as chosen (class up chooses once for
	// all its labs); else preflight chooses it, or ChooseAccelerator once
	// the boot files exist.
	Accelerator spec.Accelerator
	// NoPreflight skips the host checks (the accelerator is still chosen).
	NoPreflight bool
	// Preflight are the host checks' options; Log, Status and ConnectError
	// are the Lab's.
	Preflight preflight.Options
	// StartWorkers starts an OpenShift lab's workers with everyone else
	// (by default they boot once the masters serve their config).
	StartWorkers bool
	// Class records the lab as a member of that class.
	Class string
	// Prepare are the preparer's options; Log and Status are the Lab's.
	Prepare PrepareOptions
	// PrepareLock, when set, is held around the preparer: labs built in
	// parallel share the caches it fills.
	PrepareLock sync.Locker
	// SkipHostDNS leaves host split DNS alone (class labs; tests).
	SkipHostDNS bool
	// Share lets the labs of a class on one host send each boot file once.
	Share BootFileShare
}

// BuildResult says what Lab.Up did.
type BuildResult struct {
	// Spec is the lab as built: the spec given, with the preparer's image.
	Spec *spec.Spec
	Up   *UpResult
	// Accelerator is the one chosen, and AcceleratorReason why.
	Accelerator       spec.Accelerator
	AcceleratorReason string
	// WorkersOff counts the workers defined but left off until the
	// masters' MCS serves them (`lab wait` starts them).
	WorkersOff int
}

// Build is `lab up` (Lab.Up): everything from a validated spec to a running lab, in
// the order that makes nothing it cannot finish. The inputs are checked
// before anything runs (the lab directory's identity, an OpenShift lab's
// pull secret, SSH key and cluster domain), then the host (preflight, which
// also chooses the accelerator, once), then the lab key, the profile's boot
// files (Prepare: s itself is not changed), the accelerator if preflight
// could not prove it, the lab itself (Up), and host DNS for a local
// OpenShift lab. Each step reports on opts.Status.
func Build(ctx context.Context, s *spec.Spec, o BuildOptions) (*BuildResult, error) {
	phases := timing.Start(o.Log, "lab up")
	c, err := checkBuild(ctx, s, &o)
	if err != nil {
		return nil, err
	}
	phases.Mark("checks and preflight")
	defer c.close()
	hv, st, pullSecret := c.hv, c.state, c.pullSecret
	res := &BuildResult{Accelerator: o.Accelerator}
	if c.report != nil && !c.report.AcceleratorUnproven {
		res.Accelerator, res.AcceleratorReason = c.report.Accelerator, c.report.AcceleratorReason
		o.Status.Infof("accelerator: %s", AcceleratorLine(res.Accelerator, res.AcceleratorReason))
	}
	if st == nil || st.UUID == "" || o.Class != "" && st.Class != o.Class {
		if err := claimLabDir(s, o.Class); err != nil {
			return nil, err
		}
	}
	o.Status.Start("Creating the lab SSH key")
	if err := EnsureSSHKey(s); err != nil {
		o.Status.End(false)
		return nil, err
	}
	o.Status.End(true)
	phases.Mark("lab key")
	// The preparer reports its own steps.
	popts := o.Prepare
	popts.Log, popts.Status, popts.PullSecret = o.Log, o.Status, pullSecret
	if o.PrepareLock != nil {
		o.PrepareLock.Lock()
	}
	built, err := Prepare(ctx, s, popts)
	if o.PrepareLock != nil {
		o.PrepareLock.Unlock()
	}
	if err != nil {
		return nil, fmt.Errorf("prepare %s nodes: %w", s.Profile, err)
	}
	res.Spec = built
	if err := CheckBootFiles(built, hv.Capabilities()); err != nil {
		return nil, err
	}
	phases.Mark("prepare boot files")
	if res.Accelerator == "" {
		// Without preflight, or when preflight had no kernel to prove KVM
		// with: chosen once the boot files exist, so under auto KVM proves
		// it boots the lab's own kernel.
		a, why, err := preflight.ChooseAccelerator(ctx, built, hv, o.Preflight.Facts, o.Log)
		if err != nil {
			return nil, &InputError{Err: err}
		}
		res.Accelerator, res.AcceleratorReason = a, why
		o.Status.Infof("accelerator: %s", AcceleratorLine(a, why))
	}
	phases.Mark("accelerator")
	upOpts := UpOptions{Log: o.Log, Status: o.Status, Accelerator: res.Accelerator, Class: o.Class, Share: o.Share,
		DeferRoles: DeferredRoles(built, o.StartWorkers)}
	if res.Up, err = Up(ctx, hv, built, upOpts); err != nil {
		return res, err
	}
	res.WorkersOff = res.Up.DeferredOff
	phases.Mark("up")
	if built.Profile == spec.ProfileOpenShift && !o.SkipHostDNS {
		if err := setUpHostDNS(ctx, built, hv, o); err != nil {
			return res, err
		}
	}
	return res, nil
}

// claimLabDir makes the lab directory this lab's before anything else is
// written into it: it refuses a directory that holds files and no lab
// state (labdir.Claimable), then records the lab's identity (name, UUID,
// class). Every later file there, the key and the boot files first, is
// then provably this lab's, and `lab down` finds a lab whose build failed
// before Up (class down by the class recorded).
func claimLabDir(s *spec.Spec, class string) error {
	if _, ok := labdir.Owned(s); !ok {
		if err := labdir.Claimable(s); err != nil {
			return err
		}
	}
	return UpdateState(s, true, func(st *labdir.State) error {
		st.Name = s.Name
		if st.UUID == "" {
			st.UUID = labdir.NewLabUUID()
		}
		if class != "" {
			st.Class = class
		}
		return nil
	})
}

// buildChecks is what build and planBuild know once the inputs and the
// host have passed their checks: nothing has been written yet.
type buildChecks struct {
	state      *labdir.State // nil for a lab never built
	pullSecret string        // an OpenShift lab's, read once
	hv         hypervisor.Hypervisor
	close      func()
	report     *preflight.Report // nil when preflight did not run
}

// checkBuild makes every check `lab up` makes before it writes anything,
// in order, for build and its dry run alike: the lab directory's identity,
// the cache root it would download and build into, an OpenShift lab's
// cluster domain, pull secret and SSH key (refused
// before libvirt, preflight or the lab key run), a lab directory holding
// someone's files, then the hypervisor, the host (preflight, unless the
// accelerator is given or preflight is off) and the directories the lab
// would make on the hypervisor's machine.
func checkBuild(ctx context.Context, s *spec.Spec, o *BuildOptions) (*buildChecks, error) {
	if o.Connect == nil {
		o.Connect = ConnectLibvirt
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	_, st, err := labdir.Resolve(s)
	if err != nil {
		return nil, err
	}
	if _, err := CacheRoot(); err != nil {
		return nil, err
	}
	c := &buildChecks{state: st, close: func() {}}
	if s.Profile == spec.ProfileOpenShift {
		if o.Class == "" {
			if err := CheckDomainClaims(s); err != nil {
				return nil, err
			}
		}
		if c.pullSecret, err = openshift.CheckInputs(s); err != nil {
			return nil, &InputError{Err: err}
		}
	}
	if st == nil {
		if err := labdir.Claimable(s); err != nil {
			return nil, err
		}
	}
	hv, connErr := o.Connect(ctx, s.Libvirt.URI, o.Log)
	if connErr == nil {
		c.hv, c.close = hv, func() { _ = hv.Close() }
	}
	if o.Accelerator == "" && !o.NoPreflight {
		popts := o.Preflight
		popts.Log, popts.Status, popts.ConnectError = o.Log, o.Status, connErr
		var info hypervisor.HostInfo
		if connErr == nil {
			info = hv
		}
		report, err := preflight.Run(ctx, s, info, popts)
		if err == nil {
			err = report.Err()
		}
		if err != nil {
			c.close()
			return nil, err
		}
		c.report = report
	}
	if connErr != nil {
		return nil, connErr
	}
	if err := checkHostDirs(ctx, hv, s, st); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// DeferredRoles are the roles lab up defines but leaves off. Real workers
// can only fetch /config/worker from the masters' in-cluster MCS, so on an
// OpenShift lab they boot after the control plane (unless startWorkers);
// probe workers retry their pointer config until a probe master serves it,
// so they start with everyone else.
func DeferredRoles(s *spec.Spec, startWorkers bool) []spec.Role {
	if s.Profile == spec.ProfileOpenShift && !startWorkers {
		return []spec.Role{spec.RoleWorker}
	}
	return nil
}

// AcceleratorLine is the accelerator decision as printed: the choice,
// then why.
func AcceleratorLine(accel spec.Accelerator, why string) string {
	if strings.HasPrefix(why, string(accel)) {
		return why
	}
	return string(accel) + " (" + why + ")"
}

// CheckDomainClaims refuses a second OpenShift lab with the cluster domain
// of another on this host: both would claim it in host DNS (resolved's
// ~domain, NetworkManager's server=/domain/) and the host would resolve one
// lab's names to the other's addresses.
func CheckDomainClaims(s *spec.Spec) error {
	labs, err := labdir.Find(spec.DefaultHome())
	if err != nil {
		return err
	}
	for _, l := range labs {
		if l.State == nil {
			continue
		}
		other := l.State.Spec
		if other == nil || l.Name == s.Name || other.Profile != spec.ProfileOpenShift {
			continue
		}
		if other.Cluster.Domain() == s.Cluster.Domain() {
			return &InputError{Err: fmt.Errorf("cluster.name/cluster.baseDomain: lab %s already uses the cluster domain %s on this host (host DNS sends it to that lab): give this lab another cluster.name or cluster.baseDomain, or `bootlab lab down --name %s` first", l.Name, s.Cluster.Domain(), l.Name)}
		}
	}
	return nil
}
