package lab

import (
	"context"
	"io"
	"log/slog"

	"github.com/bootlab/bootlab/internal/status"

	"github.com/bootlab/bootlab/lab/class"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/engine"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/preflight"
	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/spec"
)

// The values the verbs take and return. They are defined by the engine
// (lab/internal/engine) and named here, so that a command sees them
// through the facade and never imports the engine.
type (
	BuildOptions        = engine.BuildOptions
	BuildResult         = engine.BuildResult
	BuildPlan           = engine.BuildPlan
	UpOptions           = engine.UpOptions
	UpResult            = engine.UpResult
	DownOptions         = engine.DownOptions
	TeardownOptions     = engine.TeardownOptions
	StepResult          = engine.StepResult
	Change              = engine.Change
	Status              = engine.Status
	NodeStatus          = engine.NodeStatus
	NetworkStatus       = engine.NetworkStatus
	DNSRecord           = engine.DNSRecord
	PivotResult         = engine.PivotResult
	WaitOptions         = engine.WaitOptions
	Checkpoint          = engine.Checkpoint
	SaveOptions         = engine.SaveOptions
	RestoreOptions      = engine.RestoreOptions
	PrepareOptions      = engine.PrepareOptions
	ListOptions         = engine.ListOptions
	Summary             = engine.Summary
	GraphOptions        = engine.GraphOptions
	InputError          = engine.InputError
	ConsoleOptions      = engine.ConsoleOptions
	Program             = engine.Program
	BuiltProgram        = engine.BuiltProgram
	UnknownProgramError = engine.UnknownProgramError
	UnknownReleaseError = engine.UnknownReleaseError
)

// The leaves' values a verb hands back whole, named here so that a command
// prints them without importing the leaf: Lab.Preflight's report, the
// load balancer's backends of a PivotResult, the probe image `lab
// probe-image build` made.
type (
	PreflightReport = preflight.Report
	BackendStatus   = loadbalancer.BackendStatus
	ProbeImage      = probe.Image
)

// MetadataNamespace is the XML namespace of the metadata bootlab writes
// into every libvirt object it makes.
const MetadataNamespace = plan.MetadataNamespace

// ConnectLibvirt is the production Connector: libvirt at uri.
func ConnectLibvirt(ctx context.Context, uri string, log *slog.Logger) (hypervisor.Hypervisor, error) {
	return engine.ConnectLibvirt(ctx, uri, log)
}

// Up converges the lab of s on hv without the inputs, preflight or host
// DNS of Lab.Up: the quick lab of a test fixture.
func Up(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, o UpOptions) (*UpResult, error) {
	return engine.Up(ctx, hv, s, o)
}

// Down removes what Up made on hv (a test fixture's cleanup).
func Down(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, o DownOptions) ([]StepResult, error) {
	return engine.Down(ctx, hv, s, o)
}

// Inspect is the status of the lab of s on hv (Lab.Status on an open
// connection: the dashboard reads many labs over one).
func Inspect(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec) (*Status, error) {
	return engine.Inspect(ctx, hv, s)
}

// List is `lab list`: the labs under a home and on hypervisors.
func List(ctx context.Context, o ListOptions) ([]Summary, error) { return engine.List(ctx, o) }

// Prepare runs the profile's preparer of s (see engine.Prepare).
func Prepare(ctx context.Context, s *spec.Spec, o PrepareOptions) (*spec.Spec, error) {
	return engine.Prepare(ctx, s, o)
}

// EnsureProbeImage builds the probe image unless the cache has it.
func EnsureProbeImage(ctx context.Context, log *slog.Logger, kernel, modules, rehearsal string) (*probe.Image, string, error) {
	return engine.EnsureProbeImage(ctx, log, kernel, modules, rehearsal)
}

// OpenShiftVersion is the OpenShift version the lab of s installs.
func OpenShiftVersion(s *spec.Spec) string { return engine.OpenShiftVersion(s) }

// EnsureSSHKey makes the lab's SSH key unless it exists.
func EnsureSSHKey(s *spec.Spec) error { return engine.EnsureSSHKey(s) }

// CheckCacheRoot refuses a cache root a lab directory could not be (a
// system directory, a file): source says where dir came from
// (--cache-dir, BOOTLAB_CACHE). An InvalidInput error.
func CheckCacheRoot(dir, source string) error { return engine.CheckCacheRoot(dir, source) }

// CacheRoot is the cache root ($BOOTLAB_CACHE or the default), checked as
// CheckCacheRoot checks it.
func CacheRoot() (string, error) { return engine.CacheRoot() }

// ValidateCheckpointName says what is wrong with a checkpoint name.
func ValidateCheckpointName(name string) error { return engine.ValidateCheckpointName(name) }

// AcceleratorLine is the one line that says the accelerator and why.
func AcceleratorLine(accel spec.Accelerator, why string) string {
	return engine.AcceleratorLine(accel, why)
}

// ClassFacts measures what class.Expand checks a class against: the labs
// under the bootlab home and each target host (see engine.ClassFacts).
func ClassFacts(ctx context.Context, connect Connector, targets []class.Target, poolDir string, log *slog.Logger) (class.Facts, error) {
	return engine.ClassFacts(ctx, connect, targets, poolDir, log)
}

// LookupProgram is the program name (kubernetes or etcd) at the version
// OpenShift release version pins: what `cache build` gets.
func LookupProgram(name, version string) (*Program, error) {
	return engine.LookupProgram(name, version)
}

// ProgramOptions say where GetProgram puts a program and which way it
// gets it.
type ProgramOptions struct {
	// Dir is the cache root.
	Dir string
	// Source is "" (the cache, else the official artefacts when their
	// checksums are pinned and the site answers, else a build),
	// "download" or "build".
	Source string
	Log    *slog.Logger
	// Status says which way and why; Progress gets the download's bar,
	// redrawn in place when TTY.
	Status   *status.Status
	Progress io.Writer
	TTY      bool
}

// GetProgram puts p into the cache under o.Dir unless it is there: its
// official release artefacts, checked against the pinned checksums, or a
// build from the Go module proxy (lab/upstream decides, and says why).
func GetProgram(ctx context.Context, p *Program, o ProgramOptions) (*BuiltProgram, error) {
	return engine.GetProgram(ctx, p, engine.ProgramOptions{Dir: o.Dir, Source: o.Source, Log: o.Log,
		Status: o.Status, Progress: o.Progress, TTY: o.TTY})
}

// LabDirs are home and the directories of the labs under it (a cache
// export leaves them out).
func LabDirs(home string) ([]string, error) { return engine.LabDirs(home) }

// LabImages are the image files the labs under home boot (a cache prune
// keeps them).
func LabImages(home string) ([]string, error) { return engine.LabImages(home) }
