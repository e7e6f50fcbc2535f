// Package labcmd holds the `bootlab lab ...` commands. They parse flags into
// Options and call package lab and its subpackages; they hold no lab logic.
package labcmd

import (
	"errors"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// NewCmdLab builds the `lab` command group.
func NewCmdLab(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Build, check and tear down an OpenShift UPI lab on libvirt",
	}
	cmd.AddCommand(
		NewCmdConfig(f, nil),
		NewCmdUp(f, nil),
		NewCmdDown(f, nil),
		NewCmdStatus(f, nil),
		NewCmdConsole(f, nil),
		NewCmdSSH(f, nil),
		NewCmdVerify(f, nil),
		NewCmdProbeImage(f),
		NewCmdPreflight(f, nil),
		NewCmdPivot(f, nil),
		NewCmdWait(f, nil),
		NewCmdApproveCSRs(f, nil),
		NewCmdGather(f, nil),
	)
	return cmd
}

// DefaultSpecFile is read when -f is not given (and silently skipped when absent).
const DefaultSpecFile = "bootlab.yaml"

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

	flags *pflag.FlagSet
}

// AddSpecFlags registers the shared flags on cmd.
func AddSpecFlags(cmd *cobra.Command, sf *SpecFlags) {
	fl := cmd.Flags()
	sf.flags = fl
	fl.StringVarP(&sf.File, "file", "f", DefaultSpecFile, "lab spec file (YAML)")
	fl.StringVar(&sf.Name, "name", "", "lab name (overrides name)")
	fl.StringVar(&sf.URI, "uri", "", "libvirt URI (overrides libvirt.uri)")
	fl.StringVar(&sf.Accel, "accel", "", "accelerator: auto, kvm or tcg (overrides accelerator)")
	fl.StringVar(&sf.CIDR, "cidr", "", "machine network CIDR (overrides network.cidr)")
	fl.IntVar(&sf.Masters, "masters", 0, "number of masters (overrides topology.masters; ignored when nodes are listed)")
	fl.IntVar(&sf.Workers, "workers", 0, "number of workers (overrides topology.workers; ignored when nodes are listed)")
	fl.StringVar(&sf.PullSecret, "pull-secret", "", "pull secret file: build a real OpenShift lab (overrides openshift.pullSecretFile)")
	fl.StringVar(&sf.Profile, "profile", "", "profile: openshift or probe (overrides profile)")
	fl.StringVar(&sf.NetworkMode, "network-mode", "", "network mode: nat or isolated (overrides network.mode)")
	fl.StringVar(&sf.LabDir, "lab-dir", "", "lab directory (overrides labDir)")
}

// Load reads the spec file (the default file may be absent), applies flag
// overrides and defaults, and validates it against the spec rules. It does
// not look at the host (preflight does).
func (sf *SpecFlags) Load() (*lab.Spec, error) {
	spec := &lab.Spec{}
	explicit := sf.flags != nil && sf.flags.Changed("file")
	source := "flags (no " + sf.File + ")"
	if _, err := os.Stat(sf.File); err == nil || explicit {
		source = sf.File
		s, err := lab.Load(sf.File)
		if err != nil {
			var ve *lab.ValidationError
			if errors.As(err, &ve) {
				return nil, err
			}
			return nil, cmdutil.WithCode(cmdutil.ExitInvalid, err)
		}
		spec = s
	}
	changed := func(name string) bool { return sf.flags != nil && sf.flags.Changed(name) }
	if changed("name") {
		spec.Name = sf.Name
	}
	if changed("uri") {
		spec.Libvirt.URI = sf.URI
	}
	if changed("accel") {
		spec.Accelerator = lab.Accelerator(sf.Accel)
	}
	if changed("cidr") {
		spec.Network.CIDR = sf.CIDR
	}
	if changed("masters") || changed("workers") {
		if len(spec.Nodes) > 0 {
			return nil, cmdutil.UsageErrorf("--masters/--workers cannot change a spec that lists nodes explicitly; edit nodes in %s", sf.File)
		}
		if changed("masters") {
			if sf.Masters < 1 {
				return nil, cmdutil.UsageErrorf("--masters %d: a lab needs at least one master (three for OpenShift)", sf.Masters)
			}
			spec.Topology.Masters = sf.Masters
		}
		if changed("workers") {
			spec.Topology.Workers = sf.Workers
		}
		if spec.Topology.Masters == 0 && !changed("masters") {
			spec.Topology.Masters = 3
		}
	}
	if changed("pull-secret") {
		spec.OpenShift.PullSecretFile = sf.PullSecret
	}
	if changed("profile") {
		spec.Profile = lab.Profile(sf.Profile)
	}
	if changed("network-mode") {
		spec.Network.Mode = lab.NetworkMode(sf.NetworkMode)
	}
	if changed("lab-dir") {
		spec.LabDir = sf.LabDir
	}
	if sf.ManualBootstrap != nil {
		spec.OpenShift.ManualBootstrap = *sf.ManualBootstrap
	}
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		var ve *lab.ValidationError
		if errors.As(err, &ve) && ve.Source == "" {
			ve.Source = source
		}
		return nil, err
	}
	return spec, nil
}

// outputFlag validates an -o value against the allowed formats.
func outputFlag(val string, allowed ...string) error {
	for _, a := range allowed {
		if val == a {
			return nil
		}
	}
	return cmdutil.UsageErrorf("-o must be one of %v, not %q", allowed, val)
}
