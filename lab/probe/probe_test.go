package probe

import (
	"context"
	"crypto/tls"
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

	"github.com/bootlab/bootlab/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
)

const domain = "ocp.lab.local"

func testInput(t *testing.T) Input {
	t.Helper()
	p, err := pki.Ensure(t.TempDir(), "api-int."+domain)
	require.NoError(t, err)
	return Input{
		ClusterDomain: domain, APIAddress: "192.168.126.1", IngressAddress: "192.168.126.1",
		Nodes: []wire.NodeExpect{
			{Name: "bootstrap", FQDN: "bootstrap." + domain, Role: wire.RoleBootstrap, IP: "192.168.126.10", MAC: "52:54:00:00:00:0A"},
			{Name: "master-0", FQDN: "master-0." + domain, Role: wire.RoleMaster, IP: "192.168.126.11", MAC: "52:54:00:00:00:0b"},
			{Name: "worker-0", FQDN: "worker-0." + domain, Role: wire.RoleWorker, IP: "192.168.126.20", MAC: "52:54:00:00:00:14"},
		},
		PKI: *p,
	}
}

// mcsServer serves an MCS stand-in over TLS with the lab's MCS cert, and
// returns a dialer that sends api-int:22623 to it.
func mcsServer(t *testing.T, in Input, mode MCSMode, configs map[string][]byte, wrap func(http.Handler) http.Handler) func(ctx context.Context, network, addr string) (net.Conn, error) {
	t.Helper()
	var h http.Handler = &MCS{Mode: mode, Configs: configs}
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
	cfgs, err := Generate(in)
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
	dial := mcsServer(t, in, MCSBootstrap, map[string][]byte{"master": cfgs.MasterServed}, func(h http.Handler) http.Handler {
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
	pc, err := ParseProbeConfig(merged)
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
	cfgs, err := Generate(in)
	require.NoError(t, err)
	dial := mcsServer(t, in, MCSBootstrap, map[string][]byte{"master": cfgs.MasterServed}, nil)
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
	cfgs, err := Generate(in)
	require.NoError(t, err)
	var n int
	var mu sync.Mutex
	dial := mcsServer(t, in, MCSBootstrap, map[string][]byte{"master": cfgs.MasterServed}, func(h http.Handler) http.Handler {
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
	cfgs, err := Generate(in)
	require.NoError(t, err)
	dial := mcsServer(t, in, MCSBootstrap, map[string][]byte{"master": cfgs.MasterServed, "worker": cfgs.WorkerServed}, nil)
	pointer, err := ignition.Parse(cfgs.Worker)
	require.NoError(t, err)
	var last error
	f := &Fetcher{DialContext: dial, Retry: time.Millisecond, Deadline: 200 * time.Millisecond,
		OnAttempt: func(_ string, _ int, err error) { last = err }}
	_, _, err = f.Resolve(context.Background(), pointer)
	require.Error(t, err)
	var se *StatusError
	require.ErrorAs(t, last, &se)
	assert.Equal(t, 500, se.Code)
	assert.Contains(t, se.Body, `refusing to serve bootstrap configuration to pool "worker"`)
}

func TestMCSStandIn(t *testing.T) {
	t.Parallel()
	in := testInput(t)
	cfgs, err := Generate(in)
	require.NoError(t, err)
	boot := &MCS{Mode: MCSBootstrap, Configs: map[string][]byte{"master": cfgs.MasterServed}, Node: "bootstrap"}
	cluster := &MCS{Mode: MCSCluster, Configs: map[string][]byte{"worker": cfgs.WorkerServed}}
	ign := ignition.AcceptHeader
	tests := []struct {
		name       string
		h          http.Handler
		method     string
		path       string
		accept     string
		wantCode   int
		wantInBody string
	}{
		{"healthz", boot, "GET", "/healthz", "", 200, ""},
		{"master spec 3", boot, "GET", "/config/master", ign, 200, `"version":"3.2.0"`},
		{"master head", boot, "HEAD", "/config/master", ign, 200, ""},
		{"worker refused by bootstrap", boot, "GET", "/config/worker", ign, 500, `refusing to serve bootstrap configuration to pool "worker"`},
		{"infra refused by bootstrap", boot, "GET", "/config/infra", ign, 500, `pool "infra"`},
		{"curl gets spec 2.2", boot, "GET", "/config/master", "", 200, `"version":"2.2.0"`},
		{"ignition without version gets 2.2", boot, "GET", "/config/master", "application/vnd.coreos.ignition+json", 200, `"version":"2.2.0"`},
		{"old ignition 2.2", boot, "GET", "/config/master", "application/vnd.coreos.ignition+json;version=2.2.0, */*;q=0.1", 200, `"version":"2.2.0"`},
		{"unsupported version", boot, "GET", "/config/master", "application/vnd.coreos.ignition+json;version=1.0.0", 400, "unsupported"},
		{"highest q wins", boot, "GET", "/config/master", "application/vnd.coreos.ignition+json;version=2.2.0;q=0.5, application/vnd.coreos.ignition+json;version=3.2.0", 200, `"version":"3.2.0"`},
		{"post not allowed", boot, "POST", "/config/master", ign, 405, ""},
		{"other path", boot, "GET", "/foo", ign, 404, ""},
		{"cluster serves worker", cluster, "GET", "/config/worker", ign, 200, `"version":"3.2.0"`},
		{"cluster unknown pool", cluster, "GET", "/config/infra", ign, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			assert.Equal(t, tt.wantCode, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), tt.wantInBody)
			if tt.h == boot {
				assert.Equal(t, "bootstrap", rec.Header().Get(wire.NodeHeader))
			}
			if tt.wantCode == 200 && strings.HasPrefix(tt.path, "/config/") {
				assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			}
		})
	}
	assert.Equal(t, map[string][]string{"master": {"192.0.2.1"}}, boot.Served())
}

func TestSpecFromAccept(t *testing.T) {
	t.Parallel()
	for accept, want := range map[string]int{
		"": 2, "*/*": 2, ignition.AcceptHeader: 3,
		"application/vnd.coreos.ignition+json;version=3.5.0":                                                                      3,
		"application/vnd.coreos.ignition+json; version=2.4.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1": 2,
	} {
		got, err := SpecFromAccept([]string{accept})
		require.NoError(t, err, accept)
		assert.Equal(t, want, got, accept)
	}
	_, err := SpecFromAccept([]string{"application/vnd.coreos.ignition+json;version=4.0.0"})
	assert.Error(t, err)
}

// TestGeneratedConfigsPassIgnitionValidate runs Ignition's own validate
// tool on every generated config.
func TestGeneratedConfigsPassIgnitionValidate(t *testing.T) {
	t.Parallel()
	cfgs, err := Generate(testInput(t))
	require.NoError(t, err)
	dir := t.TempDir()
	for name, data := range map[string][]byte{"bootstrap": cfgs.Bootstrap, "master": cfgs.Master, "worker": cfgs.Worker, "master-served": cfgs.MasterServed, "worker-served": cfgs.WorkerServed} {
		p := filepath.Join(dir, name+".ign")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		testutil.IgnitionValidate(t, p)
	}
}
