package labcmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// WaitOptions are the options of `lab wait`.
type WaitOptions struct {
	Spec cmdutil.SpecFlags
	// Event is bootstrap-complete or install-complete.
	Event            string
	APITimeout       time.Duration
	BootstrapTimeout time.Duration
	InstallTimeout   time.Duration
	Interval         time.Duration
	NoSSH            bool
	NoStartWorkers   bool
}

// Wait events.
const (
	EventBootstrapComplete = "bootstrap-complete"
	EventInstallComplete   = "install-complete"
)

// NewCmdWait builds `lab wait bootstrap-complete|install-complete`.
func NewCmdWait(f *cmdutil.Factory, runF func(*WaitOptions) error) *cobra.Command {
	opts := &WaitOptions{}
	cmd := &cobra.Command{
		Use:   "wait bootstrap-complete|install-complete",
		Short: "Tell the bootstrap (or the install) as it happens, until it completes",
		Example: `  bootlab lab wait bootstrap-complete -f lab.yaml
  bootlab lab wait install-complete --name ocp1 --install-timeout 60m`,
		Long: `bootstrap-complete narrates the bootstrap of an OpenShift lab the way
openshift-install wait-for bootstrap-complete decides it, with more to see:
the API answering /readyz through the load balancer, the Machine Config Server
answering /healthz on 22623, over SSH (core@bootstrap, lab key) each new
/opt/openshift/*.done marker of bootkube.sh and each container started, the etcd
members, the masters registering and becoming Ready, then the kube-system/bootstrap
ConfigMap saying status: complete and the etcd operator reporting
EtcdBootstrapMemberRemoved=True. Then it is safe to run ` + "`bootlab lab pivot`" + `.
When the masters' MCS starts serving /config/worker, the deferred workers are
started (unless --no-start-workers).

install-complete waits for ClusterVersion Available=True, Progressing=False,
telling the operators as they become available and pending CSRs to approve.

Timeouts are the installer's: 20m for the API, 45m more for bootstrap-complete,
40m for install-complete.`,
		Args:      cmdutil.ExactArgs(1),
		ValidArgs: []string{EventBootstrapComplete, EventInstallComplete},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Event = args[0]
			if opts.Event != EventBootstrapComplete && opts.Event != EventInstallComplete {
				return cmdutil.UsageErrorf("wait for %s or %s, not %q", EventBootstrapComplete, EventInstallComplete, opts.Event)
			}
			if runF != nil {
				return runF(opts)
			}
			return runWait(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	fl := cmd.Flags()
	fl.DurationVar(&opts.APITimeout, "api-timeout", lab.DefaultAPITimeout, "how long to wait for the Kubernetes API")
	fl.DurationVar(&opts.BootstrapTimeout, "bootstrap-timeout", lab.DefaultBootstrapTimeout, "how long to wait, once the API is up, for bootstrap-complete")
	fl.DurationVar(&opts.InstallTimeout, "install-timeout", lab.DefaultInstallTimeout, "how long to wait for install-complete")
	fl.DurationVar(&opts.Interval, "interval", lab.DefaultPollInterval, "how often to look")
	fl.BoolVar(&opts.NoSSH, "no-ssh", false, "do not log in to the bootstrap node to watch bootkube's markers and containers")
	fl.BoolVar(&opts.NoStartWorkers, "no-start-workers", false, "do not start deferred workers when the masters' MCS serves /config/worker")
	return cmd
}

func runWait(ctx context.Context, f *cmdutil.Factory, opts *WaitOptions) error {
	l, _, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	wo := lab.WaitOptions{
		APITimeout: opts.APITimeout, BootstrapTimeout: opts.BootstrapTimeout, InstallTimeout: opts.InstallTimeout,
		Interval: opts.Interval, NoSSH: opts.NoSSH, NoStartWorkers: opts.NoStartWorkers,
	}
	if opts.Event == EventInstallComplete {
		return l.WaitInstall(ctx, wo)
	}
	return l.WaitBootstrap(ctx, wo)
}
