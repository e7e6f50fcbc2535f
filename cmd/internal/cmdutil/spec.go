package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/lab"
)

// DefaultSpecFile is read when -f is not given and it exists.
const DefaultSpecFile = "bootlab.yaml"

// EnvLab names the lab a command acts on when neither -f nor --name does.
const EnvLab = "BOOTLAB_LAB"

// SpecFlags are the flags every lab command shares: the spec file and the
// fields that flags may override.
type SpecFlags struct {
	File        string
	Name        string
	URI         string
	Accel       string
	CIDR        string
	Masters     int
	Workers     int
	PullSecret  string
	Profile     string
	NetworkMode string
	LabDir      string
	// ManualBootstrap, when set, overrides openshift.manualBootstrap before
	// defaults are applied (a rehearsal bootstrap gets more memory). Only
	// `lab up` has the flag.
	ManualBootstrap *bool

	// Optional lets a command run without a named lab (lab config prints the
	// defaults; stage list and stage commands aimed at --host or --local
	// need none): NoLab then says why no lab was found.
	Optional bool
	NoLab    error

	// invalid is the spec Load read but could not validate.
	invalid *labspec.Spec
	// target repeats how the user named the lab, for the hints we print.
	target string
	// found says where the lab was found when nothing named it ("the only
	// lab on this host (DIR)"); empty when a flag, file or $BOOTLAB_LAB did.
	found string
	// builds is set for the commands that build or check a spec (config,
	// preflight, up): Load then refuses directories nested in another lab's.
	builds bool
	// verb, yes and dryRun: see Destructive.
	verb        string
	yes, dryRun *bool
	flags       *pflag.FlagSet
	// cmd gives -f - its standard input and the context that ends the read.
	cmd *cobra.Command
}

// AddSpecFlags registers the flags of the commands that build or check a
// spec (config, preflight, up): which lab, and every field a flag overrides.
func AddSpecFlags(cmd *cobra.Command, sf *SpecFlags) {
	AddTargetFlags(cmd, sf)
	sf.builds = true
	fl := cmd.Flags()
	fl.StringVar(&sf.Accel, "accel", "", "accelerator: auto, kvm or tcg (overrides accelerator)")
	fl.StringVar(&sf.CIDR, "cidr", "", "machine network CIDR (overrides network.cidr)")
	fl.IntVar(&sf.Masters, "masters", 0, "number of masters (overrides topology.masters; ignored when nodes are listed)")
	fl.IntVar(&sf.Workers, "workers", 0, "number of workers (overrides topology.workers; ignored when nodes are listed)")
	fl.StringVar(&sf.PullSecret, "pull-secret", "", "pull secret file: build a real OpenShift lab (overrides openshift.pullSecretFile)")
	fl.StringVar(&sf.Profile, "profile", "", "profile: openshift or probe (overrides profile)")
	fl.StringVar(&sf.NetworkMode, "network-mode", "", "network mode: nat or isolated (overrides network.mode)")
}

// AddTargetFlags registers the flags that say which lab a command acts on:
// the spec file, the name, the lab directory and the libvirt URI. Commands
// that act on a built lab take these only; a field override (--workers,
// --pull-secret) would mean nothing there.
func AddTargetFlags(cmd *cobra.Command, sf *SpecFlags) {
	fl := cmd.Flags()
	sf.flags, sf.cmd = fl, cmd
	fl.StringVarP(&sf.File, "file", "f", DefaultSpecFile, "lab spec file (YAML; - reads standard input)")
	fl.StringVar(&sf.Name, "name", "", "lab name: overrides name in the spec file (-f, or ./bootlab.yaml when it exists); without one, the lab of that name as built, or a new one with every default")
	fl.StringVar(&sf.URI, "uri", "", "libvirt URI (overrides libvirt.uri)")
	fl.StringVar(&sf.LabDir, "lab-dir", "", "lab directory (overrides labDir)")
	_ = cmd.RegisterFlagCompletionFunc("name", completeLabNames)
}

// CompleteNodes offers the lab's node names (for lab ssh and console): the
// lab the flags typed so far name, as built.
func (sf *SpecFlags) CompleteNodes(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	spec, err := sf.Load()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if l, err := lab.Open(ctx, spec, lab.Options{}); err == nil {
		spec = l.Spec()
	}
	var names []string
	for _, n := range spec.Nodes {
		names = append(names, n.Name+"\t"+string(n.Role))
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// TargetArgs is how the user named the lab (`-f ux1.yaml`, `--name ux1`),
// to repeat in every command we suggest, so a pasted hint acts on the same
// lab. Empty when the lab was found without flags (./bootlab.yaml,
// $BOOTLAB_LAB), where the bare command finds it again.
func (sf *SpecFlags) TargetArgs() string { return sf.target }

// Hint returns `bootlab lab VERB` with the lab's target flags, for messages.
func (sf *SpecFlags) Hint(verb string) string {
	return "`" + strings.TrimSpace("bootlab "+verb+" "+sf.target) + "`"
}

// TargetArgsOf reads the target flags of an executed command (for the
// interrupt hint printed after it returns).
func TargetArgsOf(fl *pflag.FlagSet) string {
	var parts []string
	for _, name := range []string{"file", "name", "lab-dir"} {
		f := fl.Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		short := "--" + name
		if name == "file" {
			short = "-f"
		}
		parts = append(parts, short+" "+shellQuote(f.Value.String()))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// base finds the spec the flags start from: the file named by -f, else
// ./bootlab.yaml, else the lab named by --name or $BOOTLAB_LAB, else the one
// lab on this host. Anything else is refused, listing the labs: a command
// never falls back to a lab the user did not name.
func (sf *SpecFlags) base() (spec *labspec.Spec, source string, err error) {
	changed := func(name string) bool { return sf.flags != nil && sf.flags.Changed(name) }
	if sf.flags != nil {
		sf.target = TargetArgsOf(sf.flags)
	}
	sf.found = ""
	explicit := changed("file")
	if explicit && sf.File == userfile.StdinPath && sf.cmd != nil {
		return sf.stdin()
	}
	if _, statErr := os.Stat(sf.File); statErr == nil || explicit {
		s, err := labspec.Load(sf.File)
		if err != nil {
			var ve *labspec.ValidationError
			if errors.As(err, &ve) {
				return nil, "", err
			}
			return nil, "", WithCode(ExitInvalid, err)
		}
		if err := sf.unnamed(s, sf.File); err != nil {
			return nil, "", err
		}
		return s, sf.File, nil
	}
	if changed("name") {
		return &labspec.Spec{}, "flags (no " + sf.File + ")", nil
	}
	if name := os.Getenv(EnvLab); name != "" {
		return &labspec.Spec{Name: name}, EnvLab + "=" + name, nil
	}
	labs, err := lab.FindLabs(labspec.DefaultHome())
	if err != nil {
		return nil, "", err
	}
	if len(labs) == 1 && labs[0].Built {
		s := *labs[0].Spec
		sf.target = "--name " + shellQuote(s.Name)
		sf.found = "the only lab on this host (" + labs[0].Dir + ")"
		return &s, sf.found, nil
	}
	var why error
	switch len(labs) {
	case 0:
		why = fmt.Errorf("no lab named and none on this host (%s): pass -f FILE (`bootlab lab init -f FILE` writes a small one), or --name NAME for a lab with every default", filepath.Join(labspec.DefaultHome(), "labs"))
	default:
		names := make([]string, len(labs))
		for i, l := range labs {
			names[i] = l.Name
		}
		why = fmt.Errorf("no lab named (no -f, no ./%s, no --name, no $%s) and %d labs on this host: %s; name one with --name NAME, -f FILE or %s=NAME", DefaultSpecFile, EnvLab, len(labs), strings.Join(names, ", "), EnvLab)
	}
	if sf.Optional {
		sf.NoLab = why
		return &labspec.Spec{}, "flags (no " + sf.File + ")", nil
	}
	return nil, "", WithCode(ExitUsage, why)
}

// stdin reads the spec from standard input (-f -), giving up on Ctrl-C.
func (sf *SpecFlags) stdin() (*labspec.Spec, string, error) {
	const source = "standard input (-f -)"
	data, err := userfile.ReadStdin(sf.cmd.Context(), sf.cmd.InOrStdin(), userfile.MaxTextBytes)
	if err != nil && sf.cmd.Context().Err() != nil {
		return nil, "", err // interrupted: app.Run says so
	}
	if err != nil {
		return nil, "", WithCode(ExitInvalid, fmt.Errorf("lab spec: %w", err))
	}
	s, err := labspec.Parse(data, source)
	if err != nil {
		return nil, "", err
	}
	if err := sf.unnamed(s, source); err != nil {
		return nil, "", err
	}
	return s, source, nil
}

// unnamed refuses a spec file that does not name its lab (no name:, or
// name: "" or null) unless --name does: defaults would make it lab demo,
// and down or up would then act on a lab the file never named. A default
// name is for no file at all (lab config with nothing named).
func (sf *SpecFlags) unnamed(s *labspec.Spec, source string) error {
	if s.Name != "" || sf.Changed("name") {
		return nil
	}
	return &labspec.ValidationError{Source: source, Errs: []labspec.FieldError{{
		Field: "name",
		Msg:   "missing: a spec file must name its lab (bootlab never picks one for a file); add a line such as `name: mylab`, or pass --name NAME",
	}}}
}

// Load reads the spec (see base), applies flag overrides and defaults, and
// validates it against the spec rules. It looks at the host only to find
// the labs on it when nothing names one.
func (sf *SpecFlags) Load() (*labspec.Spec, error) {
	spec, source, err := sf.base()
	if err != nil {
		return nil, err
	}
	changed := func(name string) bool { return sf.flags != nil && sf.flags.Changed(name) }
	if changed("name") {
		spec.Name = sf.Name
	}
	if changed("uri") {
		spec.Libvirt.URI = sf.URI
	}
	if changed("accel") {
		spec.Accelerator = labspec.Accelerator(sf.Accel)
	}
	if changed("cidr") {
		spec.Network.CIDR = sf.CIDR
	}
	if changed("masters") || changed("workers") {
		if len(spec.Nodes) > 0 {
			return nil, UsageErrorf("--masters/--workers cannot change a spec that lists nodes explicitly; edit nodes in %s", sf.File)
		}
		if changed("masters") {
			if sf.Masters < 1 {
				return nil, UsageErrorf("--masters %d: a lab needs at least one master (three for OpenShift)", sf.Masters)
			}
			spec.Topology.Masters = sf.Masters
		}
		if changed("workers") {
			if sf.Workers < 0 {
				return nil, UsageErrorf("--workers %d: a lab has 0 workers or more (0: masters run the workloads)", sf.Workers)
			}
			spec.Topology.Workers = sf.Workers
		}
		if spec.Topology.Masters == 0 && !changed("masters") {
			spec.Topology.Masters = 3
		}
	}
	if changed("pull-secret") {
		if p := labspec.Profile(sf.Profile); spec.Profile == labspec.ProfileProbe && !changed("profile") || changed("profile") && p == labspec.ProfileProbe {
			return nil, UsageErrorf("--pull-secret builds a real OpenShift lab, but %s says profile: probe (a probe lab uses no pull secret): drop --pull-secret, or set profile: openshift", profileSource(changed("profile"), source))
		}
		spec.OpenShift.PullSecretFile = sf.PullSecret
	}
	if changed("profile") {
		spec.Profile = labspec.Profile(sf.Profile)
	}
	if changed("network-mode") {
		spec.Network.Mode = labspec.NetworkMode(sf.NetworkMode)
	}
	if changed("lab-dir") {
		spec.LabDir = sf.LabDir
	}
	if sf.ManualBootstrap != nil {
		spec.OpenShift.ManualBootstrap = *sf.ManualBootstrap
	}
	spec.Defaults()
	sf.invalid = nil
	if err := spec.Validate(); err != nil {
		var ve *labspec.ValidationError
		if errors.As(err, &ve) && ve.Source == "" {
			ve.Source = source
		}
		sf.invalid = spec
		return nil, err
	}
	if sf.builds {
		if err := lab.NestedDirs(labspec.DefaultHome(), spec); err != nil {
			var ve *labspec.ValidationError
			if errors.As(err, &ve) {
				ve.Source = source
			}
			return nil, err
		}
	}
	return spec, nil
}

// openTarget is Load and Factory.OpenLab for commands that act on a built
// lab: a spec that no longer validates (its pull secret file since
// removed, say) still names the lab, and the lab as built (its recorded
// spec) is what they act on. Anything else about the file is reported as
// Load reports it.
func (f *Factory) openTarget(ctx context.Context, sf *SpecFlags) (*lab.Lab, error) {
	spec, err := sf.Load()
	var ve *labspec.ValidationError
	if err == nil {
		if err := f.confirmFound(sf, spec.Name); err != nil {
			return nil, err
		}
		return f.OpenLab(ctx, spec)
	}
	if !errors.As(err, &ve) || sf.invalid == nil {
		return nil, err
	}
	if err := f.confirmFound(sf, sf.invalid.Name); err != nil {
		return nil, err
	}
	if l, oerr := f.OpenLab(ctx, sf.invalid); oerr == nil {
		if l.Built() {
			return l, nil
		}
		_ = l.Close()
	}
	return nil, err
}

// NotUp turns "no lab state" into what the user can do about it, with
// the flags they used; the error is still lab.NotUp (its own exit code).
func NotUp(sf *SpecFlags, spec *labspec.Spec, err error) error {
	if !lab.NotUp(err) {
		return err
	}
	return &notUpError{err, fmt.Sprintf("lab %s is not up (no complete `lab up` recorded in %s): run %s first", spec.Name, spec.LabDir, sf.Hint("lab up"))}
}

// notUpError reads as its message and wraps the error it words (lab.NotUp).
type notUpError struct {
	cause error
	msg   string
}

func (e *notUpError) Error() string { return e.msg }
func (e *notUpError) Unwrap() error { return e.cause }

func profileSource(flag bool, source string) string {
	if flag {
		return "--profile"
	}
	return source
}

// OpenTarget opens the lab the spec file and flags name (lab.Open: a lab
// directory holding another lab is refused): down and status act on the
// lab as it was built, when it was. A flag that contradicts the built lab
// is refused rather than ignored. Close the lab.
func (f *Factory) OpenTarget(ctx context.Context, sf *SpecFlags) (*lab.Lab, error) {
	l, err := f.openTarget(ctx, sf)
	if err != nil {
		return nil, err
	}
	if l.Built() {
		if err := sf.contradicts(l.Spec()); err != nil {
			_ = l.Close()
			return nil, err
		}
	}
	return l, nil

}

// OpenBuiltLab is OpenTarget for commands that need the lab to exist
// (verify, pivot, wait, gather, console, ssh, stage): a lab never brought
// up is refused with the command that builds it (exit code: no such lab).
// It returns the lab's spec as built too. Close the lab.
func (f *Factory) OpenBuiltLab(ctx context.Context, sf *SpecFlags) (*lab.Lab, *labspec.Spec, error) {
	l, err := f.OpenTarget(ctx, sf)
	if err != nil {
		return nil, nil, err
	}
	if !l.Built() {
		_ = l.Close()
		return nil, nil, NotUp(sf, l.Spec(), &lab.NotBuiltError{Lab: l.Spec().Name})
	}
	return l, l.Spec(), nil
}

// ConflictError is a target flag that contradicts the lab as built (its
// recorded state): acting on the lab would silently ignore the flag.
type ConflictError struct {
	Flag, Value, Lab, Built string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %s: lab %s was built on %s (its lab state says so): drop %s, or name another lab", e.Flag, e.Value, e.Lab, e.Built, e.Flag)
}

// ExitCode makes a conflict a usage error.
func (e *ConflictError) ExitCode() int { return ExitUsage }

// contradicts refuses a location flag that differs from the lab as built:
// `lab status --uri X` on a lab built on Y would otherwise show Y silently.
func (sf *SpecFlags) contradicts(built *labspec.Spec) error {
	if sf.flags == nil {
		return nil
	}
	if sf.flags.Changed("uri") && sf.URI != built.Libvirt.URI {
		return &ConflictError{Flag: "--uri", Value: sf.URI, Lab: built.Name, Built: built.Libvirt.URI}
	}
	return nil
}

// Changed reports whether the flag called name was given on the command line.
func (sf *SpecFlags) Changed(name string) bool { return sf.flags != nil && sf.flags.Changed(name) }
