package labcmd

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab"
)

// PreflightOptions are the options of `lab preflight`.
type PreflightOptions struct {
	Spec   cmdutil.SpecFlags
	Output string
}

// NewCmdPreflight builds `lab preflight`: check the host before `lab up`.
func NewCmdPreflight(f *cmdutil.Factory, runF func(*PreflightOptions) error) *cobra.Command {
	opts := &PreflightOptions{}
	cmd := &cobra.Command{
		Use:   "preflight",
		Short: "Check the host can run the lab (libvirt, KVM or TCG, tools, network range, memory, disk, access)",
		Example: `  bootlab lab preflight
  bootlab lab preflight --pull-secret ~/pull-secret.json
  bootlab lab preflight --accel kvm -o json`,
		Long: `Check what lab up relies on and say how to fix what is missing:
libvirt reachable and its version, KVM usable (proved by booting a kernel
under it for a few seconds) or the TCG fallback, /dev/kvm open to the qemu
user, haproxy and qemu-img installed, the network range free of host routes
and other libvirt networks, enough memory and disk for the nodes, and the
pool and lab directories reachable by the qemu user.

lab up runs the same checks first. Exits 3 when a check fails.
BOOTLAB_ACCEL=kvm|tcg overrides the accelerator choice.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runPreflight(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddSpecFlags(cmd, &opts.Spec)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runPreflight(ctx context.Context, f *cmdutil.Factory, opts *PreflightOptions) error {
	spec, err := opts.Spec.Load()
	if err != nil {
		return err
	}
	printWarnings(f, spec)
	// Another lab's directory would make its haproxy pass for this lab's:
	// opening the lab refuses it.
	l, err := f.OpenLab(ctx, spec)
	if err != nil {
		return err
	}
	defer l.Close()
	report, err := l.Preflight(ctx, lab.PreflightOptions{})
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		doc := struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
			*lab.PreflightReport
		}{spec.Name, report.OK(), report}
		if err := cmdutil.WriteJSON(f.Streams.Out, "PreflightReport", doc); err != nil {
			return err
		}
	} else if err := printPreflight(f.Streams.Out, report); err != nil {
		return err
	}
	if failed := report.Failed(); len(failed) > 0 {
		// Not "run lab preflight again": that is the command that just failed.
		f.Say("error", "preflight: %d of %d checks failed: each ✗ above says how to fix it; %s runs the same checks first", len(failed), len(report.Checks), opts.Spec.Hint("lab up"))
		return cmdutil.WithCode(cmdutil.ExitInvalid, cmdutil.ErrSilent)
	}
	return nil
}

// printPreflight writes the checks as every check list prints (✓ passed,
// ! passed with a caveat and its note, ✗ failed, the fixes at the end),
// then the accelerator lab up would use.
func printPreflight(w io.Writer, r *lab.PreflightReport) error {
	if err := check.Write(w, r.Checks, check.Options{}); err != nil {
		return err
	}
	if r.Accelerator != "" {
		_, err := fmt.Fprintf(w, "→ accelerator: %s\n", r.Accelerator)
		return err
	}
	return nil
}
