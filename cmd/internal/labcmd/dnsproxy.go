package labcmd

import (
	"context"
	"fmt"
	"net"
	"os/signal"
	"syscall"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/dnsproxy"
)

// DNSProxyOptions are the options of `lab dns-proxy`.
type DNSProxyOptions struct {
	Spec   cmdutil.SpecFlags
	Listen string
}

// NewCmdDNSProxy builds `lab dns-proxy`.
func NewCmdDNSProxy(f *cmdutil.Factory, runF func(*DNSProxyOptions) error) *cobra.Command {
	opts := &DNSProxyOptions{}
	cmd := &cobra.Command{
		Use:   "dns-proxy",
		Short: "Answer DNS for the lab's names on this machine (for a lab on a remote hypervisor)",
		Example: `  bootlab lab dns-proxy --name demo
  bootlab lab dns-proxy -f lab.yaml --listen 127.0.0.1:5353`,
		Long: `Listen on --listen (UDP and TCP) and forward every DNS query to the lab's
dnsmasq over TCP, through the hypervisor host's SSH connection when the lab is
remote, until interrupted. It is how a workstation resolves a remote lab's
names (api, api-int, *.apps, the nodes): lab up sets up no host DNS for a
remote lab, whose dnsmasq listens on a bridge of the hypervisor's machine.

Point the workstation's resolver at it for the cluster domain only, as the
command prints: with NetworkManager's dnsmasq
  server=/<cluster domain>/127.0.0.1#5353
or try one name with dig @127.0.0.1 -p 5353 api.<cluster domain>.
Reaching the addresses the names resolve to still needs a route or a
forwarded port (see "Remote hypervisor" in the README).`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, err := net.SplitHostPort(opts.Listen); err != nil {
				return cmdutil.UsageErrorf("--listen %q: want HOST:PORT, e.g. 127.0.0.1:5353", opts.Listen)
			}
			if runF != nil {
				return runF(opts)
			}
			return runDNSProxy(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.Flags().StringVar(&opts.Listen, "listen", "127.0.0.1:5353", "address to answer DNS on (UDP and TCP)")
	return cmd
}

func runDNSProxy(ctx context.Context, f *cmdutil.Factory, opts *DNSProxyOptions) error {
	l, spec, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	h, err := l.Hop(ctx)
	if err != nil {
		return err
	}
	defer h.Close()
	upstream := net.JoinHostPort(spec.Network.Gateway, "53")
	p, err := dnsproxy.Listen(opts.Listen, func(ctx context.Context) (net.Conn, error) {
		return h.Dial(ctx, "tcp", upstream)
	}, f.Log)
	if err != nil {
		return err
	}
	f.Say("info", "%s", dnsProxyBanner(spec, p.Addr(), upstream, h.Name()))
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return p.Serve(ctx)
}

// dnsProxyBanner says what the proxy forwards where, and how to use it.
func dnsProxyBanner(spec *spec.Spec, listen, upstream, via string) string {
	host, port, _ := net.SplitHostPort(listen)
	d := spec.Cluster.Domain()
	return fmt.Sprintf("answering DNS on %s (UDP and TCP) from lab %s's dnsmasq %s over TCP, through %s, until interrupted\n"+
		"  try it:            dig @%s -p %s api.%s\n"+
		"  NetworkManager:    echo 'server=/%s/%s#%s' > /etc/NetworkManager/dnsmasq.d/bootlab-%s.conf && nmcli general reload dns-full\n"+
		"  systemd-resolved:  resolvectl dns lo %s:%s && resolvectl domain lo '~%s'",
		listen, spec.Name, upstream, via, host, port, d, d, host, port, spec.Name, host, port, d)
}
