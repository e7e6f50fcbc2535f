package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"sync"

	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/release"
	"github.com/bootlab/bootlab/lab/spec"
	"github.com/bootlab/bootlab/lab/upstream"
	"github.com/bootlab/bootlab/lab/verify"
)

// DefaultTunnel is where the API of a lab on a remote hypervisor is
// forwarded to on this machine (6443 is left to a local lab's API).
const DefaultTunnel = "127.0.0.1:16443"

// KubeconfigOptions tune Kubeconfig.
type KubeconfigOptions struct {
	// Tunnel is the local address a remote lab's kubeconfig points at
	// (DefaultTunnel when empty); ServeAPITunnel must then forward it.
	Tunnel string
	// Lookup resolves the API's name on this machine (nil: the host's
	// resolver); tests pass their own.
	Lookup cluster.Resolver
}

// Kubeconfig is the kubeconfig `lab kubeconfig` wrote for the lab.
type Kubeconfig struct {
	// Path is the file (0600): <labDir>/kubeconfig.
	Path string `json:"path"`
	// Context is its one context, named after the lab (bootlab-<name>).
	Context string `json:"context"`
	// Server and TLSServerName are where kubectl connects and the name the
	// API's certificate is checked for (empty: the server's own name).
	Server        string `json:"server"`
	TLSServerName string `json:"tlsServerName,omitempty"`
	// Tunnel is set for a lab on a remote hypervisor: the local address
	// that must be forwarded to the lab's API while kubectl runs.
	Tunnel string `json:"tunnel,omitempty"`
}

// KubeconfigPath is where Kubeconfig writes the lab's kubeconfig.
func (l *Lab) KubeconfigPath() string { return labdir.Kubeconfig(l.spec) }

// kubeContext is the name of a lab's context in the kubeconfig bootlab
// writes (kind names its own kind-<name>).
func kubeContext(s *spec.Spec) string { return "bootlab-" + s.Name }

// Kubeconfig writes a kubeconfig for the lab's admin into the lab
// directory: the installer's (OpenShift lab) or the one on the bootstrap
// (rehearsal lab), with one context named after the lab, pointed at the
// API as this machine reaches it: by name when it resolves the lab's names,
// else at the load balancer's address with the name as tls-server-name
// (never without verifying the certificate); for a lab on a remote
// hypervisor, at a local tunnel (see ServeAPITunnel).
func (l *Lab) Kubeconfig(ctx context.Context, o KubeconfigOptions) (*Kubeconfig, error) {
	if !l.Built() {
		return nil, &NotBuiltError{Lab: l.spec.Name}
	}
	s := l.spec
	n, done, err := l.labNet(ctx, s)
	if err != nil {
		return nil, err
	}
	defer done()
	admin, err := cluster.AdminKubeconfig(ctx, s, n)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of lab %s: %w", s.Name, err)
	}
	out := &Kubeconfig{Path: labdir.Kubeconfig(s), Context: kubeContext(s)}
	var ep cluster.Endpoint
	if s.Remote() {
		out.Tunnel = o.Tunnel
		if out.Tunnel == "" {
			out.Tunnel = DefaultTunnel
		}
		ep, err = cluster.TunnelEndpoint(admin.Server, out.Tunnel)
	} else {
		lookup := o.Lookup
		if lookup == nil {
			lookup = net.DefaultResolver.LookupHost
		}
		ep, err = cluster.HostEndpoint(ctx, admin.Server, s.Network.APIAddress, lookup)
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of lab %s: %w", s.Name, err)
	}
	out.Server, out.TLSServerName = ep.Server, ep.TLSServerName
	data, err := admin.Render(out.Context, ep)
	if err != nil {
		return nil, err
	}
	return out, cluster.WriteKubeconfig(out.Path, data)
}

// labNet is how the lab network is reached from here: directly, or
// through the SSH connection of its remote hypervisor host. done closes it.
func (l *Lab) labNet(ctx context.Context, s *spec.Spec) (cluster.Net, func(), error) {
	if !s.Remote() {
		return cluster.Net{}, func() {}, nil
	}
	h, err := host.Open(ctx, s.Libvirt.URI, host.Options{Log: l.o.Log})
	if err != nil {
		return cluster.Net{}, nil, err
	}
	return netOf(h), func() { _ = h.Close() }, nil
}

// netOf is how the lab network is reached through h: directly when h is
// this machine, else through its SSH connection.
func netOf(h host.Host) cluster.Net {
	if h == nil || !h.Remote() {
		return cluster.Net{}
	}
	n := cluster.Net{Dial: h.Dial}
	if sh, ok := h.(*host.SSH); ok {
		n.Via = sh.Client()
	}
	return n
}

// kubeClients opens a rehearsal lab's API for verify: the admin
// kubeconfig from the bootstrap, through the load balancer by the names
// api and api-int (the certificate checked for each).
func kubeClients(s *spec.Spec, n cluster.Net) verify.KubeClients {
	return func(ctx context.Context) (verify.KubeAPI, verify.KubeAPI, error) {
		k, err := cluster.AdminKubeconfig(ctx, s, n)
		if err != nil {
			return nil, nil, err
		}
		api, err := cluster.NewClient(k, s.Network.APIAddress, n.Dial)
		if err != nil {
			return nil, nil, err
		}
		internal := *k
		internal.Server = fmt.Sprintf("https://api-int.%s:%d", s.Cluster.Domain(), apiPort)
		apiInt, err := cluster.NewClient(&internal, s.Network.APIAddress, n.Dial)
		if err != nil {
			return nil, nil, err
		}
		return api, apiInt, nil
	}
}

// ServeAPITunnel forwards each connection to listen to the lab's API
// (network.apiAddress:6443) through the remote hypervisor host, until ctx
// ends. ready is called with the address once it listens.
func (l *Lab) ServeAPITunnel(ctx context.Context, listen string, ready func(addr string)) error {
	s := l.spec
	n, done, err := l.labNet(ctx, s)
	if err != nil {
		return err
	}
	defer done()
	dial := n.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		return fmt.Errorf("tunnel to the API of lab %s: %w (another `bootlab lab kubeconfig` holds it? choose another with --tunnel)", s.Name, err)
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	target := net.JoinHostPort(s.Network.APIAddress, strconv.Itoa(apiPort))
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("tunnel to the API of lab %s: %w", s.Name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			forward(ctx, c, dial, target, l)
		}()
	}
}

// apiPort is the Kubernetes API's port behind the load balancer.
const apiPort = 6443

// forward copies between c and a connection to target until either side
// closes.
func forward(ctx context.Context, c net.Conn, dial cluster.DialFunc, target string, l *Lab) {
	defer c.Close()
	up, err := dial(ctx, "tcp", target)
	if err != nil {
		l.o.Log.Warn("tunnel: cannot reach the lab's API", "target", target, "err", err)
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Kubectl is the command that runs the release's kubectl (from the cache:
// the official binary, or the hyperkube built, called by the name
// kubectl) with KUBECONFIG set to the lab's kubeconfig; the caller sets
// its streams and runs it. Getting Kubernetes the first time takes a
// download or minutes of build (a rehearsal lab's `lab up` has done it).
func (l *Lab) Kubectl(ctx context.Context, kubeconfig string, args []string) (*exec.Cmd, error) {
	// A spec that names no version (the demo lab's) installs the default,
	// as up does.
	rel, err := release.For(OpenShiftVersion(l.spec))
	if err != nil {
		return nil, fmt.Errorf("kubectl for lab %s: %w", l.spec.Name, err)
	}
	b, err := upstream.Get(ctx, upstream.Kubernetes(rel), upstream.Options{CacheDir: probe.DefaultCacheDir(), Log: l.o.Log})
	if err != nil {
		return nil, fmt.Errorf("kubectl for lab %s: %w", l.spec.Name, err)
	}
	cmd, err := b.Command(ctx, "kubectl", args...)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+kubeconfig)
	return cmd, nil
}

// KubectlExit is the exit code of a kubectl that ran and failed, or -1.
func KubectlExit(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
