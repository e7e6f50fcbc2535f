package labcmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab"
)

// VerifyOptions are the options of `lab verify`.
type VerifyOptions struct {
	Spec    cmdutil.SpecFlags
	Output  string
	Timeout time.Duration
}

// NewCmdVerify builds `lab verify`.
func NewCmdVerify(f *cmdutil.Factory, runF func(*VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the lab: DNS, load balancer frontends and backends, and (probe labs) every node's own checks",
		Example: `  bootlab lab verify
  bootlab lab verify --name demo --timeout 0
  bootlab lab verify -f lab.yaml -o json`,
		Long: `Check the lab from the host, and on a probe lab collect every node's report.

Host checks: api, api-int, a random name under *.apps and each node's name
through the lab's dnsmasq; every load balancer frontend through haproxy (TLS
GET /readyz on 6443, /healthz on 22623, TCP on 80 and 443); each backend's
health in haproxy's stats. Probe labs add each node's report from its serial
console (DHCP address and hostname, Ignition from fw_cfg, the pointer config
followed to the MCS, DNS, what it serves). After ` + "`lab pivot`" + ` the bootstrap
is no longer expected.

On a rehearsal lab the stages start the services: a check that waits for a
stage not yet run (the masters' config waits for the MCS of stage 12) is
pending (…), with the stage to run, not failed; once the stage has run (its
stage records say so) it counts for real. A rehearsal lab's real Kubernetes API
is checked from stage 13 on, with the admin kubeconfig from the bootstrap:
/readyz through api and through api-int (and which nodes haproxy sends 6443 to
now), after stage 14 every master a Ready Node, and after stage 15 the ConfigMap
kube-system/bootstrap progress.service creates.

verify waits up to --timeout for everything to pass, then prints every check
with the reason and the fix for each failure. Exit code 4 when a check failed.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if opts.Timeout < 0 {
				return cmdutil.UsageErrorf("--timeout must not be negative")
			}
			if runF != nil {
				return runF(opts)
			}
			return runVerify(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 3*time.Minute, "wait at most this long for every check to pass (0: check once)")
	return cmd
}

func runVerify(ctx context.Context, f *cmdutil.Factory, opts *VerifyOptions) error {
	l, _, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	res, err := l.Verify(ctx, lab.VerifyOptions{Timeout: opts.Timeout})
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		if err := cmdutil.WriteJSON(f.Streams.Out, "VerifyResult", res); err != nil {
			return err
		}
	} else if err := printVerify(f.Streams.Out, res.Checks, opts.Spec.TargetArgs()); err != nil {
		return err
	}
	if failed := res.Failed(); len(failed) > 0 {
		return cmdutil.WithCode(cmdutil.ExitCheckFailed, fmt.Errorf("%d of %d checks failed on lab %s (first: %s %s)", len(failed), len(res.Checks), res.Lab, failed[0].Group, failed[0].Name))
	}
	// "all 63 passed", or "39 of 63 passed, 24 pending" on a rehearsal lab
	// whose stages have not started what those checks wait for.
	f.Say("info", "%s on lab %s in %s", check.Summarize(res.Checks), res.Lab, (time.Duration(res.ElapsedMS) * time.Millisecond).Round(100*time.Millisecond))
	return nil
}

// printVerify prints the checks as every check list prints, with the
// commands in the fixes pointed at the lab the user named.
func printVerify(out io.Writer, checks []check.Result, target string) error {
	return check.Write(out, checks, check.Options{GroupTitle: "WHERE",
		Fix: func(fix string) string { return cmdutil.Retarget(fix, target) }})
}
