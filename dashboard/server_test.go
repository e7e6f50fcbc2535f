package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
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

	"github.com/bootlab/bootlab/lab/hypervisor/fake"
)

// newTestServer serves a fixture home of n labs through an httptest server.
func newTestServer(t *testing.T, n int, token string) (*Server, *httptest.Server, string, *fake.Hypervisor) {
	t.Helper()
	home, hv := fixtureHome(t, n)
	c := &Collector{Home: home, Connect: connector(hv)}
	srv := New(Options{Source: c, Token: token})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return srv, ts, home, hv
}

func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestLabsEndpoint(t *testing.T) {
	_, ts, _, _ := newTestServer(t, 2, "")
	code, body := get(t, ts.URL+"/api/labs")
	require.Equal(t, http.StatusOK, code, body)
	var got struct{ Labs []LabView }
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got.Labs, 2)
	l := got.Labs[0]
	assert.Equal(t, "ux1", l.Name)
	assert.Equal(t, "ocp.lab.local", l.Domain)
	assert.Equal(t, 6, l.NodesTotal)
	assert.Equal(t, 6, l.NodesUp)
	require.Len(t, l.Nodes, 6)
	assert.Equal(t, "bootstrap", l.Nodes[0].Name)
	assert.Equal(t, "running", l.Nodes[0].State)
	assert.Equal(t, "bootstrap.ocp.lab.local", l.Nodes[0].FQDN)
	var ports []int
	for _, f := range l.LoadBalancer.Frontends {
		ports = append(ports, f.Port)
	}
	assert.Equal(t, []int{6443, 22623, 80, 443}, ports)
	assert.Len(t, l.LoadBalancer.Frontends[0].Backends, 4, "bootstrap and three masters behind 6443")
	assert.Len(t, l.LoadBalancer.Frontends[2].Backends, 2, "two workers behind 80")
	assert.False(t, l.LoadBalancer.Running)
	assert.Equal(t, HealthUnknown, l.LoadBalancer.Frontends[0].Backends[0].Health)
	assert.Equal(t, PhaseBootstrapActive, l.Phase)
	require.Len(t, l.Stages, 15)
	assert.Equal(t, StageDone, l.Stages[5].State)
	assert.Equal(t, StageFailed, l.Stages[6].State)
	assert.Contains(t, l.Stages[6].Message, "etcd did not render")
	assert.Equal(t, StagePending, l.Stages[7].State)
	assert.Equal(t, 6, l.StageReached)
	require.NotNil(t, l.Verify)
	assert.Equal(t, 19, l.Verify.Passed)
	assert.Contains(t, l.Failures, "verify: 1 of 20 failed (first: host dns api)")
	assert.Contains(t, l.Failures, "load balancer is not running")
	assert.Contains(t, strings.Join(l.DNSNames(), " "), "api.ocp.lab.local")

	code, body = get(t, ts.URL+"/api/labs/ux2")
	require.Equal(t, http.StatusOK, code, body)
	var one LabView
	require.NoError(t, json.Unmarshal([]byte(body), &one))
	assert.Equal(t, "ux2", one.Name)
	assert.Equal(t, "10.77.2.0/24", one.CIDR)
}

func (l LabView) DNSNames() []string {
	var out []string
	for _, r := range l.DNS {
		out = append(out, r.Name)
	}
	return out
}

func TestUnknownLabIs404(t *testing.T) {
	_, ts, _, _ := newTestServer(t, 1, "")
	code, body := get(t, ts.URL+"/api/labs/nosuch")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, `unknown lab \"nosuch\"`)
	assert.Contains(t, body, "bootlab lab list")

	code, _ = get(t, ts.URL+"/api/events?lab=nosuch")
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = get(t, ts.URL+"/nothing-here")
	assert.Equal(t, http.StatusNotFound, code)
}

// Every parameter that could name a file is refused or not found, and no
// answer carries anything of the lab directory beyond its views.
func TestPathTraversalIsRefused(t *testing.T) {
	_, ts, home, _ := newTestServer(t, 1, "")
	for _, p := range []string{
		"/api/labs/..%2F..%2Fetc%2Fpasswd",
		"/api/labs/ux1%2Fssh%2Fid_ed25519",
		"/api/labs/..",
		"/api/labs/%2e%2e",
		"/api/labs/UX1",
		"/api/labs/ux1%00",
		"/api/events?lab=../ux1",
		"/api/events?lab=ux1%2F..%2F..%2Fssh",
		"/api/labs/ux1/../../labs/ux1/ssh/id_ed25519",
		"/app.js/../../labs/ux1/state.json",
		"/assets/app.js",
		"/assets/../fixture_test.go",
		"/" + filepath.Join(home, "labs", "ux1", "state.json"),
		"/%2e%2e/%2e%2e/etc/passwd",
	} {
		t.Run(p, func(t *testing.T) {
			code, body := get(t, ts.URL+p)
			assert.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, code, body)
			assertNoSecrets(t, body)
			assert.NotContains(t, body, home)
			assert.NotContains(t, body, "root:x:0:0")
		})
	}
}

func TestTokenRequired(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	_, ts, _, _ := newTestServer(t, 1, token)
	for _, p := range []string{"/api/labs", "/api/labs/ux1", "/api/events"} {
		code, body := get(t, ts.URL+p)
		assert.Equal(t, http.StatusUnauthorized, code, p)
		assert.Contains(t, body, "missing or wrong token")
		assert.NotContains(t, body, "ux1")
		code, _ = get(t, ts.URL+p+"?token=wrong")
		assert.Equal(t, http.StatusUnauthorized, code, p)
		code, _ = get(t, ts.URL+p, "Authorization", "Bearer "+token[:len(token)-1])
		assert.Equal(t, http.StatusUnauthorized, code, p)
	}
	code, body := get(t, ts.URL+"/api/labs", "Authorization", "Bearer "+token)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"name":"ux1"`)
	code, _ = get(t, ts.URL+"/api/labs/ux1?token="+token)
	assert.Equal(t, http.StatusOK, code)
	// The page itself holds no lab data and loads without the token (its
	// script reads the token from the URL).
	code, body = get(t, ts.URL+"/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "<title>bootlab dashboard</title>")
}

// Without a token only loopback names are answered (DNS rebinding).
func TestLoopbackOnlyWithoutToken(t *testing.T) {
	_, ts, _, _ := newTestServer(t, 1, "")
	code, body := get(t, ts.URL+"/api/labs", "Host", "evil.example:8686")
	assert.Equal(t, http.StatusForbidden, code)
	assert.NotContains(t, body, "ux1")
	code, _ = get(t, ts.URL+"/api/labs", "Host", "localhost:8686")
	assert.Equal(t, http.StatusOK, code)
}

func TestMethodsOtherThanGetRefused(t *testing.T) {
	_, ts, _, _ := newTestServer(t, 1, "")
	resp, err := http.Post(ts.URL+"/api/labs", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func assertNoSecrets(t *testing.T, body string) {
	t.Helper()
	for _, s := range secrets {
		assert.NotContains(t, body, s)
		assert.NotContains(t, body, s[len(s)-20:], "part of a secret")
	}
	assert.NotContains(t, body, "PRIVATE KEY")
	assert.NotContains(t, body, "pull-secret.json", "not even the pull secret's path")
}

// Every answer the dashboard gives, for every lab, carries none of the
// private key, pull secret, kubeconfig or Ignition contents planted in the
// lab directories.
func TestNoSecretsInAnyResponse(t *testing.T) {
	_, ts, home, _ := newTestServer(t, 2, "")
	// The fixture really holds the secrets, and the stage record echoes them.
	var planted strings.Builder
	require.NoError(t, filepath.Walk(home, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			planted.Write(b)
		}
		return err
	}))
	for _, s := range secrets {
		require.Contains(t, planted.String(), s)
	}

	paths := []string{"/", "/app.js", "/app.css", "/favicon.svg", "/api/labs", "/api/labs/ux1", "/api/labs/ux2", "/api/labs/nosuch", "/api/labs/..%2Fux1", "/x"}
	for _, p := range paths {
		code, body := get(t, ts.URL+p)
		assert.NotZero(t, code)
		assertNoSecrets(t, body)
	}
	for _, q := range []string{"", "?lab=ux1"} {
		ev := readEvents(t, ts.URL+"/api/events"+q, 1)
		require.Equal(t, "snapshot", ev[0].kind)
		assertNoSecrets(t, ev[0].data)
		assert.Contains(t, ev[0].data, `"name":"ux1"`)
	}
}

type sse struct{ kind, data string }

// readEvents reads n events from an event stream.
func readEvents(t *testing.T, url string, n int) []sse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return scanEvents(t, newScanner(resp.Body), n)
}

func scanEvents(t *testing.T, sc *bufio.Scanner, n int) []sse {
	t.Helper()
	var out []sse
	var cur sse
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "" && cur.kind != "":
			out = append(out, cur)
			cur = sse{}
		}
	}
	require.Len(t, out, n, "events read before the stream ended: %v", sc.Err())
	return out
}

// fakeSource is a Source whose labs the test changes.
type fakeSource struct {
	mu   sync.Mutex
	labs []LabView
}

func (f *fakeSource) Snapshot(context.Context) ([]LabView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]LabView(nil), f.labs...), nil
}

func (f *fakeSource) set(labs ...LabView) { f.mu.Lock(); f.labs = labs; f.mu.Unlock() }

// Only labs whose view changed are pushed; a removed lab is announced.
func TestEventsPushOnlyChanges(t *testing.T) {
	src := &fakeSource{}
	a := LabView{Name: "a", Phase: PhaseBootstrapActive, LoadBalancer: LBView{Running: true}}
	b := LabView{Name: "b", Phase: PhaseBootstrapActive}
	src.set(a, b)
	srv := New(Options{Source: src})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	ctx := context.Background()
	n, err := srv.Refresh(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "first poll: both labs are new")

	ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx2, http.MethodGet, ts.URL+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := newScanner(resp.Body)
	snap := scanEvents(t, sc, 1)[0]
	assert.Equal(t, "snapshot", snap.kind)
	assert.Contains(t, snap.data, `"name":"a"`)
	assert.Contains(t, snap.data, `"name":"b"`)

	n, err = srv.Refresh(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing changed, nothing pushed")

	a.LoadBalancer.Running = false
	src.set(a, b)
	n, err = srv.Refresh(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	src.set(a)
	n, err = srv.Refresh(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	ev := scanEvents(t, sc, 2)
	assert.Equal(t, "lab", ev[0].kind)
	var got LabView
	require.NoError(t, json.Unmarshal([]byte(ev[0].data), &got))
	assert.Equal(t, "a", got.Name)
	assert.False(t, got.LoadBalancer.Running)
	assert.Equal(t, sse{kind: "removed", data: `{"name":"b"}`}, ev[1])
}

// A subscriber for one lab hears only about that lab.
func TestEventsForOneLab(t *testing.T) {
	src := &fakeSource{}
	src.set(LabView{Name: "a"}, LabView{Name: "b"})
	srv := New(Options{Source: src})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	_, err := srv.Refresh(context.Background())
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/api/events?lab=b", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := newScanner(resp.Body)
	snap := scanEvents(t, sc, 1)[0]
	assert.NotContains(t, snap.data, `"name":"a"`)
	src.set(LabView{Name: "a", Phase: "x"}, LabView{Name: "b", Phase: "y"})
	_, err = srv.Refresh(context.Background())
	require.NoError(t, err)
	ev := scanEvents(t, sc, 1)[0]
	assert.Contains(t, ev.data, `"name":"b"`)
}

func TestRequiresToken(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8686": false, "localhost:8686": false, "[::1]:8686": false, "127.0.0.2:1": false,
		"0.0.0.0:8686": true, ":8686": true, "192.168.1.5:8686": true, "[::]:8686": true, "example.com:80": true,
	} {
		got, err := RequiresToken(addr)
		require.NoError(t, err, addr)
		assert.Equal(t, want, got, addr)
	}
	_, err := RequiresToken("8686")
	assert.ErrorContains(t, err, "--listen")
	tok, err := NewToken()
	require.NoError(t, err)
	assert.Len(t, tok, 64)
}

// The first load (page, script, style, icon and the first snapshot of 10
// labs) stays under 300 KB.
func TestFirstLoadSize(t *testing.T) {
	_, ts, _, _ := newTestServer(t, 10, "")
	total := 0
	for _, p := range []string{"/", "/app.js", "/app.css", "/favicon.svg"} {
		code, body := get(t, ts.URL+p)
		require.Equal(t, http.StatusOK, code, p)
		total += len(body)
	}
	ev := readEvents(t, ts.URL+"/api/events", 1)
	total += len(ev[0].data)
	t.Logf("first load with 10 labs: %d bytes", total)
	assert.Less(t, total, 300*1024)
}

func newScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	return sc
}
