package labcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/lab"
)

// ApproveCSRsOptions are the options of `lab approve-csrs`.
type ApproveCSRsOptions struct {
	Spec     cmdutil.SpecFlags
	Watch    bool
	DryRun   bool
	All      bool
	Interval time.Duration
	Output   string
}

// NewCmdApproveCSRs builds `lab approve-csrs`.
func NewCmdApproveCSRs(f *cmdutil.Factory, runF func(*ApproveCSRsOptions) error) *cobra.Command {
	opts := &ApproveCSRsOptions{}
	cmd := &cobra.Command{
		Use:   "approve-csrs",
		Short: "Show pending CSRs and approve only those of this lab's nodes (never blindly)",
		Example: `  bootlab lab approve-csrs --dry-run
  bootlab lab approve-csrs --watch -f lab.yaml`,
		Long: `Platform none has no machine approver: once the bootstrap's approve-csr.service
stops (at .bootkube.done), each node that joins asks twice and someone must approve:

  1. a kubelet client CSR (signer kubernetes.io/kube-apiserver-client-kubelet)
     from system:serviceaccount:openshift-machine-config-operator:node-bootstrapper
     for subject system:node:<node>;
  2. then a kubelet serving CSR (signer kubernetes.io/kubelet-serving) from
     system:node:<node> for its own names and address.

approve-csrs lists the pending CSRs with requestor and signer, says what each one
is, and approves exactly those two kinds for this lab's masters and workers (short
name or FQDN), with SANs of that node only. Everything else is refused, with the
reason. --watch keeps looking (workers send the serving CSR only after the client
one is approved). On a rehearsal lab (openshift.manualBootstrap) it reaches the
real API with the admin kubeconfig on the bootstrap (/opt/openshift/auth), so the
bootstrap must be up.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runApproveCSRs(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	fl := cmd.Flags()
	fl.BoolVarP(&opts.Watch, "watch", "w", false, "keep watching for new CSRs until interrupted")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "only show what would be approved")
	fl.BoolVar(&opts.All, "all", false, "also list CSRs that are no longer pending")
	fl.DurationVar(&opts.Interval, "interval", 10*time.Second, "how often to look with --watch")
	fl.StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runApproveCSRs(ctx context.Context, f *cmdutil.Factory, opts *ApproveCSRsOptions) error {
	l, spec, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	if spec.Profile != labspec.ProfileOpenShift && !spec.Rehearsal() {
		return cmdutil.WithCode(cmdutil.ExitInvalid, fmt.Errorf("lab %s is a %s lab without openshift.manualBootstrap: it has no cluster whose CSRs to approve", spec.Name, spec.Profile))
	}
	a, err := l.CSRApprover(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	return approveCSRs(ctx, f, opts, a)
}

// csrReviewer is one look at the lab's CSRs (lab.CSRApprover; tests pass
// a cluster client of their own).
type csrReviewer interface {
	Review(ctx context.Context, dryRun bool) ([]lab.CSRReview, error)
}

// approveCSRs is the loop of `approve-csrs`, apart from the spec for tests.
func approveCSRs(ctx context.Context, f *cmdutil.Factory, opts *ApproveCSRsOptions, csrs csrReviewer) error {
	seen := map[string]bool{}
	first := true
	lastErr := ""
	for {
		reviews, err := csrs.Review(ctx, opts.DryRun)
		if err != nil {
			if !opts.Watch {
				return err
			}
			if ctx.Err() != nil {
				return nil // an interrupted watch ends quietly
			}
			// The API comes and goes while the control plane rolls out:
			// a watch says so once and keeps looking.
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				f.Status.Infof("%v; still watching, next look in %s", err, opts.Interval)
			}
			if !timing.Sleep(ctx, opts.Interval) {
				return nil
			}
			continue
		}
		lastErr = ""
		var show []lab.CSRReview
		for _, r := range reviews {
			if (r.State != "Pending" && !r.Approved && !opts.All) || seen[r.Name] {
				continue
			}
			seen[r.Name] = true
			show = append(show, r)
		}
		if err := printCSRs(f, opts, show, first); err != nil {
			return err
		}
		if first && len(show) == 0 && !opts.Watch {
			f.Status.Infof("no pending CSRs")
		}
		first = false
		if !opts.Watch {
			return nil
		}
		if !timing.Sleep(ctx, opts.Interval) {
			return nil
		}
	}
}

func printCSRs(f *cmdutil.Factory, opts *ApproveCSRsOptions, rs []lab.CSRReview, header bool) error {
	if opts.Output == "json" {
		// One document a CSR, one a line: --watch streams them.
		for _, r := range rs {
			var b strings.Builder
			if err := cmdutil.WriteJSON(&b, "CSRReview", r); err != nil {
				return err
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(b.String())); err != nil {
				return err
			}
			fmt.Fprintln(f.Streams.Out, compact.String())
		}
		return nil
	}
	if len(rs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(f.Streams.Out, 0, 4, 2, ' ', 0)
	if header {
		fmt.Fprintln(tw, "NAME\tAGE\tKIND\tSIGNER\tREQUESTOR\tNODE\tACTION")
	}
	for _, r := range rs {
		node := r.Node
		if node == "" {
			node = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, age(r.Created), r.Kind, r.Signer, r.Requestor, node, action(r, opts.DryRun))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	explainCSRs(f.Streams.ErrOut, rs)
	return nil
}

func action(r lab.CSRReview, dryRun bool) string {
	switch {
	case r.Approved:
		return "approved"
	case r.State != "Pending":
		return r.State
	case r.Approve && dryRun:
		return "would approve"
	case r.Approve:
		return "approve"
	}
	return "refused"
}

func explainCSRs(w io.Writer, rs []lab.CSRReview) {
	for _, r := range rs {
		fmt.Fprintf(w, "   %s: %s (%s). %s\n", r.Name, r.Kind, lab.ExplainCSR(r.Kind), r.Reason)
	}
}

func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
