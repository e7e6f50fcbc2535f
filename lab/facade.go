package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/bootlab/bootlab/lab/internal/engine"

	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/libvirt"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/preflight"
	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/verify"
)

// Connector opens the hypervisor of a libvirt URI (the caller closes it):
// the one way lab and the commands reach a hypervisor. The commands'
// Factory carries one (so it is named here, where cmd may look); tests
// pass hypervisor.Shared(fake).
type Connector = hypervisor.Connector

// LevelXML is the log level of the XML lab sends to libvirt (-vv): below
// debug, so the commands can ask for it without knowing lab/libvirt.
const LevelXML = libvirt.LevelXML

// Options configure Open: how the lab's hypervisor is reached and where
// the verbs report.
type Options struct {
	// Connect opens the hypervisor (nil: ConnectLibvirt). The commands pass
	// their Factory's; tests pass hypervisor.Shared(fake).
	Connect Connector
	Log     *slog.Logger
	Status  *status.Status
}

// Lab is one lab, opened from its spec: a method per verb, so that `lab
// X` and `class X` are the same call (kind's pkg/cluster Provider). The
// hypervisor is connected on the first verb that needs it, once, and
// closed by Close.
type Lab struct {
	spec *spec.Spec
	o    Options

	mu    sync.Mutex
	hv    hypervisor.Hypervisor
	hvErr error
}

// Open returns the lab of spec s (validated, defaults applied). It
// connects to nothing yet: a verb connects when it needs the hypervisor,
// and some (a verify of a local lab) carry on without one.
func Open(_ context.Context, s *spec.Spec, o Options) (*Lab, error) {
	if s == nil {
		return nil, errors.New("open lab: no spec")
	}
	if o.Connect == nil {
		o.Connect = engine.ConnectLibvirt
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Lab{spec: s, o: o}, nil
}

// Spec is the spec the lab was opened with.
func (l *Lab) Spec() *spec.Spec { return l.spec }

// Close closes the hypervisor connection, if a verb opened one.
func (l *Lab) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hv == nil {
		return nil
	}
	err := l.hv.Close()
	l.hv = nil
	return err
}

// hypervisor connects once; a failed connection is not retried (every
// verb of this handle sees the same error).
func (l *Lab) hypervisor(ctx context.Context) (hypervisor.Hypervisor, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hv == nil && l.hvErr == nil {
		l.hv, l.hvErr = l.o.Connect(ctx, l.spec.Libvirt.URI, l.o.Log)
	}
	return l.hv, l.hvErr
}

// connector hands the verbs that connect by themselves (build, pivot,
// wait) this handle's connection.
func (l *Lab) connector() Connector {
	return func(ctx context.Context, _ string, _ *slog.Logger) (hypervisor.Hypervisor, error) {
		hv, err := l.hypervisor(ctx)
		if err != nil {
			return nil, err
		}
		return hypervisor.Shared(hv)(ctx, "", nil)
	}
}

// PreflightOptions tune Preflight.
type PreflightOptions struct {
	// Facts replace how the host is looked at (unit tests); unset fields
	// read the machine. The cached probe kernel is the spare kernel that
	// proves KVM on a host with none in /boot.
	Facts preflight.HostFacts
}

// Preflight checks that the host can run the lab and says how to fix what
// it cannot: the checks `lab preflight`, `lab up` and `class up` run. A
// hypervisor that cannot be reached is a failed check, not an error.
func (l *Lab) Preflight(ctx context.Context, o PreflightOptions) (*preflight.Report, error) {
	var info hypervisor.HostInfo
	hv, connErr := l.hypervisor(ctx)
	if connErr == nil {
		info = hv
	}
	return preflight.Run(ctx, l.spec, info, l.preflightOptions(o, connErr))
}

func (l *Lab) preflightOptions(o PreflightOptions, connErr error) preflight.Options {
	facts := o.Facts
	if facts.SpareKernel == "" {
		facts.SpareKernel = probe.CachedKernel(probe.DefaultCacheDir())
	}
	return preflight.Options{Log: l.o.Log, Status: l.o.Status, ConnectError: connErr, Facts: facts}
}

// ChooseAccelerator picks kvm or tcg for the lab on its hypervisor and
// says why (preflight.ChooseAccelerator), once the boot files exist.
func (l *Lab) ChooseAccelerator(ctx context.Context) (spec.Accelerator, string, error) {
	hv, err := l.hypervisor(ctx)
	if err != nil {
		return "", "", err
	}
	return preflight.ChooseAccelerator(ctx, l.spec, hv, preflight.HostFacts{}, l.o.Log)
}

// Up is `lab up`: everything from the spec to a running lab (see build).
func (l *Lab) Up(ctx context.Context, o engine.BuildOptions) (*engine.BuildResult, error) {
	return engine.Build(ctx, l.spec, l.buildOptions(o))
}

// PlanUp is what Up would do, doing nothing: `lab up --dry-run`.
func (l *Lab) PlanUp(ctx context.Context, o engine.BuildOptions) (*engine.BuildPlan, error) {
	return engine.PlanBuild(ctx, l.spec, l.buildOptions(o))
}

func (l *Lab) buildOptions(o engine.BuildOptions) engine.BuildOptions {
	o.Connect, o.Log, o.Status = l.connector(), l.o.Log, l.o.Status
	if o.Preflight.Facts.SpareKernel == "" {
		o.Preflight.Facts.SpareKernel = probe.CachedKernel(probe.DefaultCacheDir())
	}
	return o
}

// Down is `lab down` and each lab of `class down`: host DNS undone, then
// everything the lab made removed (see teardown).
func (l *Lab) Down(ctx context.Context, o engine.TeardownOptions) ([]engine.StepResult, error) {
	o.Connect, o.Log, o.Status = l.connector(), l.o.Log, l.o.Status
	return engine.Teardown(ctx, l.spec, o)
}

// PlanDown is what Down would undo and remove, removing nothing.
func (l *Lab) PlanDown(ctx context.Context, o engine.TeardownOptions) ([]engine.Change, error) {
	o.Connect, o.Log, o.Status = l.connector(), l.o.Log, l.o.Status
	return engine.PlanTeardown(ctx, l.spec, o)
}

// Status is the lab as libvirt, its load balancer and its state have it.
func (l *Lab) Status(ctx context.Context) (*engine.Status, error) {
	hv, err := l.hypervisor(ctx)
	if err != nil {
		return nil, err
	}
	return engine.Inspect(ctx, hv, l.spec)
}

// Pivot takes the bootstrap out (see pivot).
func (l *Lab) Pivot(ctx context.Context) (*engine.PivotResult, error) {
	return engine.Pivot(ctx, l.spec, engine.PivotOptions{Connect: l.connector(), Log: l.o.Log, Status: l.o.Status})
}

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// Timeout bounds the wait for every check to pass (0: one pass).
	Timeout time.Duration
}

// NotBuiltError is a verb that needs a built lab on one that is not (no
// complete up recorded in its lab directory).
type NotBuiltError struct{ Lab string }

func (e *NotBuiltError) Error() string {
	return fmt.Sprintf("lab %s is not up (no complete up recorded)", e.Lab)
}

func (e *NotBuiltError) Unwrap() error { return labdir.ErrNoState }

// Verify is `lab verify` and each lab of `class verify`: the VMs' states
// first (a VM that is shut off still has yesterday's reports on its
// console, and they must not pass for today's), then the checks, with the
// console logs and the load balancer read on the hypervisor's machine. A
// remote lab cannot be checked without its hypervisor; a local one is,
// trusting the console reports as they are.
func (l *Lab) Verify(ctx context.Context, o VerifyOptions) (*verify.Result, error) {
	spec, st, err := labdir.Resolve(l.spec)
	if err != nil {
		return nil, err
	}
	if st == nil || st.Spec == nil {
		return nil, &NotBuiltError{Lab: l.spec.Name}
	}
	vopts := verify.Options{Timeout: o.Timeout, Log: l.o.Log, Status: l.o.Status, Accelerator: st.Accelerator}
	hv, err := l.hypervisor(ctx)
	switch {
	case err != nil && spec.Remote():
		return nil, fmt.Errorf("verify lab %s: %w", spec.Name, err)
	case err != nil:
		l.o.Log.Warn("cannot read the VMs' state from libvirt: trusting the console reports as they are", "err", err)
		if spec.Rehearsal() {
			vopts.Kube = kubeClients(spec, cluster.Net{})
		}
	default:
		vopts.Host = hv.Host()
		if spec.Rehearsal() {
			vopts.Kube = kubeClients(spec, netOf(hv.Host()))
		}
		if ls, err := engine.Inspect(ctx, hv, spec); err != nil {
			l.o.Log.Warn("cannot read the VMs' state from libvirt: trusting the console reports as they are", "err", err)
		} else {
			vopts.Nodes = map[string]verify.NodeVM{}
			for _, n := range ls.Nodes {
				vopts.Nodes[n.Name] = verify.NodeVM{State: n.State, Since: n.Since}
			}
		}
	}
	return verify.Run(ctx, spec, st, vopts)
}

// WaitBootstrap is `lab wait bootstrap-complete` (see waitBootstrap).
func (l *Lab) WaitBootstrap(ctx context.Context, o engine.WaitOptions) error {
	st, err := labdir.LoadState(l.spec.LabDir)
	if err != nil {
		return err
	}
	o.Connect, o.Log, o.Status = l.connector(), l.o.Log, l.o.Status
	return engine.WaitBootstrap(ctx, l.spec, st, o)
}

// WaitInstall is `lab wait install-complete` (see waitInstall).
func (l *Lab) WaitInstall(ctx context.Context, o engine.WaitOptions) error {
	o.Log, o.Status = l.o.Log, l.o.Status
	return engine.WaitInstall(ctx, l.spec, o)
}

// Console is `lab console`: node n's serial console log copied to out,
// read on the hypervisor's machine for a remote lab (see engine.Console).
func (l *Lab) Console(ctx context.Context, n spec.Node, out io.Writer, o ConsoleOptions) error {
	var h host.Host
	if l.spec.Remote() {
		hv, err := l.hypervisor(ctx)
		if err != nil {
			return err
		}
		h = hv.Host()
	}
	return engine.Console(ctx, h, l.spec, n, out, o)
}

// Gather is `lab gather`: openshift-install's gather bootstrap of the
// built lab; it returns the bundle's path (see engine.Gather).
func (l *Lab) Gather(ctx context.Context) (string, error) {
	st, err := labdir.LoadState(l.spec.LabDir)
	if err != nil {
		return "", err
	}
	return engine.Gather(ctx, l.spec, st, engine.GatherOptions{Log: l.o.Log, Status: l.o.Status})
}

// Checkpoint saves checkpoint name of the lab (see engine.SaveCheckpoint).
func (l *Lab) Checkpoint(ctx context.Context, name string, o engine.SaveOptions) (*engine.Checkpoint, error) {
	hv, err := l.hypervisor(ctx)
	if err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = l.o.Log
	}
	return engine.SaveCheckpoint(ctx, hv, l.spec, name, o)
}

// Checkpoints lists the lab's checkpoints.
func (l *Lab) Checkpoints(ctx context.Context) ([]engine.Checkpoint, error) {
	hv, err := l.hypervisor(ctx)
	if err != nil {
		return nil, err
	}
	return engine.ListCheckpoints(ctx, hv, l.spec)
}

// Restore puts the lab back to checkpoint name (see engine.RestoreCheckpoint).
func (l *Lab) Restore(ctx context.Context, name string, o engine.RestoreOptions) (*engine.Checkpoint, error) {
	hv, err := l.hypervisor(ctx)
	if err != nil {
		return nil, err
	}
	o.Log = l.o.Log
	return engine.RestoreCheckpoint(ctx, hv, l.spec, name, o)
}

// PlanRestore is what Restore would change, changing nothing.
func (l *Lab) PlanRestore(ctx context.Context, name string, o engine.RestoreOptions) ([]engine.Change, error) {
	hv, err := l.hypervisor(ctx)
	if err != nil {
		return nil, err
	}
	o.Log = l.o.Log
	return engine.PlanRestoreCheckpoint(ctx, hv, l.spec, name, o)
}

// DeleteCheckpoint deletes checkpoint name: its snapshots and files.
func (l *Lab) DeleteCheckpoint(ctx context.Context, name string) error {
	hv, err := l.hypervisor(ctx)
	if err != nil {
		return err
	}
	return engine.DeleteCheckpoint(ctx, hv, l.spec, name)
}

// PlanDeleteCheckpoint is what DeleteCheckpoint would remove.
func (l *Lab) PlanDeleteCheckpoint(ctx context.Context, name string) ([]engine.Change, error) {
	hv, err := l.hypervisor(ctx)
	if err != nil {
		return nil, err
	}
	return engine.PlanDeleteCheckpoint(ctx, hv, l.spec, name)
}

// Pooled returns a Connector that opens each URI once, with connect, and
// hands that one connection to every caller (a class's labs share their
// daemon); closing what it hands out leaves it open until closeAll. A
// failed connection is not kept: the next caller tries again.
func Pooled(connect Connector) (pooled Connector, closeAll func()) {
	var mu sync.Mutex
	open := map[string]hypervisor.Hypervisor{}
	pooled = func(ctx context.Context, uri string, log *slog.Logger) (hypervisor.Hypervisor, error) {
		mu.Lock()
		defer mu.Unlock()
		hv, ok := open[uri]
		if !ok {
			var err error
			if hv, err = connect(ctx, uri, log); err != nil {
				return nil, err
			}
			open[uri] = hv
		}
		return hypervisor.Shared(hv)(ctx, uri, log)
	}
	closeAll = func() {
		mu.Lock()
		defer mu.Unlock()
		for uri, hv := range open {
			_ = hv.Close()
			delete(open, uri)
		}
	}
	return pooled, closeAll
}
