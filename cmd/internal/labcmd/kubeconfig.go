package labcmd

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// KubeconfigOptions are the options of `lab kubeconfig`.
type KubeconfigOptions struct {
	Spec     cmdutil.SpecFlags
	Tunnel   string
	NoTunnel bool
}

// NewCmdKubeconfig builds `lab kubeconfig`.
func NewCmdKubeconfig(f *cmdutil.Factory, runF func(*KubeconfigOptions) error) *cobra.Command {
	opts := &KubeconfigOptions{}
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Write the lab's admin kubeconfig (context bootlab-<name>) and print its path",
		Example: `  bootlab lab kubeconfig --name demo
  bootlab lab kubeconfig -f lab.yaml --no-tunnel`,
		Long: `Write <lab dir>/kubeconfig (0600) and print its path on stdout. It is the lab's
admin kubeconfig: the installer's auth/kubeconfig on an OpenShift lab, the one
in /opt/openshift/auth on a rehearsal lab's bootstrap (read over SSH, so the
bootstrap must be up), with one context named bootlab-<lab name>.

The server is the API as this machine reaches it: https://api.<cluster domain>:6443
when this machine resolves the lab's names to the load balancer (lab up sets
up host DNS where it can), else the load balancer's address with
tls-server-name api.<cluster domain>, so kubectl still verifies the API's
certificate against the lab's CA (never insecure-skip-tls-verify).

A lab on a remote hypervisor is reached through a tunnel: the server is
--tunnel (127.0.0.1:16443), forwarded over the hypervisor host's SSH
connection to the load balancer for as long as this command runs; keep it
running in a terminal of its own (--no-tunnel only writes the file).

Any kubectl works with the file; ` + "`bootlab lab kubectl -- ARGS`" + ` runs the release's own
kubectl, the one bootlab built for the lab's nodes, with it.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, err := net.SplitHostPort(opts.Tunnel); err != nil {
				return cmdutil.UsageErrorf("--tunnel %q: want HOST:PORT, e.g. %s", opts.Tunnel, lab.DefaultTunnel)
			}
			if runF != nil {
				return runF(opts)
			}
			return runKubeconfig(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.Flags().StringVar(&opts.Tunnel, "tunnel", lab.DefaultTunnel, "local address of the tunnel to a remote lab's API")
	cmd.Flags().BoolVar(&opts.NoTunnel, "no-tunnel", false, "only write the kubeconfig; do not keep the tunnel of a remote lab open")
	return cmd
}

func runKubeconfig(ctx context.Context, f *cmdutil.Factory, opts *KubeconfigOptions) error {
	l, spec, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	k, err := l.Kubeconfig(ctx, lab.KubeconfigOptions{Tunnel: opts.Tunnel})
	if err != nil {
		return err
	}
	fmt.Fprintln(f.Streams.Out, k.Path)
	where := k.Server
	if k.TLSServerName != "" {
		where += " (certificate checked for " + k.TLSServerName + ")"
	}
	f.Say("info", "context %s: %s\nuse it: export KUBECONFIG=%s; kubectl get --raw /readyz   (or `bootlab lab kubectl%s -- get --raw /readyz`)",
		k.Context, where, k.Path, targetSuffix(opts.Spec.TargetArgs()))
	if k.Tunnel == "" || opts.NoTunnel {
		if k.Tunnel != "" {
			f.Say("info", "the server is a tunnel: open it with `bootlab lab kubeconfig%s` and keep that running", targetSuffix(opts.Spec.TargetArgs()))
		}
		return nil
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return l.ServeAPITunnel(ctx, k.Tunnel, func(addr string) {
		f.Say("info", "forwarding %s to the API of lab %s (%s:6443) through %s: keep this running while you use kubectl; Ctrl-C ends it",
			addr, spec.Name, spec.Network.APIAddress, spec.Libvirt.URI)
	})
}

// targetSuffix is " ARGS" for a command line, or "" without target flags.
func targetSuffix(args string) string {
	if args == "" {
		return ""
	}
	return " " + args
}

// KubectlOptions are the options of `lab kubectl`.
type KubectlOptions struct {
	Spec cmdutil.SpecFlags
	Args []string
}

// NewCmdKubectl builds `lab kubectl -- ARGS`.
func NewCmdKubectl(f *cmdutil.Factory, runF func(*KubectlOptions) error) *cobra.Command {
	opts := &KubectlOptions{}
	cmd := &cobra.Command{
		Use:   "kubectl [flags] -- KUBECTL-ARGS...",
		Short: "Run the release's kubectl against the lab (its admin kubeconfig, context bootlab-<name>)",
		Example: `  bootlab lab kubectl -- get --raw /readyz
  bootlab lab kubectl --name demo -- get cm -n kube-system bootstrap
  bootlab lab kubectl -- get nodes`,
		Long: `Run kubectl with the words after -- and KUBECONFIG set to the lab's kubeconfig
(written by ` + "`bootlab lab kubeconfig`" + `, and written first when it is not there). The
kubectl is the lab's OpenShift release's own, from the hyperkube bootlab built
for the nodes (cached; built the first time, which takes minutes). Exit code:
kubectl's.

A lab on a remote hypervisor is reached through the tunnel ` + "`bootlab lab kubeconfig`" + `
keeps open: run that in a terminal of its own first.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || cmd.ArgsLenAtDash() != 0 {
				return cmdutil.UsageErrorf("put kubectl's arguments after --: bootlab lab kubectl -- get nodes")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			if runF != nil {
				return runF(opts)
			}
			return runKubectl(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	return cmd
}

func runKubectl(ctx context.Context, f *cmdutil.Factory, opts *KubectlOptions) error {
	l, _, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	path := l.KubeconfigPath()
	if _, err := os.Stat(path); err != nil {
		k, err := l.Kubeconfig(ctx, lab.KubeconfigOptions{})
		if err != nil {
			return err
		}
		path = k.Path
	}
	cmd, err := l.Kubectl(ctx, path, opts.Args)
	if err != nil {
		return err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f.Streams.In, f.Streams.Out, f.Streams.ErrOut
	err = cmd.Run()
	if code := lab.KubectlExit(err); code > 0 {
		// kubectl said why; exit with its code.
		return cmdutil.WithCode(code, cmdutil.ErrSilent)
	}
	if err != nil {
		return fmt.Errorf("run kubectl: %w", err)
	}
	return nil
}
