package classcmd

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/class"
)

// UpOptions are the options of `class up`.
type UpOptions struct {
	Class       ClassFlags
	Parallel    int
	NoPreflight bool
	Output      string
	// DryRun checks the class and prints each lab's plan, changing nothing.
	DryRun bool
}

// ClassUpResult is `class up -o json`: what happened to each lab.
type ClassUpResult struct {
	Class   string         `json:"class"`
	Seconds float64        `json:"seconds"`
	Labs    []class.Result `json:"labs"`
}

// NewCmdUp builds `class up`.
func NewCmdUp(f *cmdutil.Factory, runF func(*UpOptions) error) *cobra.Command {
	opts := &UpOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Check the whole class, then build every learner's lab in parallel (idempotent)",
		Example: `  bootlab class up -f class.yaml --dry-run
  bootlab class up -f class.yaml
  bootlab class up -f class.yaml --parallel 4 -o json`,
		Long: `Build one lab per learner, as ` + "`bootlab lab up`" + ` builds a lab.

First the whole class is checked, before anything is created: each lab's spec,
distinct names, networks, bridges, MACs and load balancer addresses, no overlap
with host routes, libvirt networks or other labs, and memory and disk for every
lab still to build (when they do not fit, the error says how many do). A class
with hosts is placed on them first (class config shows where), and the
placement recorded. Then each host is checked once (preflight of the first lab
to build there), the probe image is made once for all labs, and the labs are
built --parallel at a time on each host, the hosts side by side. One lab's
failure, or one host's, does not stop the others: the summary names each
failed lab, its host and why, and the exit code is non-zero. Running it again
resumes, like lab up; a lab stays on the host it was placed on.

Each learner's handout (spec, SSH key, addresses, README with the commands for
their lab and the host it runs on) is written to
<bootlab home>/classes/<class>/handouts/<learner>.

--dry-run makes the same class checks and each host's one preflight, then
prints what lab up would change for each lab (as lab up --dry-run does) and
its handout: nothing is written (not even the placement record), downloaded,
built or booted, not even the test guest that proves KVM.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if opts.Parallel < 1 {
				return cmdutil.UsageErrorf("--parallel %d: build at least one lab at a time", opts.Parallel)
			}
			if runF != nil {
				return runF(opts)
			}
			return runUp(cmd.Context(), f, opts)
		},
	}
	addClassFlags(cmd, &opts.Class, true)
	cmd.Flags().IntVar(&opts.Parallel, "parallel", defaultParallel(), "build at most this many labs at once on each host (the hosts side by side)")
	cmd.Flags().BoolVar(&opts.NoPreflight, "no-preflight", false, "skip the host checks (the class checks and the accelerator choice still run)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "summary format: table or json")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "check the class and print what up would change for each lab, and change nothing")
	return cmd
}

func runUp(ctx context.Context, f *cmdutil.Factory, opts *UpOptions) error {
	start := time.Now()
	f.Status.Start("Checking class %s", opts.Class.File)
	p, err := plan(ctx, f, &opts.Class)
	if err != nil {
		f.Status.End(false)
		return err
	}
	detail := fmt.Sprintf("%d labs", len(p.Labs))
	if len(p.Hosts) > 0 {
		detail += fmt.Sprintf(" on %d hosts", len(p.Hosts))
	}
	f.Status.EndDetail(true, detail)
	for _, line := range strings.Split(strings.TrimSuffix(p.PlacementTable(), "\n"), "\n") {
		if line != "" {
			f.Status.Infof("%s", strings.TrimRight(line, " ")) // -q leaves it out
		}
	}
	for _, l := range p.Labs {
		for _, w := range l.Spec.Warnings() {
			f.Say("warn", "lab %s: %s", l.Spec.Name, w)
		}
	}
	home := labspec.DefaultHome()
	if !opts.DryRun {
		// Recorded before anything is made: a lab cut short is found on
		// its host by the next up, status and down.
		if err := class.WritePlacement(class.Dir(home, p.Class.Name), p); err != nil {
			return err
		}
	}
	hosts, err := prepareClass(ctx, f, p, opts.NoPreflight, opts.DryRun)
	if err != nil {
		return err
	}
	if opts.DryRun {
		return upDryRun(ctx, f, p, hosts, opts)
	}
	var mu sync.Mutex   // stderr lines
	var prep sync.Mutex // the preparers share the cache and the tools
	shares := bootFileShares(p)
	rs := class.EachOnHosts(ctx, p.Labs, opts.Parallel, func(ctx context.Context, l class.Lab) error {
		h := hosts[l.Host]
		if h.err != nil {
			return h.err
		}
		lf := labFactory(f, l.Spec.Name, &mu)
		return buildLab(ctx, lf, l.Spec, h.accel, p.Class.Name, l.Learner, l.Host, &prep, shares[l.Host])
	})
	for _, host := range slices.Sorted(maps.Keys(shares)) {
		if up, copied := shares[host].Counts(); copied > 0 {
			where := "this host"
			if host != "" {
				where = "host " + host
			}
			f.Status.Infof("boot files on %s: %d uploaded, %d copied there from another lab's instead of sent again", where, up, copied)
		}
	}
	if opts.Output == "json" {
		if err := cmdutil.WriteJSON(f.Streams.Out, "ClassUpResult", ClassUpResult{Class: p.Class.Name, Seconds: time.Since(start).Round(100 * time.Millisecond).Seconds(), Labs: rs}); err != nil {
			return err
		}
	} else {
		printResults(f, "up", rs)
	}
	if err := exitFor("class up", rs); err != nil {
		return err
	}
	f.Status.Infof("class %s is up: %d labs in %s; handouts in %s; next: `bootlab class verify --name %s`, `bootlab class status --name %s`",
		p.Class.Name, len(rs), time.Since(start).Round(time.Second), filepath.Join(class.Dir(home, p.Class.Name), "handouts"), p.Class.Name, p.Class.Name)
	return nil
}

// hostPrep is what class up found of one host before building on it: the
// accelerator its labs take, or why none can be built there.
type hostPrep struct {
	accel labspec.Accelerator
	err   error
}

// prepareClass does once what every lab's up would do alone: on each host
// (side by side) preflight of the first lab still to build there (tools,
// libvirt, memory, KVM), the probe image shared by every probe lab, and
// each host's accelerator. On a class without hosts a failure there is
// class up's; on a class with hosts it is that host's labs' (hostPrep.err),
// and the other hosts build theirs. A dry run stops after preflight, which
// boots no test guest then: its accelerator is planned.
func prepareClass(ctx context.Context, f *cmdutil.Factory, p *class.Plan, noPreflight, dryRun bool) (map[string]hostPrep, error) {
	first := map[string]*labspec.Spec{}
	var order []string
	for _, built := range []bool{false, true} {
		for _, l := range p.Labs {
			if _, ok := first[l.Host]; !ok && l.Built == built {
				first[l.Host] = l.Spec
			}
		}
	}
	for _, l := range p.Labs {
		if !slices.Contains(order, l.Host) {
			order = append(order, l.Host)
		}
	}
	out := make(map[string]hostPrep, len(order))
	for _, h := range p.Hosts {
		if h.Err != nil {
			out[h.Name] = hostPrep{err: fmt.Errorf("host %s is unreachable: %w (run class up again once it answers)", h.Name, h.Err)}
		}
	}
	var mu sync.Mutex
	onHosts := func(step func(f *cmdutil.Factory, host string, accel labspec.Accelerator) (labspec.Accelerator, error)) {
		var wg sync.WaitGroup
		todo := map[string]labspec.Accelerator{} // read before any step writes
		for _, host := range order {
			if out[host].err == nil {
				todo[host] = out[host].accel
			}
		}
		for host, prev := range todo {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hf := f
				if len(order) > 1 {
					hf = labFactory(f, "host "+host, &mu)
				}
				accel, err := step(hf, host, prev)
				if err != nil && host != "" {
					err = fmt.Errorf("host %s: %w", host, err)
				}
				mu.Lock()
				out[host] = hostPrep{accel: accel, err: err}
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	building := map[string]bool{}
	for _, l := range p.Labs {
		building[l.Host] = building[l.Host] || !l.Built
	}
	onHosts(func(f *cmdutil.Factory, host string, _ labspec.Accelerator) (labspec.Accelerator, error) {
		// A host whose labs are all built takes nothing more: its memory
		// is theirs already, and up again changes nothing there.
		return preflightHost(ctx, f, first[host], noPreflight || !building[host], dryRun)
	})
	if err := failedAlone(ctx, out); err != nil {
		return nil, err
	}
	if dryRun {
		return out, nil
	}
	if err := shareProbeImage(ctx, f, p); err != nil {
		return nil, err
	}
	onHosts(func(f *cmdutil.Factory, host string, accel labspec.Accelerator) (labspec.Accelerator, error) {
		return chooseAccelerator(ctx, f, first[host], accel)
	})
	if err := failedAlone(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// failedAlone is the error class up stops at: an interrupt, or the
// failure of the one host of a class without hosts.
func failedAlone(ctx context.Context, hosts map[string]hostPrep) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if h, ok := hosts[""]; ok && h.err != nil {
		return h.err
	}
	return nil
}

// preflightHost is the one preflight of a host (lab up's and lab
// preflight's), through the first lab to build there; it returns the
// accelerator it proved, if any.
func preflightHost(ctx context.Context, f *cmdutil.Factory, first *labspec.Spec, noPreflight, dryRun bool) (labspec.Accelerator, error) {
	var accel labspec.Accelerator
	if first.Accelerator != labspec.AccelAuto {
		accel = first.Accelerator
	}
	if noPreflight {
		return accel, nil
	}
	l, err := f.OpenLab(ctx, first)
	if err != nil {
		return "", err
	}
	defer l.Close()
	// The one preflight: lab up's and lab preflight's.
	report, err := l.Preflight(ctx, lab.PreflightOptions{NoTestGuest: dryRun})
	if err != nil {
		return "", err
	}
	if err := report.Err(); err != nil {
		return "", err
	}
	if dryRun && report.AcceleratorReason != "" {
		f.Status.Infof("accelerator: %s", lab.AcceleratorLine(report.Accelerator, report.AcceleratorReason))
	}
	if !report.AcceleratorUnproven || dryRun {
		accel = report.Accelerator
	}
	return accel, nil
}

// chooseAccelerator is the host's accelerator: accel when preflight or
// the spec gave one, the one its built lab first recorded, else chosen on
// the host once the boot files exist.
func chooseAccelerator(ctx context.Context, f *cmdutil.Factory, first *labspec.Spec, accel labspec.Accelerator) (labspec.Accelerator, error) {
	if accel != "" {
		return accel, nil
	}
	l, err := f.OpenLab(ctx, first)
	if err != nil {
		return "", err
	}
	defer l.Close()
	if a := l.Accelerator(); a != "" {
		return a, nil
	}
	a, why, err := l.ChooseAccelerator(ctx)
	if err != nil {
		return "", cmdutil.WithCode(cmdutil.ExitInvalid, err)
	}
	f.Status.Infof("accelerator: %s (%s)", a, why)
	return a, nil
}

// shareProbeImage builds (or finds) the probe image once and gives it to
// every probe lab that has no image of its own, so parallel builds do not
// each build it; with a rehearsal lab in the class, the rehearsal initrd too.
func shareProbeImage(ctx context.Context, f *cmdutil.Factory, p *class.Plan) error {
	var need []*labspec.Spec
	rehearsals := map[string]string{} // OpenShift version -> its rehearsal initrd
	for _, l := range p.Labs {
		s := l.Spec
		if s.Profile != labspec.ProfileProbe || s.Image.Kernel != "" && s.Image.Initrd != "" {
			continue
		}
		need = append(need, s)
		if s.Rehearsal() {
			rehearsals[lab.OpenShiftVersion(s)] = ""
		}
	}
	if len(need) == 0 {
		return nil
	}
	f.Status.Start("Preparing the probe image for %d labs", len(need))
	img, _, err := lab.EnsureProbeImage(ctx, f.Log, "", "", "")
	// Each release's etcd makes its own rehearsal initrd.
	for v := range rehearsals {
		if err != nil {
			break
		}
		ri, _, rerr := lab.EnsureProbeImage(ctx, f.Log, "", "", v)
		if err = rerr; err == nil {
			rehearsals[v] = ri.RehearsalInitrd
		}
	}
	if err != nil {
		f.Status.End(false)
		return err
	}
	f.Status.End(true)
	for _, s := range need {
		s.Image.Kernel, s.Image.Initrd = img.Kernel, img.Initrd
		if s.Rehearsal() {
			s.Image.RehearsalInitrd = rehearsals[lab.OpenShiftVersion(s)]
		}
		if s.Image.Cmdline == "" {
			s.Image.Cmdline = img.Cmdline
		}
		if s.Image.Path == "" {
			s.Image.Path = img.BaseDisk
		}
	}
	return nil
}

// buildLab is `lab up` of one lab of the class, with the same library
// calls: lab key, the profile's boot files, then lab.Up, recording the
// class in the lab's state; then learner's handout, from the lab as built.
func buildLab(ctx context.Context, f *cmdutil.Factory, spec *labspec.Spec, accel labspec.Accelerator, className, learner, host string, prep *sync.Mutex, share *class.BootFiles) error {
	// The class checked the host and chose the accelerator once for all
	// its labs; host DNS is a single lab's (a class's labs share a host).
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return err
	}
	defer l.Close()
	o := labBuildOptions(accel, className)
	o.Prepare, o.PrepareLock = cmdutil.PrepareOptions(f), prep
	if share != nil {
		o.Share = share
	}
	res, err := l.Up(ctx, o)
	if err != nil {
		return err
	}
	if !res.Up.Changed {
		f.Status.Infof("nothing to change: lab %s already matches the spec", spec.Name)
	}
	dir := filepath.Join(class.Dir(labspec.DefaultHome(), className), "handouts", learner)
	return class.WriteHandout(dir, className, learner, host, l.Spec())
}

// bootFileShares is one boot file share per host of p (the key "" when
// the class has no hosts), each knowing what the labs already built there
// uploaded: a class's labs on one host send each boot file once.
func bootFileShares(p *class.Plan) map[string]*class.BootFiles {
	specs := map[string][]*labspec.Spec{}
	for _, l := range p.Labs {
		specs[l.Host] = append(specs[l.Host], l.Spec)
	}
	out := make(map[string]*class.BootFiles, len(specs))
	for host, ss := range specs {
		out[host] = class.NewBootFiles()
		out[host].SeedFromLabs(ss)
	}
	return out
}

// labBuildOptions are the options of a class's lab up and of its dry run:
// the class checked the host and chose the accelerator once for all its
// labs (a dry run may leave it to each lab's plan, which then runs no
// preflight of its own either); host DNS is a single lab's.
func labBuildOptions(accel labspec.Accelerator, className string) lab.BuildOptions {
	return lab.BuildOptions{Accelerator: accel, NoPreflight: true, Class: className, SkipHostDNS: true}
}

// ClassUpPlan is `class up --dry-run -o json`: what up would change for
// each lab.
type ClassUpPlan struct {
	Class string    `json:"class"`
	Labs  []LabPlan `json:"labs"`
}

// LabPlan is what class up would change for one lab.
type LabPlan struct {
	Name    string       `json:"name"`
	Learner string       `json:"learner"`
	Changed bool         `json:"changed"`
	Changes []lab.Change `json:"changes"`
}

// upDryRun prints what class up would change for every lab of p: each
// lab's lab up --dry-run with the options its up gets, and its handout.
// A lab whose plan fails is named in the summary, as class up names it.
func upDryRun(ctx context.Context, f *cmdutil.Factory, p *class.Plan, hosts map[string]hostPrep, opts *UpOptions) error {
	var mu sync.Mutex
	plans := map[string]LabPlan{}
	rs := class.EachOnHosts(ctx, p.Labs, opts.Parallel, func(ctx context.Context, cl class.Lab) error {
		h := hosts[cl.Host]
		if h.err != nil {
			return h.err
		}
		accel := h.accel
		l, err := f.OpenLab(ctx, cl.Spec)
		if err != nil {
			return err
		}
		defer l.Close()
		plan, err := l.PlanUp(ctx, labBuildOptions(accel, p.Class.Name))
		if err != nil {
			return err
		}
		changes := append(plan.Changes, lab.Change{Action: "update", Kind: "classDir",
			Name: filepath.Join(class.Dir(labspec.DefaultHome(), p.Class.Name), "handouts", cl.Learner), Detail: "handout"})
		mu.Lock()
		defer mu.Unlock()
		plans[cl.Spec.Name] = LabPlan{Name: cl.Spec.Name, Learner: cl.Learner, Changed: len(plan.Changes) > 0, Changes: changes}
		return nil
	})
	doc := ClassUpPlan{Class: p.Class.Name, Labs: []LabPlan{}}
	for _, r := range rs {
		if lp, ok := plans[r.Lab]; ok {
			doc.Labs = append(doc.Labs, lp)
		}
	}
	if opts.Output == "json" {
		if err := cmdutil.WriteJSON(f.Streams.Out, "ClassUpPlan", doc); err != nil {
			return err
		}
	} else {
		for _, lp := range doc.Labs {
			if err := cmdutil.WritePlan(f, "", "table", lp.Name, lp.Changes, "",
				fmt.Sprintf("class up would make these changes to lab %s (learner %s; nothing was changed):", lp.Name, lp.Learner)); err != nil {
				return err
			}
		}
	}
	return exitFor("class up --dry-run", rs)
}

// printResults prints one line per lab of a class operation on stderr
// (people), ✓ or ✗ with the reason; -q leaves only the error summary.
func printResults(f *cmdutil.Factory, verb string, rs []class.Result) {
	for _, r := range rs {
		if r.Err != nil {
			f.Status.Infof("✗ %s %s (learner %s): %s", verb, r.Lab, r.Learner, r.Error)
			continue
		}
		f.Status.Infof("✓ %s %s (learner %s) in %.1fs", verb, r.Lab, r.Learner, r.Seconds)
	}
}
