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

	"github.com/bootlab/bootlab/internal/diagram"
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
	// given is the spec as the caller gave it: what Up builds and
	// Preflight checks. spec is the lab as built when its directory
	// records a complete up (that up's effective spec), else given: what
	// every other verb acts on. state is what the directory records (nil:
	// nothing yet).
	given *spec.Spec
	spec  *spec.Spec
	state *labdir.State
	o     Options

	mu    sync.Mutex
	hv    hypervisor.Hypervisor
	hvErr error
}

// Open returns the lab spec s names (defaults applied), as its lab
// directory records it: once a complete up was recorded, the verbs other
// than Up and Preflight act on that up's effective spec, whatever s says
// now. A lab directory that holds another lab is refused (a
// labdir.IdentityError: InvalidInput), as is one whose state cannot be
// read. Open connects to nothing yet: a verb connects when it needs the
// hypervisor, and some (a verify of a local lab) carry on without one.
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
	l := &Lab{given: s, o: o}
	if err := l.resolve(); err != nil {
		return nil, err
	}
	return l, nil
}

// resolve reads the lab directory again: after Up or Down the lab as
// built is another.
func (l *Lab) resolve() error {
	applied, st, err := labdir.Resolve(l.given)
	if err != nil {
		return err
	}
	l.spec, l.state = applied, st
	return nil
}

// recorded is the state Open read (and checked is this lab's), or, when
// the directory records nothing yet, the error LoadState gives: the verbs
// that need a state must not read state.json again, unchecked.
func (l *Lab) recorded() (*labdir.State, error) {
	if l.state == nil {
		return nil, labdir.NoStateIn(l.spec.LabDir)
	}
	return l.state, nil
}

// Spec is the lab's spec: as built (see Open), else as given.
func (l *Lab) Spec() *spec.Spec { return l.spec }

// Built reports whether the lab directory records a complete up.
func (l *Lab) Built() bool { return l.state != nil && l.state.Spec != nil }

// UUID is the lab's identity, recorded when its directory was first made
// ("" before): records of another lab of the same name (stage records, a
// verify record) carry another.
func (l *Lab) UUID() string {
	if l.state == nil {
		return ""
	}
	return l.state.UUID
}

// Accelerator is the accelerator the recorded up chose ("" when none did).
func (l *Lab) Accelerator() spec.Accelerator {
	if l.state == nil {
		return ""
	}
	return l.state.Accelerator
}

// Restored is the checkpoint last restored ("" when none was).
func (l *Lab) Restored() string {
	if l.state == nil || l.state.Restored == nil {
		return ""
	}
	return l.state.Restored.Checkpoint
}

// SSHKey is the lab's private SSH key (its nodes let core in with it).
func (l *Lab) SSHKey() string { return labdir.SSHKey(l.spec) }

// KnownHosts is the lab's own known_hosts: its nodes' host keys change at
// every rebuild, so they never go to the user's.
func (l *Lab) KnownHosts() string { return labdir.KnownHosts(l.spec) }

// StageDir holds the stage commands' records and logs of the lab.
func (l *Lab) StageDir() string { return labdir.Stages(l.spec) }

// LastVerify is the outcome the last `lab verify` of this lab recorded
// (nil when none was: a record of another lab of the same name is not
// this one's).
func (l *Lab) LastVerify() (*VerifyRecord, error) {
	r, err := labdir.LoadVerifyRecord(l.spec.LabDir, l.UUID())
	if r == nil || err != nil {
		return nil, err
	}
	return &VerifyRecord{VerifyRecord: *r}, nil
}

// VerifyRecord is the outcome of a `lab verify` as its lab directory
// keeps it (the JSON `lab list` and `class status` print).
type VerifyRecord struct{ labdir.VerifyRecord }

// Summary is the record in one line ("104/104 ok"); "never verified"
// for none.
func (r *VerifyRecord) Summary() string {
	if r == nil {
		return (*labdir.VerifyRecord)(nil).Summary()
	}
	return r.VerifyRecord.Summary()
}

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
	// NoTestGuest is a dry run's preflight (class up --dry-run): no test
	// guest is booted to prove KVM (preflight.Options.NoTestGuest).
	NoTestGuest bool
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
	return preflight.Run(ctx, l.given, info, l.preflightOptions(o, connErr))
}

func (l *Lab) preflightOptions(o PreflightOptions, connErr error) preflight.Options {
	facts := o.Facts
	if facts.SpareKernel == "" {
		facts.SpareKernel = probe.CachedKernel(probe.DefaultCacheDir())
	}
	return preflight.Options{Log: l.o.Log, Status: l.o.Status, ConnectError: connErr, Facts: facts, NoTestGuest: o.NoTestGuest}
}

// ChooseAccelerator picks kvm or tcg for the lab on its hypervisor and
// says why (preflight.ChooseAccelerator), once the boot files exist.
func (l *Lab) ChooseAccelerator(ctx context.Context) (spec.Accelerator, string, error) {
	hv, err := l.hypervisor(ctx)
	if err != nil {
		return "", "", err
	}
	return preflight.ChooseAccelerator(ctx, l.given, hv, preflight.HostFacts{}, l.o.Log)
}

// Up is `lab up`: everything from the spec as given to a running lab (see
// build); the handle then acts on the lab as built.
func (l *Lab) Up(ctx context.Context, o engine.BuildOptions) (*engine.BuildResult, error) {
	res, err := engine.Build(ctx, l.given, l.buildOptions(o))
	if err != nil {
		return nil, err
	}
	return res, l.resolve()
}

// PlanUp is what Up would do, doing nothing: `lab up --dry-run`.
func (l *Lab) PlanUp(ctx context.Context, o engine.BuildOptions) (*engine.BuildPlan, error) {
	return engine.PlanBuild(ctx, l.given, l.buildOptions(o))
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
	res, err := engine.Teardown(ctx, l.spec, o)
	if err != nil {
		return res, err
	}
	return res, l.resolve()
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

// Graph is the lab as `lab graph` draws it (see engine.Graph): as built
// when it was, each node's state asked of its hypervisor.
func (l *Lab) Graph(ctx context.Context, o engine.GraphOptions) (*diagram.Topology, error) {
	o.Connect = l.connector()
	return engine.Graph(ctx, l.given, o)
}

// Pivot takes the bootstrap out (see pivot).
func (l *Lab) Pivot(ctx context.Context) (*engine.PivotResult, error) {
	return engine.Pivot(ctx, l.spec, engine.PivotOptions{Connect: l.connector(), Log: l.o.Log, Status: l.o.Status})
}

// PlanPivot is what Pivot would change, changing nothing: its Changes,
// decided by Pivot's own steps.
func (l *Lab) PlanPivot(ctx context.Context) (*engine.PivotResult, error) {
	return engine.Pivot(ctx, l.spec, engine.PivotOptions{Connect: l.connector(), Log: l.o.Log, Status: l.o.Status, DryRun: true})
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
	if !l.Built() {
		return nil, &NotBuiltError{Lab: l.spec.Name}
	}
	spec, st := l.spec, l.state
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

// WaitBootstrap is `lab wait bootstrap-complete` (see waitBootstrap),
// watching the lab network as this machine reaches it.
func (l *Lab) WaitBootstrap(ctx context.Context, o engine.WaitOptions) error {
	if err := engine.CheckWaitable(l.spec); err != nil {
		return err
	}
	st, err := l.recorded()
	if err != nil {
		return err
	}
	n, done, err := l.labNet(ctx, l.spec)
	if err != nil {
		return err
	}
	defer done()
	o.Net, o.Connect, o.Log, o.Status = n, l.connector(), l.o.Log, l.o.Status
	return engine.WaitBootstrap(ctx, l.spec, st, o)
}

// WaitInstall is `lab wait install-complete` (see waitInstall).
func (l *Lab) WaitInstall(ctx context.Context, o engine.WaitOptions) error {
	if err := engine.CheckWaitable(l.spec); err != nil {
		return err
	}
	n, done, err := l.labNet(ctx, l.spec)
	if err != nil {
		return err
	}
	defer done()
	o.Net, o.Log, o.Status = n, l.o.Log, l.o.Status
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
// failed connection is kept too, for the pool's life (one command): a
// host that does not answer is asked once, not once per lab, and the
// hosts are asked side by side.
func Pooled(connect Connector) (pooled Connector, closeAll func()) {
	type conn struct {
		once sync.Once
		hv   hypervisor.Hypervisor
		err  error
	}
	var mu sync.Mutex
	open := map[string]*conn{}
	pooled = func(ctx context.Context, uri string, log *slog.Logger) (hypervisor.Hypervisor, error) {
		mu.Lock()
		c, ok := open[uri]
		if !ok {
			c = &conn{}
			open[uri] = c
		}
		mu.Unlock()
		c.once.Do(func() { c.hv, c.err = connect(ctx, uri, log) })
		if c.err != nil {
			return nil, c.err
		}
		return hypervisor.Shared(c.hv)(ctx, uri, log)
	}
	closeAll = func() {
		mu.Lock()
		defer mu.Unlock()
		for uri, c := range open {
			if c.hv != nil {
				_ = c.hv.Close()
			}
			delete(open, uri)
		}
	}
	return pooled, closeAll
}
