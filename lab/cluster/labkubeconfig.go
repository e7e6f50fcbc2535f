package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// AdminKubeconfig is the lab's admin kubeconfig: for an OpenShift lab the
// installer's <assets>/auth/kubeconfig, for a rehearsal lab the one
// bootlab wrote on the bootstrap (read over SSH: the host keeps no copy).
func AdminKubeconfig(ctx context.Context, s *spec.Spec, n Net) (*Kubeconfig, error) {
	if !s.Rehearsal() {
		if s.Profile != spec.ProfileOpenShift {
			return nil, fmt.Errorf("lab %s is a %s lab without openshift.manualBootstrap: it runs no Kubernetes API", s.Name, s.Profile)
		}
		return LoadKubeconfig(filepath.Join(labdir.Assets(s), "auth", "kubeconfig"))
	}
	ssh, err := BootstrapSSH(s, n)
	if err != nil {
		return nil, err
	}
	defer ssh.Close()
	return nodeKubeconfig(ctx, ssh, RehearsalKubeconfigPath)
}

// Endpoint is where a kubeconfig written on the host sends kubectl: the
// server URL and, when the URL is an address rather than the name the
// serving certificate carries, that name (tls-server-name), so the
// certificate is still verified against the lab's CA.
type Endpoint struct {
	Server        string
	TLSServerName string
}

// Resolver looks a host name up (net.Resolver.LookupHost).
type Resolver func(ctx context.Context, host string) ([]string, error)

// HostEndpoint is how the host reaches the API of the kubeconfig's server
// (https://api.<domain>:6443): by that name when the host resolves it to
// the lab's API address (host DNS set up by lab up), else at the address
// itself with the name as tls-server-name. A server already given as an
// address is kept.
func HostEndpoint(ctx context.Context, server, apiAddress string, lookup Resolver) (Endpoint, error) {
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" {
		return Endpoint{}, fmt.Errorf("kubeconfig server %q is no https://HOST:PORT URL", server)
	}
	name, port := u.Hostname(), u.Port()
	if port == "" {
		port = "443"
	}
	if net.ParseIP(name) != nil || apiAddress == "" {
		return Endpoint{Server: server}, nil
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if addrs, err := lookup(lctx, name); err == nil && slices.Contains(addrs, apiAddress) {
		return Endpoint{Server: server}, nil
	}
	return Endpoint{Server: "https://" + net.JoinHostPort(apiAddress, port), TLSServerName: name}, nil
}

// TunnelEndpoint is the API of server reached through a local tunnel at
// listen (127.0.0.1:PORT): the certificate is verified against the name.
func TunnelEndpoint(server, listen string) (Endpoint, error) {
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" {
		return Endpoint{}, fmt.Errorf("kubeconfig server %q is no https://HOST:PORT URL", server)
	}
	ep := Endpoint{Server: "https://" + listen}
	if net.ParseIP(u.Hostname()) == nil {
		ep.TLSServerName = u.Hostname()
	}
	return ep, nil
}

// Render is k as a kubeconfig of its own with one context, name (cluster,
// user and context all named so), pointed at ep; certificates inline, so
// the file works wherever it is copied.
func (k *Kubeconfig) Render(name string, ep Endpoint) ([]byte, error) {
	return kube.RenderKubeconfig(name, kube.Config{Server: ep.Server, ServerName: ep.TLSServerName,
		CAPEM: k.CAData, CertPEM: k.CertData, KeyPEM: k.KeyData, Token: k.Token})
}

// WriteKubeconfig writes data to path, 0600 (it holds the admin's key),
// atomically, making its directory (0700) when needed.
func WriteKubeconfig(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return nil
}
