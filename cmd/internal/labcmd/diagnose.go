package labcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/diagram"
	"github.com/bootlab/bootlab/lab"
)

// DiagnoseOptions are the options of `lab diagnose`.
type DiagnoseOptions struct {
	// Spec names the running lab to diagnose (without Bundle).
	Spec cmdutil.SpecFlags
	// Bundle is the log bundle to diagnose ("": the running lab).
	Bundle string
	Output string
	// Format draws the tree instead: svg or mermaid ("" for none).
	Format string
}

// NewCmdDiagnose builds `lab diagnose [--bundle FILE]`. runF replaces the
// behaviour in tests.
func NewCmdDiagnose(f *cmdutil.Factory, runF func(*DiagnoseOptions) error) *cobra.Command {
	opts := &DiagnoseOptions{}
	cmd := &cobra.Command{
		Use:   "diagnose [--bundle FILE]",
		Short: "Walk the bootstrap troubleshooting tree over the running lab or a log bundle: where it stopped, the evidence, what to do",
		Long: `Walk the troubleshooting tree of docs/troubleshooting.md over the running
lab (a probe or rehearsal lab, found as every lab command finds it: -f,
--name), or with --bundle over a log bundle (bootlab's, or openshift-install
gather bootstrap's log-bundle-<id>.tar.gz): the bootstrap node's services, clocks and
certificates, then etcd healthy? -> API accessible? -> masters joining? ->
bootkube completing?, with the connections each needs, the CSRs and the
etcd membership. Every check has an id (etcd.healthy, service.release-image),
a state (passed, failed, unknown: the bundle does not show it) and its
evidence: the log line, with the file and line number it came from.

On the running lab it reads what lab gather collects (over the lab's SSH
path, into memory: no bundle is written), tries each connection the
bootstrap needs from the node that makes it where bootlab can run a command
there (the bootstrap; a probe or rehearsal lab's masters run no SSH server:
those rows say they could not be tried, and are judged from the logs and
the masters' own reports), tries the load balancer and asks the lab's DNS
(api, api-int, *.apps, node names and their reverse) from this machine, each
with the command and what answered. It changes nothing on the lab. An
OpenShift lab is diagnosed from its bundle: lab gather, then --bundle.

It prints the first check that fails, its evidence and what to do, then
every check; "healthy" only when every check passed, and what it could not
see. A bootstrap that has not completed is never healthy: with no check
failed, it says the stage it reached and which checks wait for later ones.
-o json prints the same (docs/json.md, kind Diagnosis); --format svg or
mermaid draws the tree with each check's state. With --bundle no lab is
needed.

Only logs, service records, a few API objects and certificates are read of
the bundle; log lines are printed with tokens, passwords and keys hidden.
Exit code 4 when a check failed, 3 when the file is no log bundle or the lab
an OpenShift lab.`,
		Example: `  bootlab lab diagnose
  bootlab lab diagnose -f lab.yaml -o json
  bootlab lab diagnose --bundle log-bundle-20250514103000.tar.gz
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
			if opts.Bundle != "" {
				for _, fl := range []string{"file", "name", "uri", "lab-dir"} {
					if cmd.Flags().Changed(fl) {
						return cmdutil.UsageErrorf("--bundle reads a bundle and --%s names a running lab: give one of them", fl)
					}
				}
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Bundle == "" {
				return runDiagnoseLive(cmd.Context(), f, opts)
			}
			return runDiagnose(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.Flags().StringVar(&opts.Bundle, "bundle", "", "the log bundle to diagnose (log-bundle-<id>.tar.gz; default: the running lab)")
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
	return printDiagnosis(f, opts, opts.Bundle, diagnosisView{doc: r, ok: r.OK, summary: r.Summary(), picture: r.Picture, text: r.WriteText})
}

// runDiagnoseLive diagnoses the running lab the target flags name.
func runDiagnoseLive(ctx context.Context, f *cmdutil.Factory, opts *DiagnoseOptions) error {
	l, s, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	r, err := l.Diagnose(ctx)
	if err != nil {
		return err
	}
	return printDiagnosis(f, opts, "lab "+s.Name, diagnosisView{doc: r, ok: r.OK, summary: r.Summary(), picture: r.Picture, text: r.WriteText})
}

// diagnosisView is what the command prints of a diagnosis.
type diagnosisView struct {
	doc     any
	ok      bool
	summary string
	picture func() *diagram.Decision
	text    func(io.Writer) error
}

// printDiagnosis prints r as opts ask (text, JSON, or the tree) on stdout,
// the verdict on stderr; a failed check is exit code 4.
func printDiagnosis(f *cmdutil.Factory, opts *DiagnoseOptions, source string, r diagnosisView) error {
	var err error
	switch {
	case opts.Format == "svg":
		_, err = f.Streams.Out.Write(r.picture().SVG())
	case opts.Format == "mermaid":
		_, err = f.Streams.Out.Write(r.picture().Mermaid())
	case opts.Output == "json":
		err = cmdutil.WriteJSON(f.Streams.Out, "Diagnosis", r.doc)
	default:
		err = r.text(f.Streams.Out)
	}
	if err != nil {
		return err
	}
	if !r.ok {
		return cmdutil.WithCode(cmdutil.ExitCheckFailed, errors.New(source+": "+r.summary))
	}
	f.Say("info", "%s: %s", source, r.summary)
	return nil
}
