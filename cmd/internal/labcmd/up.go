package labcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/hostdns"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/libvirt"
	"github.com/bootlab/bootlab/lab/openshift"
	"github.com/bootlab/bootlab/lab/preflight"
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
		Long: `Build the lab the spec describes, or converge an existing one to it.

Order: preflight, lab SSH key, the profile's boot files (Ignition per node),
network (DHCP reservations, DNS for api, api-int, every node and *.apps),
storage pool, base image (uploaded once), one qcow2 overlay per node,
haproxy, then one domain per node. On a real (openshift) lab the workers
are defined but left off until the masters serve their config, as UPI
requires; --start-workers starts them. Probe lab workers start at once.

Running it again changes nothing when nothing changed, and resumes a run
that failed or was interrupted.`,
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
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what up would create, change or remove, and change nothing")
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

// upDryRun prints the plan `lab up` would carry out, decided by lab.Up's
// own steps over libvirt read but not written. The preparers do not run
// (they write files and download), so the boot files are those of the last
// up; a lab never built is planned from scratch.
func upDryRun(ctx context.Context, f *cmdutil.Factory, opts *UpOptions, spec *lab.Spec) error {
	if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
		return err
	}
	_, st, err := labdir.Resolve(spec)
	if err != nil {
		return err
	}
	accel := spec.Accelerator
	if st != nil && st.Spec != nil {
		if spec.Image == (lab.Image{}) {
			spec.Image = st.Spec.Image
		}
		if accel == lab.AccelAuto && st.Accelerator != "" {
			accel = st.Accelerator
		}
	}
	if accel == lab.AccelAuto {
		accel = lab.AccelTCG
		f.Say("info", "dry run: accelerator auto is planned as tcg (the real up proves KVM first)")
	}
	conn, err := libvirt.Connect(ctx, spec.Libvirt.URI, f.Log)
	if err != nil {
		return err
	}
	defer conn.Close()
	upOpts := lab.UpOptions{Log: f.Log, Accelerator: accel, DryRun: true}
	if deferWorkers(spec, opts) {
		upOpts.DeferRoles = []lab.Role{lab.RoleWorker}
	}
	res, err := lab.Up(ctx, conn, spec, upOpts)
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		changes := res.Changes
		if changes == nil {
			changes = []lab.Change{}
		}
		return cmdutil.WriteJSON(f.Streams.Out, "UpPlan", struct {
			Name    string       `json:"name"`
			Changed bool         `json:"changed"`
			Changes []lab.Change `json:"changes"`
		}{spec.Name, res.Changed, changes})
	}
	if len(res.Changes) == 0 {
		fmt.Fprintf(f.Streams.Out, "nothing to change: lab %s already matches the spec\n", spec.Name)
		return nil
	}
	fmt.Fprintf(f.Streams.Out, "lab up would make these changes to lab %s (nothing was changed):\n", spec.Name)
	for _, c := range res.Changes {
		fmt.Fprintf(f.Streams.Out, "  %s\n", c)
	}
	return nil
}

// upSpec is `lab up` of a loaded, validated spec.
func upSpec(ctx context.Context, f *cmdutil.Factory, opts *UpOptions, spec *lab.Spec) error {
	// A lab directory that holds another lab is refused before the
	// preparers write a single file into it.
	if _, _, err := labdir.Resolve(spec); err != nil {
		return err
	}
	if spec.Profile == lab.ProfileOpenShift {
		if err := checkDomainClaims(spec); err != nil {
			return err
		}
		// A missing or malformed pull secret (or SSH key) is refused before
		// libvirt, preflight or the lab key: nothing runs, nothing is made.
		if err := openshift.CheckInputs(spec); err != nil {
			return cmdutil.WithCode(cmdutil.ExitInvalid, err)
		}
	}
	conn, connErr := libvirt.Connect(ctx, spec.Libvirt.URI, f.Log)
	if connErr == nil {
		defer conn.Close()
	}
	// The accelerator is chosen once: by preflight (which proves KVM with a
	// test guest), or after the boot files exist with --no-preflight.
	var accel lab.Accelerator
	if !opts.NoPreflight {
		var host lab.HostInfo
		if conn != nil {
			host = conn
		}
		report, err := preflight.Run(ctx, spec, host, preflightOptions(f, connErr))
		if err != nil {
			return err
		}
		if err := report.Err(); err != nil {
			return err
		}
		if !strings.HasPrefix(report.AcceleratorReason, preflight.NoProofKernel) {
			accel = report.Accelerator
			f.Status.Infof("accelerator: %s", accelLine(accel, report.AcceleratorReason))
		}
	}
	if connErr != nil {
		return connErr
	}

	f.Status.Start("Creating the lab SSH key")
	if err := lab.EnsureSSHKey(spec); err != nil {
		return err
	}
	f.Status.End(true)
	// The preparer reports its own steps.
	built, err := cmdutil.Prepare(ctx, f, spec)
	if err != nil {
		return fmt.Errorf("prepare %s nodes: %w", spec.Profile, err)
	}
	spec = built
	if err := lab.CheckBootFiles(spec); err != nil {
		return err
	}
	if accel == "" {
		// Without preflight, or when preflight had no kernel to prove KVM
		// with: chosen once the boot files exist, so under auto KVM proves it
		// boots the lab's own kernel.
		a, why, err := preflight.ChooseAccelerator(ctx, spec, conn, f.Log)
		if err != nil {
			return cmdutil.WithCode(cmdutil.ExitInvalid, err)
		}
		accel = a
		f.Status.Infof("accelerator: %s", accelLine(accel, why))
	}
	upOpts := lab.UpOptions{Log: f.Log, Status: f.Status, Accelerator: accel}
	deferWorkers := deferWorkers(spec, opts)
	if deferWorkers {
		upOpts.DeferRoles = []lab.Role{lab.RoleWorker}
	}
	res, err := lab.Up(ctx, conn, spec, upOpts)
	if err != nil {
		return err
	}
	// Each step said what it changed on its own line.
	if !res.Changed {
		f.Status.Infof("nothing to change: lab %s already matches the spec", spec.Name)
	}
	if n := workersOff(ctx, conn, spec); n > 0 && deferWorkers {
		f.Status.Infof("%d worker(s) defined but off until the masters' MCS serves them: `bootlab lab wait bootstrap-complete` starts them, or `bootlab lab up --start-workers`", n)
	}
	switch {
	case spec.Profile != lab.ProfileOpenShift:
	case spec.Remote():
		// The lab's dnsmasq listens on a bridge of the hypervisor's machine,
		// which this one does not route to: host split DNS is a workstation
		// concern, off for a remote lab (README, "Remote hypervisor").
		f.Status.Infof("host DNS for %s is not set up: the lab network is on %s (see \"Remote hypervisor\" in the README)", spec.Cluster.Domain(), conn.Host().Name())
	default:
		if err := setupHostDNS(ctx, f, spec); err != nil {
			return err
		}
	}
	f.Status.Infof("lab %s is up: %s", spec.Name, nextSteps(spec))
	return nil
}

// accelLine is the accelerator decision as printed: the choice, then why.
func accelLine(accel lab.Accelerator, why string) string {
	if strings.HasPrefix(why, string(accel)) {
		return why
	}
	return string(accel) + " (" + why + ")"
}

// checkDomainClaims refuses a second OpenShift lab with the cluster domain
// of another on this host: both would claim it in host DNS (resolved's
// ~domain, NetworkManager's server=/domain/) and the host would resolve one
// lab's names to the other's addresses.
func checkDomainClaims(spec *lab.Spec) error {
	labs, err := labdir.Find(lab.DefaultHome())
	if err != nil {
		return err
	}
	for _, l := range labs {
		if l.State == nil {
			continue
		}
		other := l.State.Spec
		if other == nil || l.Name == spec.Name || other.Profile != lab.ProfileOpenShift {
			continue
		}
		if other.Cluster.Domain() == spec.Cluster.Domain() {
			return cmdutil.WithCode(cmdutil.ExitInvalid, fmt.Errorf("cluster.name/cluster.baseDomain: lab %s already uses the cluster domain %s on this host (host DNS sends it to that lab): give this lab another cluster.name or cluster.baseDomain, or `bootlab lab down --name %s` first", l.Name, spec.Cluster.Domain(), l.Name))
		}
	}
	return nil
}

// workersOff counts the lab's workers that are not running (all of them
// when the lab cannot be inspected), so up does not call running workers off.
func workersOff(ctx context.Context, hv lab.Hypervisor, spec *lab.Spec) int {
	st, err := lab.Inspect(ctx, hv, spec)
	if err != nil {
		return len(spec.NodesByRole(lab.RoleWorker))
	}
	n := 0
	for _, node := range st.Nodes {
		if node.Role == lab.RoleWorker && node.State != "running" {
			n++
		}
	}
	return n
}

// deferWorkers says whether workers are defined but left off. On a real lab
// they can only fetch /config/worker from the masters' in-cluster MCS, so
// they boot after the control plane; probe workers retry their pointer
// config until a probe master serves it, so they start with everyone else.
func deferWorkers(spec *lab.Spec, opts *UpOptions) bool {
	return spec.Profile == lab.ProfileOpenShift && !opts.StartWorkers
}

// setupHostDNS lets the host resolve the lab's cluster domain through the
// lab's dnsmasq (split DNS, never the global resolver) and records how, so
// `lab down` undoes exactly that.
func setupHostDNS(ctx context.Context, f *cmdutil.Factory, spec *lab.Spec) error {
	st, err := labdir.LoadState(spec.LabDir)
	if err != nil {
		return err
	}
	// Set up again on every up even when recorded: it is idempotent, and
	// systemd-resolved forgets per-link settings when the bridge is
	// recreated (a host reboot, a restarted libvirt network).
	f.Status.Start("Resolving *.%s on this host through the lab's DNS", spec.Cluster.Domain())
	record, err := hostdns.Setup(ctx, spec)
	var manual *hostdns.ManualStepError
	if errors.As(err, &manual) {
		f.Status.End(false)
		f.Status.Infof("host name resolution for %s is not set up: %s", spec.Cluster.Domain(), manual.Steps)
		return nil
	}
	if err != nil {
		f.Status.End(false)
		return fmt.Errorf("set up host DNS for %s: %w", spec.Cluster.Domain(), err)
	}
	if st.HostDNS == record {
		f.Status.End(true)
		return nil
	}
	if st.HostDNS != "" {
		// The host changed resolvers since: undo the old way first.
		if err := hostdns.Undo(ctx, st.HostDNS); err != nil && f.Log != nil {
			f.Log.Warn("could not undo the earlier host DNS setup", "record", st.HostDNS, "err", err)
		}
	}
	if err := lab.UpdateState(spec, false, func(st *labdir.State) error {
		st.HostDNS = record
		return nil
	}); err != nil {
		return err
	}
	f.Status.End(true)
	return nil
}

// nextSteps are the commands `lab up` suggests: probe nodes run no SSH
// server, so a probe lab is looked at with verify and the console instead.
func nextSteps(spec *lab.Spec) string {
	if spec.Rehearsal() {
		return "`bootlab stage status` (once the bootstrap has booted), `bootlab stage run 01`, `bootlab lab ssh bootstrap`, `bootlab lab console NODE`"
	}
	if spec.Profile == lab.ProfileProbe {
		return "`bootlab lab verify` (once the nodes have booted), `bootlab lab status`, `bootlab lab console NODE`"
	}
	return "`bootlab lab status`, `bootlab lab console NODE`, `bootlab lab ssh NODE`"
}
