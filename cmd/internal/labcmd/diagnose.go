package labcmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// DiagnoseOptions are the options of `lab diagnose`.
type DiagnoseOptions struct {
	// Bundle is the log bundle to diagnose.
	Bundle string
	Output string
	// Format draws the tree instead: svg or mermaid ("" for none).
	Format string
}

// NewCmdDiagnose builds `lab diagnose --bundle FILE`. runF replaces the
// behaviour in tests.
func NewCmdDiagnose(f *cmdutil.Factory, runF func(*DiagnoseOptions) error) *cobra.Command {
	opts := &DiagnoseOptions{}
	cmd := &cobra.Command{
		Use:   "diagnose --bundle FILE",
		Short: "Walk the bootstrap troubleshooting tree over a log bundle: where it stopped, the log line that shows it, what to do",
		Long: `Read a log bundle (bootlab's, or openshift-install gather bootstrap's
log-bundle-<id>.tar.gz) and walk the troubleshooting tree of
docs/troubleshooting.md over it: the bootstrap node's services, clocks and
certificates, then etcd healthy? -> API accessible? -> masters joining? ->
bootkube completing?, with the connections each needs, the CSRs and the
etcd membership. Every check has an id (etcd.healthy, service.release-image),
a state (passed, failed, unknown: the bundle does not show it) and its
evidence: the log line, with the file and line number it came from.

It prints the first check that fails, its evidence and what to do, then
every check; "healthy" only when every check passed, and what it could not
see. -o json prints the same (docs/json.md, kind Diagnosis); --format svg
or mermaid draws the tree with each check's state. No lab is needed.

Only logs, service records, a few API objects and certificates are read of
the bundle; log lines are printed with tokens, passwords and keys hidden.
Exit code 4 when a check failed, 3 when the file is no log bundle.`,
		Example: `  bootlab lab diagnose --bundle log-bundle-20250514103000.tar.gz
  bootlab lab diagnose --bundle log-bundle-20250514103000.tar.gz -o json
  bootlab lab diagnose --bundle log-bundle-20250514103000.tar.gz --format svg | tee tree.svg`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "text", "json"); err != nil {
				return err
			}
			if opts.Format != "" && opts.Format != "svg" && opts.Format != "mermaid" {
				return cmdutil.UsageErrorf("--format must be svg or mermaid, not %q", opts.Format)
			}
			if opts.Format != "" && opts.Output == "json" {
				return cmdutil.UsageErrorf("--format draws the tree and -o json prints the report: give one of them")
			}
			if opts.Bundle == "" {
				return cmdutil.UsageErrorf("lab diagnose needs --bundle FILE: a log bundle from `bootlab lab gather` or openshift-install gather bootstrap (diagnosing a running lab is not built yet)")
			}
			if runF != nil {
				return runF(opts)
			}
			return runDiagnose(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Bundle, "bundle", "", "the log bundle to diagnose (log-bundle-<id>.tar.gz)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&opts.Format, "format", "", "draw the tree with each check's state instead: svg or mermaid")
	_ = cmd.MarkFlagFilename("bundle", "gz", "tgz", "tar")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"svg", "mermaid"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runDiagnose(ctx context.Context, f *cmdutil.Factory, opts *DiagnoseOptions) error {
	r, err := lab.DiagnoseBundle(ctx, opts.Bundle)
	if err != nil {
		return fmt.Errorf("--bundle %w", err)
	}
	switch {
	case opts.Format == "svg":
		_, err = f.Streams.Out.Write(r.Picture().SVG())
	case opts.Format == "mermaid":
		_, err = f.Streams.Out.Write(r.Picture().Mermaid())
	case opts.Output == "json":
		err = cmdutil.WriteJSON(f.Streams.Out, "Diagnosis", r)
	default:
		err = r.WriteText(f.Streams.Out)
	}
	if err != nil {
		return err
	}
	if !r.OK {
		return cmdutil.WithCode(cmdutil.ExitCheckFailed, errors.New(opts.Bundle+": "+r.Summary()))
	}
	f.Say("info", "%s: %s", opts.Bundle, r.Summary())
	return nil
}
