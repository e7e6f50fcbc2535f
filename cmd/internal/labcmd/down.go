package labcmd

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// DownOptions are the options of `lab down`.
type DownOptions struct {
	Spec       cmdutil.SpecFlags
	KeepImages bool
	// All removes every lab on this host (after a confirmation, or --yes).
	All bool
	Yes bool
	// DryRun prints what would be removed and removes nothing.
	DryRun bool
}

// NewCmdDown builds `lab down`: remove exactly what this lab created.
func NewCmdDown(f *cmdutil.Factory, runF func(*DownOptions) error) *cobra.Command {
	opts := &DownOptions{}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Delete the lab: its VMs, load balancer, volumes, pool, network and lab files",
		Example: `  bootlab lab down
  bootlab lab down --name demo --dry-run
  bootlab lab down --all --yes`,
		Long: `Delete exactly what this lab created, in reverse order: domains carrying
this lab's bootlab metadata, haproxy, the volumes and pool and the network
whose UUIDs the lab state recorded, then the lab's files. Works after a
half-failed up; never touches another lab or an object bootlab did not make.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runDown(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.Flags().BoolVar(&opts.KeepImages, "keep-images", false, "keep the imported base image so the next up does not upload it again")
	cmd.Flags().BoolVar(&opts.All, "all", false, "delete every lab on this host (asks first; --yes for scripts)")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask (with --all, or for a lab found rather than named)")
	opts.Spec.Destructive("lab down", &opts.Yes, &opts.DryRun)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what down would remove, and remove nothing")
	return cmd
}

func runDown(ctx context.Context, f *cmdutil.Factory, opts *DownOptions) error {
	if opts.All {
		return downAll(ctx, f, opts)
	}
	l, err := f.OpenTarget(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	return downLab(ctx, f, opts, l)
}

// downLab is `lab down` of an opened lab: one call into Lab.Down.
func downLab(ctx context.Context, f *cmdutil.Factory, opts *DownOptions, l *lab.Lab) error {
	if opts.DryRun {
		return downDryRun(ctx, f, opts, l)
	}
	spec := l.Spec()
	// Nothing of this lab here (a mistyped --name, a lab already down):
	// say so, without a ✓ step line for each object that never existed.
	changes, err := l.PlanDown(ctx, lab.TeardownOptions{KeepImages: opts.KeepImages})
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		f.Status.Infof("%s", downSummary(spec, nil))
		return nil
	}
	steps, err := l.Down(ctx, lab.TeardownOptions{KeepImages: opts.KeepImages})

	if err != nil {
		return err
	}
	f.Status.Infof("%s", downSummary(spec, steps))
	return nil
}

// downDryRun prints what `lab down` would remove, decided by Down's own
// steps over libvirt read but not written.
func downDryRun(ctx context.Context, f *cmdutil.Factory, opts *DownOptions, l *lab.Lab) error {
	spec := l.Spec()
	changes, err := l.PlanDown(ctx, lab.TeardownOptions{KeepImages: opts.KeepImages})
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		fmt.Fprintf(f.Streams.Out, "nothing to delete: lab %s has no VMs, load balancer, pool, network or files here (%s, %s)\n", spec.Name, spec.Libvirt.URI, spec.LabDir)
		return nil
	}
	fmt.Fprintf(f.Streams.Out, "lab down would make these changes to lab %s (nothing was changed):\n", spec.Name)
	for _, c := range changes {
		fmt.Fprintf(f.Streams.Out, "  %s\n", c)
	}
	return nil
}

// downSpec is `lab down` of the lab spec names (one FindLabs found).
func downSpec(ctx context.Context, f *cmdutil.Factory, opts *DownOptions, spec *labspec.Spec) error {
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return err
	}
	defer l.Close()
	return downLab(ctx, f, opts, l)
}

// downSummary says what `lab down` removed, or that there was nothing of
// this lab (a mistyped --name, say) to remove.
// Each step said what it removed on its own line.
func downSummary(spec *labspec.Spec, steps []lab.StepResult) string {
	for _, s := range steps {
		if s.Changed {
			return fmt.Sprintf("lab %s deleted", spec.Name)
		}
	}
	return fmt.Sprintf("nothing to delete: lab %s has no VMs, load balancer, pool, network or files here (%s, %s; a directory without this lab's state is never touched)", spec.Name, spec.Libvirt.URI, spec.LabDir)
}

// downAll deletes every lab under the bootlab home, each exactly as `lab
// down` of that lab would, after the user confirmed the list.
func downAll(ctx context.Context, f *cmdutil.Factory, opts *DownOptions) error {
	for _, name := range []string{"file", "name", "lab-dir"} {
		if opts.Spec.Changed(name) {
			return cmdutil.UsageErrorf("--all deletes every lab: it takes no --%s", name)
		}
	}
	labs, err := lab.FindLabs(labspec.DefaultHome())
	if err != nil {
		return err
	}
	if len(labs) == 0 {
		f.Status.Infof("nothing to delete: no labs in %s", filepath.Join(labspec.DefaultHome(), "labs"))
		return nil
	}
	names := make([]string, len(labs))
	for i, l := range labs {
		names[i] = l.Name
	}
	if !opts.Yes && !opts.DryRun {
		if err := f.Confirm(fmt.Sprintf("Delete %d labs: %s", len(labs), strings.Join(names, ", ")),
			fmt.Sprintf("lab down --all would delete %d labs (%s): pass --yes to confirm when not at a terminal", len(labs), strings.Join(names, ", "))); err != nil {
			return err
		}
	}
	var failed []string
	for _, l := range labs {
		if l.Err != nil {
			failed = append(failed, l.Name+": "+l.Err.Error())
			continue
		}
		// A lab never brought up completely is named by its name and
		// directory: enough to find what it made.
		if err := downSpec(ctx, f, opts, l.Spec); err != nil {
			if ctx.Err() != nil {
				return err
			}
			f.Log.Error("lab down failed", "lab", l.Name, "err", err)
			failed = append(failed, l.Name+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d labs could not be deleted:\n  %s", len(failed), len(labs), strings.Join(failed, "\n  "))
	}
	return nil
}
