package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The host reaches the API by name only when it resolves the name to the
// lab's load balancer; otherwise at the address, the name kept for TLS.
func TestHostEndpoint(t *testing.T) {
	t.Parallel()
	resolves := func(addrs ...string) Resolver {
		return func(context.Context, string) ([]string, error) { return addrs, nil }
	}
	unknown := func(context.Context, string) ([]string, error) { return nil, errors.New("no such host") }
	for _, c := range []struct {
		name, server string
		lookup       Resolver
		want         Endpoint
	}{
		{"resolved to the load balancer", "https://api.ocp.lab.local:6443", resolves("192.168.126.1"), Endpoint{Server: "https://api.ocp.lab.local:6443"}},
		{"not resolved", "https://api.ocp.lab.local:6443", unknown, Endpoint{Server: "https://192.168.126.1:6443", TLSServerName: "api.ocp.lab.local"}},
		{"resolved elsewhere", "https://api.ocp.lab.local:6443", resolves("10.0.0.9"), Endpoint{Server: "https://192.168.126.1:6443", TLSServerName: "api.ocp.lab.local"}},
		{"an address already", "https://192.168.126.1:6443", unknown, Endpoint{Server: "https://192.168.126.1:6443"}},
		{"no port", "https://api.ocp.lab.local", unknown, Endpoint{Server: "https://192.168.126.1:443", TLSServerName: "api.ocp.lab.local"}},
	} {
		got, err := HostEndpoint(context.Background(), c.server, "192.168.126.1", c.lookup)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
	_, err := HostEndpoint(context.Background(), "api:6443", "192.168.126.1", unknown)
	assert.ErrorContains(t, err, `kubeconfig server "api:6443" is no https://HOST:PORT URL`)

	ep, err := TunnelEndpoint("https://api.ocp.lab.local:6443", "127.0.0.1:16443")
	require.NoError(t, err)
	assert.Equal(t, Endpoint{Server: "https://127.0.0.1:16443", TLSServerName: "api.ocp.lab.local"}, ep)
}

// The rendered kubeconfig reads back as the same credentials, pointed at
// the endpoint, and is written 0600 even over a looser file.
func TestRenderAndWriteKubeconfig(t *testing.T) {
	t.Parallel()
	k := &Kubeconfig{Server: "https://api.x:6443", CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")}
	data, err := k.Render("bootlab-x", Endpoint{Server: "https://10.1.1.1:6443", TLSServerName: "api.x"})
	require.NoError(t, err)
	assert.Contains(t, string(data), "tls-server-name: api.x")
	assert.Contains(t, string(data), "current-context: bootlab-x")
	assert.NotContains(t, string(data), "insecure")
	back, err := ParseKubeconfig("rendered", data, "")
	require.NoError(t, err)
	assert.Equal(t, &Kubeconfig{Path: "rendered", Server: "https://10.1.1.1:6443", TLSServerName: "api.x", CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")}, back)

	path := filepath.Join(t.TempDir(), "lab", "kubeconfig")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path+".tmp", []byte("old"), 0o644))
	require.NoError(t, WriteKubeconfig(path, data))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}
