package labcmd

import (
	"context"
	"fmt"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// UpOptions are the options of `lab up`.
type UpOptions struct {
	Spec cmdutil.SpecFlags
	// StartWorkers starts the workers now instead of leaving them defined
	// but off until the control plane is up (`lab up --start-workers` later).
	StartWorkers bool
	NoPreflight  bool
	// ManualBootstrap overrides openshift.manualBootstrap when set.
	ManualBootstrap *bool
	// DryRun prints what up would change and changes nothing.
	DryRun bool
	Output string
}

// NewCmdUp builds `lab up`: check the host, prepare the nodes' boot files,
// then build (or converge) the lab on libvirt.
func NewCmdUp(f *cmdutil.Factory, runF func(*UpOptions) error) *cobra.Command {
	opts := &UpOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Build the lab: network with DHCP and DNS, load balancer, storage, VMs (idempotent)",
		Example: `  bootlab lab up -f lab.yaml
  bootlab lab up --manual-bootstrap --name demo
  bootlab lab up --pull-secret ~/pull-secret.json --dry-run`,
		Long: `Build the lab the spec describes, or converge an existing one to it.

Order: preflight, lab SSH key, the profile's boot files (Ignition per node),
network (DHCP reservations, DNS for api, api-int, every node and *.apps),
storage pool, base image (uploaded once), one qcow2 overlay per node,
haproxy, then one domain per node. On a real (openshift) lab the workers
are defined but left off until the masters serve their config, as UPI
requires; --start-workers starts them. Probe lab workers start at once.

Running it again changes nothing when nothing changed, and resumes a run
that failed or was interrupted.

--dry-run makes the same checks and prints the plan; it writes, downloads,
builds and boots nothing. Under accelerator auto (or kvm) the real up first
boots a test guest for a few seconds to prove KVM; a dry run boots none and
says so: "kvm planned (... the real up proves it with a test guest first ...)".`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runUp(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddSpecFlags(cmd, &opts.Spec)
	cmd.Flags().BoolVar(&opts.StartWorkers, "start-workers", false, "start the workers now (on openshift labs they are otherwise left off until the masters serve them)")
	cmd.Flags().BoolVar(&opts.NoPreflight, "no-preflight", false, "skip the host checks (the accelerator is still chosen)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what up would create, change or remove, and change nothing (no test guest is booted: the real up proves KVM)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "with --dry-run, the plan's format: table or json")
	manual := cmd.Flags().Bool("manual-bootstrap", false, "start no bootstrap service at boot so you drive the bootstrap with bootlab stage: masks bootkube.service on a real lab, builds a rehearsal bootstrap (SSH, bash, etcd) on a probe lab (overrides openshift.manualBootstrap)")
	cmd.PreRun = func(c *cobra.Command, _ []string) {
		if c.Flags().Changed("manual-bootstrap") {
			opts.ManualBootstrap = manual
		}
	}
	return cmd
}

func runUp(ctx context.Context, f *cmdutil.Factory, opts *UpOptions) error {
	opts.Spec.ManualBootstrap = opts.ManualBootstrap
	spec, err := opts.Spec.Load()
	if err != nil {
		return err
	}
	printWarnings(f, spec)
	if opts.DryRun {
		return upDryRun(ctx, f, opts, spec)
	}
	if opts.Output != "table" {
		return cmdutil.UsageErrorf("-o %s: lab up prints a plan only with --dry-run", opts.Output)
	}
	return upSpec(ctx, f, opts, spec)
}

// upDryRun prints the plan `lab up` would carry out and writes nothing:
// the same input checks and preflight as up (failing as up would), then
// lab.Up's own steps over libvirt read but not written.
func upDryRun(ctx context.Context, f *cmdutil.Factory, opts *UpOptions, spec *labspec.Spec) error {
	if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
		return err
	}
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return err
	}
	defer l.Close()
	plan, err := l.PlanUp(ctx, lab.BuildOptions{NoPreflight: opts.NoPreflight, StartWorkers: opts.StartWorkers})
	if err != nil {
		return err
	}
	if plan.AcceleratorReason != "" {
		f.Status.Infof("accelerator: %s", lab.AcceleratorLine(plan.Accelerator, plan.AcceleratorReason))
	}
	return cmdutil.WritePlan(f, "UpPlan", opts.Output, spec.Name, plan.Changes,
		fmt.Sprintf("nothing to change: lab %s already matches the spec", spec.Name),
		fmt.Sprintf("lab up would make these changes to lab %s (nothing was changed):", spec.Name))
}

// upSpec is `lab up` of a loaded, validated spec: one call into Lab.Up,
// then what the user runs next.
func upSpec(ctx context.Context, f *cmdutil.Factory, opts *UpOptions, spec *labspec.Spec) error {
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return err
	}
	defer l.Close()
	res, err := l.Up(ctx, lab.BuildOptions{
		NoPreflight:  opts.NoPreflight,
		StartWorkers: opts.StartWorkers,
		Prepare:      cmdutil.PrepareOptions(f),
	})
	if err != nil {
		return err
	}
	// Each step said what it changed on its own line.
	if !res.Up.Changed {
		f.Status.Infof("nothing to change: lab %s already matches the spec", spec.Name)
	}
	if res.WorkersOff > 0 {
		f.Status.Infof("%d worker(s) defined but off until the masters' MCS serves them: `bootlab lab wait bootstrap-complete` starts them, or `bootlab lab up --start-workers`", res.WorkersOff)
	}
	f.Status.Infof("lab %s is up: %s", spec.Name, nextSteps(res.Spec))
	return nil
}

// nextSteps are the commands `lab up` suggests: probe nodes run no SSH
// server, so a probe lab is looked at with verify and the console instead.
func nextSteps(spec *labspec.Spec) string {
	if spec.Rehearsal() {
		return "`bootlab stage status` (once the bootstrap has booted), `bootlab stage run 01`, `bootlab lab ssh bootstrap`, `bootlab lab console NODE`"
	}
	if spec.Profile == labspec.ProfileProbe {
		return "`bootlab lab verify` (once the nodes have booted), `bootlab lab status`, `bootlab lab console NODE`"
	}
	return "`bootlab lab status`, `bootlab lab console NODE`, `bootlab lab ssh NODE`"
}
