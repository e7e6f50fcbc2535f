package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/agent/endpoints"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/probe"
)

// The agent against what the host serves it: the probe configs lab/probe
// generates, fetched through the MCS stand-in as a node fetches them.

const domain = "ocp.lab.local"

func testInput(t *testing.T) probe.Input {
	t.Helper()
	p, err := pki.Ensure(t.TempDir(), "api-int."+domain)
	require.NoError(t, err)
	return probe.Input{
		ClusterDomain: domain, APIAddress: "192.168.126.1", IngressAddress: "192.168.126.1",
		Nodes: []wire.NodeExpect{
			{Name: "bootstrap", FQDN: "bootstrap." + domain, Role: wire.RoleBootstrap, IP: "192.168.126.10", MAC: "52:54:00:00:00:0A"},
			{Name: "master-0", FQDN: "master-0." + domain, Role: wire.RoleMaster, IP: "192.168.126.11", MAC: "52:54:00:00:00:0b"},
			{Name: "worker-0", FQDN: "worker-0." + domain, Role: wire.RoleWorker, IP: "192.168.126.20", MAC: "52:54:00:00:00:14"},
		},
		PKI: *p,
	}
}

// rehearsalInput is testInput for a rehearsal lab.
func rehearsalInput(t *testing.T) probe.Input {
	in := testInput(t)
	in.Rehearsal = true
	in.SSHAuthorizedKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm1dFvC5y2o9kS3B9lG4zS3VfN1nO0m6j3yWQf1m3Xh bootlab-t\n"
	in.SSHHostKeyPEM = []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n")
	in.Assets = probe.AssetInput{ClusterName: "ocp", BaseDomain: "lab.local", MachineCIDR: "192.168.126.0/24", Masters: 3, Workers: 2,
		Release: probe.ReleaseFor("4.19.10")}
	return in
}

// servedMasterFile is the file at path in a master's served config for
// in, if it is there.
func servedMasterFile(t *testing.T, in probe.Input, path string) (data []byte, ok bool) {
	t.Helper()
	cfgs, err := probe.Generate(in)
	require.NoError(t, err)
	served, err := ignition.Parse(cfgs.MasterServed)
	require.NoError(t, err)
	data, ok, err = ignition.FileContents(served, path)
	require.NoError(t, err)
	return data, ok
}

// mcsServer serves an MCS stand-in over TLS with the lab's MCS cert, and
// returns a dialer that sends api-int:22623 to it.
func mcsServer(t *testing.T, in probe.Input, mode endpoints.MCSMode, configs map[string][]byte, wrap func(http.Handler) http.Handler) func(ctx context.Context, network, addr string) (net.Conn, error) {
	t.Helper()
	var h http.Handler = &endpoints.MCS{Mode: mode, Configs: configs}
	if wrap != nil {
		h = wrap(h)
	}
	return tlsServer(t, in.PKI.MCS, h, "api-int."+domain+":22623")
}

// tlsServer serves h over TLS with serving until the test ends, and
// returns a dialer that sends addr to it and refuses any other address.
func tlsServer(t *testing.T, serving pki.Pair, h http.Handler, addr string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	t.Helper()
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	local := srv.Listener.Addr().String()
	return func(ctx context.Context, network, a string) (net.Conn, error) {
		if a != addr {
			return nil, fmt.Errorf("dialled %s, want %s", a, addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, local)
	}
}

func TestGenerateChainAndPointerFollow(t *testing.T) {
	t.Parallel()
	in := testInput(t)
	cfgs, err := probe.Generate(in)
	require.NoError(t, err)
	for name, data := range map[string][]byte{"bootstrap": cfgs.Bootstrap, "master": cfgs.Master, "worker": cfgs.Worker, "master-served": cfgs.MasterServed, "worker-served": cfgs.WorkerServed} {
		assert.NoError(t, ignition.Validate(data), name)
	}
	boot, err := ignition.Parse(cfgs.Bootstrap)
	require.NoError(t, err)
	served, ok, err := ignition.FileContents(boot, wire.MasterConfigPath)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, cfgs.MasterServed, served)

	var seen http.Header
	var mu sync.Mutex
	dial := mcsServer(t, in, endpoints.MCSBootstrap, map[string][]byte{"master": cfgs.MasterServed}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = r.Header.Clone()
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	})
	pointer, err := ignition.Parse(cfgs.Master)
	require.NoError(t, err)
	f := &Fetcher{DialContext: dial, Retry: 10 * time.Millisecond, Deadline: 10 * time.Second}
	merged, fetched, err := f.Resolve(context.Background(), pointer)
	require.NoError(t, err)
	require.Len(t, fetched, 1)
	assert.Equal(t, "https://api-int."+domain+":22623/config/master", fetched[0].Source)
	pc, err := probeConfig(merged)
	require.NoError(t, err)
	self, ok := pc.Self("52:54:00:00:00:0B")
	require.True(t, ok, "master found by MAC, case-insensitively")
	assert.Equal(t, "192.168.126.11", self.IP)
	_, ok = pc.Self("52:54:00:00:00:0a")
	assert.False(t, ok, "the master pool config does not list the bootstrap")

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, ignition.AcceptHeader, seen.Get("Accept"))
	assert.True(t, strings.HasPrefix(seen.Get("User-Agent"), "Ignition/"))
}

func TestFetchRefusesWrongCA(t *testing.T) {
	t.Parallel()
	in := testInput(t)
	cfgs, err := probe.Generate(in)
	require.NoError(t, err)
	dial := mcsServer(t, in, endpoints.MCSBootstrap, map[string][]byte{"master": cfgs.MasterServed}, nil)
	other, err := pki.NewCA("root-ca")
	require.NoError(t, err)
	pointer := ignition.Pointer(ignition.MCSURL(domain, "master"), other.CertPEM)
	var attempts int
	f := &Fetcher{DialContext: dial, Retry: time.Millisecond, Deadline: 300 * time.Millisecond,
		OnAttempt: func(string, int, error) { attempts++ }}
	_, _, err = f.Resolve(context.Background(), pointer)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate signed by unknown authority")
	assert.Greater(t, attempts, 1, "retried")
}

func TestFetchRetriesUntilServed(t *testing.T) {
	t.Parallel()
	in := testInput(t)
	cfgs, err := probe.Generate(in)
	require.NoError(t, err)
	var n int
	var mu sync.Mutex
	dial := mcsServer(t, in, endpoints.MCSBootstrap, map[string][]byte{"master": cfgs.MasterServed}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			c := n
			mu.Unlock()
			if c < 3 {
				http.Error(w, "not yet", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	pointer, err := ignition.Parse(cfgs.Master)
	require.NoError(t, err)
	var errs []string
	f := &Fetcher{DialContext: dial, Retry: time.Millisecond, Deadline: time.Minute,
		OnAttempt: func(_ string, _ int, err error) { errs = append(errs, err.Error()) }}
	_, fetched, err := f.Resolve(context.Background(), pointer)
	require.NoError(t, err)
	assert.Equal(t, 3, fetched[0].Attempts)
	assert.Equal(t, []string{"HTTP 503: not yet", "HTTP 503: not yet"}, errs)
}

func TestFetchWorkerFromBootstrapIsRefused(t *testing.T) {
	t.Parallel()
	in := testInput(t)
	cfgs, err := probe.Generate(in)
	require.NoError(t, err)
	dial := mcsServer(t, in, endpoints.MCSBootstrap, map[string][]byte{"master": cfgs.MasterServed, "worker": cfgs.WorkerServed}, nil)
	pointer, err := ignition.Parse(cfgs.Worker)
	require.NoError(t, err)
	// The first answer the MCS gives ends the wait (a deadline would make
	// a loaded machine's slow handshake the error instead).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last error
	f := &Fetcher{DialContext: dial, Retry: time.Millisecond, Deadline: 2 * time.Minute,
		OnAttempt: func(_ string, _ int, err error) {
			var se *StatusError
			if errors.As(err, &se) {
				last = err
				cancel()
			}
		}}
	_, _, err = f.Resolve(ctx, pointer)
	require.Error(t, err)
	var se *StatusError
	require.ErrorAs(t, last, &se)
	assert.Equal(t, 500, se.Code)
	assert.Contains(t, se.Body, `refusing to serve bootstrap configuration to pool "worker"`)
}

// A master's etcd operator stand-in waits for /readyz through the
// bootstrap kubeconfig it was served (api-int, the lab CA) before it joins
// etcd. That kubeconfig must reach a server with the lab's api-int
// certificate (the MCS pair; here behind the health-only API handler): the
// same certificate under another CA must not.
func TestRehearsalMasterKubeconfigTrustsTheLabCA(t *testing.T) {
	t.Parallel()
	in := rehearsalInput(t)
	kc, ok := servedMasterFile(t, in, wire.NodeBootstrapKubeconfigPath)
	require.True(t, ok)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, kc, 0o600))

	ready := func(serving pki.Pair) error {
		cfg, err := kube.LoadKubeconfig(path)
		require.NoError(t, err)
		cfg.Dial = tlsServer(t, serving, endpoints.APIHealth("bootstrap"), "api-int."+in.ClusterDomain+":6443")
		c, err := kube.NewClient(cfg)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return c.Ready(ctx)
	}
	assert.NoError(t, ready(in.PKI.MCS), "the lab's api-int certificate")

	other, err := pki.NewCA("another-ca")
	require.NoError(t, err)
	stranger, err := pki.NewServing(other, "system:machine-config-server", []string{"api-int." + in.ClusterDomain})
	require.NoError(t, err)
	err = ready(stranger)
	require.Error(t, err, "a server the lab CA did not sign")
	assert.Contains(t, err.Error(), "certificate")
}
