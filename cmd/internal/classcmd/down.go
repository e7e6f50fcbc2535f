package classcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/class"
)

// DownOptions are the options of `class down`.
type DownOptions struct {
	LabsOptions
	// Yes skips the confirmation (needed when not at a terminal).
	Yes bool
	// DryRun prints what would be removed and removes nothing.
	DryRun bool
}

// NewCmdDown builds `class down`.
func NewCmdDown(f *cmdutil.Factory, runF func(*DownOptions) error) *cobra.Command {
	opts := &DownOptions{}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Remove every lab of the class, and nothing else",
		Example: `  bootlab class down -f class.yaml --dry-run
  bootlab class down --name ux --yes`,
		Long: `Remove every lab whose state says it belongs to the class, each exactly as
` + "`bootlab lab down`" + ` would (its VMs, load balancer, pool, network, checkpoints and
files, stage logs included), then the class's handouts.
Labs of other classes, labs of no class and
libvirt objects bootlab did not make are never touched.

It lists the labs and asks first, like ` + "`bootlab lab down --all`" + `; --yes does not ask
(and is needed when not at a terminal). --dry-run prints what would be
removed and removes nothing.

A class with hosts is removed from every host that answers; the labs of a
host that does not are named and kept (their lab directories find them), and
so is the class's directory: run class down again once the host answers.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Parallel < 1 {
				return cmdutil.UsageErrorf("--parallel %d: remove at least one lab at a time", opts.Parallel)
			}
			if runF != nil {
				return runF(opts)
			}
			return runDown(cmd.Context(), f, opts)
		},
	}
	addClassFlags(cmd, &opts.Class, false)
	cmd.Flags().IntVar(&opts.Parallel, "parallel", defaultParallel(), "remove at most this many labs at once on each host")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what down would remove, and remove nothing")
	return cmd
}

func runDown(ctx context.Context, f *cmdutil.Factory, opts *DownOptions) error {
	name, ms, err := classMembers(&opts.Class, false)
	if err != nil {
		return err
	}
	dir := class.Dir(spec.DefaultHome(), name)
	pf, closeAll := pooledFactory(f)
	defer closeAll()
	if opts.DryRun {
		return downDryRun(ctx, pf, name, dir, ms)
	}
	if len(ms) > 0 && !opts.Yes {
		if err := confirmDown(f, name, ms); err != nil {
			return err
		}
	}
	if len(ms) == 0 {
		if err := removeClassDir(dir); err != nil {
			return err
		}
		f.Status.Infof("nothing to delete: class %s has no labs on this host", name)
		return nil
	}
	var mu sync.Mutex
	rs := class.EachOnHosts(ctx, builtLabs(ms), opts.Parallel, func(ctx context.Context, l class.Lab) error {
		lf := labFactory(pf, l.Spec.Name, &mu)
		return downLab(ctx, lf, l.Spec)
	})
	printResults(f, "down", rs)
	if err := exitFor("class down", rs); err != nil {
		for _, line := range unreachable(ctx, pf, name, ms, rs) {
			f.Say("warn", "%s", line)
		}
		return err
	}
	if err := removeClassDir(dir); err != nil {
		return err
	}
	f.Status.Infof("class %s deleted: %d labs", name, len(rs))
	return nil
}

// confirmDown asks before class down removes labs, as `lab down --all`
// does: at a terminal the user answers, elsewhere --yes must say so.
func confirmDown(f *cmdutil.Factory, name string, ms []member) error {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Spec.Name
	}
	list := strings.Join(names, ", ")
	return f.Confirm(fmt.Sprintf("Delete class %s and its %d labs: %s", name, len(ms), list),
		fmt.Sprintf("class down would delete the %d labs of class %s (%s): pass --yes to confirm when not at a terminal", len(ms), name, list))
}

// unreachable says, for class down's failed labs whose host did not
// answer, which host, why, and what is left: the rest of the class is
// gone from every other host, these labs (and their directories, which
// find them) stay for a class down once the host answers.
func unreachable(ctx context.Context, f *cmdutil.Factory, className string, ms []member, rs []class.Result) []string {
	type lost struct {
		err  error
		labs []string
	}
	var order []string
	byHost := map[string]*lost{}
	for i, r := range rs {
		if r.Err == nil {
			continue
		}
		uri := ms[i].Spec.Libvirt.URI
		hv, err := f.Connector()(ctx, uri, f.Log)
		if err == nil {
			_ = hv.Close()
			continue
		}
		where := ms[i].Host
		if where == "" {
			where = uri
		}
		if byHost[where] == nil {
			byHost[where] = &lost{err: err}
			order = append(order, where)
		}
		byHost[where].labs = append(byHost[where].labs, r.Lab)
	}
	var out []string
	for _, h := range order {
		l := byHost[h]
		out = append(out, fmt.Sprintf("could not reach host %s (%s): its labs %s are left there, with their lab directories here, which find them; every other lab of the class is removed. Run `bootlab class down --name %s` again once it answers",
			h, oneLine(l.err.Error()), strings.Join(l.labs, ", "), className))
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// downDryRun prints what class down would remove: each lab's plan as
// `lab down --dry-run` prints it, its stage logs, and the class directory.
// A lab whose host does not answer is named, and the others planned.
func downDryRun(ctx context.Context, f *cmdutil.Factory, name, dir string, ms []member) error {
	fmt.Fprintf(f.Streams.Out, "class down would make these changes to class %s (nothing was changed):\n", name)
	var errs []error
	for _, m := range ms {
		changes, err := planDownLab(ctx, f, m.Spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("lab %s: %w", m.Spec.Name, err))
			continue
		}
		for _, c := range changes {
			fmt.Fprintf(f.Streams.Out, "  %s\n", c)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if _, err := os.Lstat(dir); err == nil {
		fmt.Fprintf(f.Streams.Out, "  %s\n", lab.Change{Action: "remove", Kind: "classDir", Name: dir, Detail: "handouts and placement"})
	}
	return nil
}

// downLab is `lab down` of one lab of the class: the same call (Lab.Down).
func downLab(ctx context.Context, f *cmdutil.Factory, spec *spec.Spec) error {
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return err
	}
	defer l.Close()
	_, err = l.Down(ctx, lab.TeardownOptions{})
	return err
}

// planDownLab is `lab down --dry-run` of one lab of the class, and its
// stage logs.
func planDownLab(ctx context.Context, f *cmdutil.Factory, spec *spec.Spec) ([]lab.Change, error) {
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	changes, err := l.PlanDown(ctx, lab.TeardownOptions{})
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(l.StageDir()); err == nil {
		changes = append(changes, lab.Change{Action: "remove", Kind: "labDir", Name: l.StageDir(), Detail: "stage logs"})
	}
	return changes, nil
}

// removeClassDir removes the class's own directory (handouts), which holds
// copies of lab keys: nothing of it may outlive the labs.
func removeClassDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the class directory %s: %w", dir, err)
	}
	return nil
}
