//go:build integration

package loadbalancer

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/sshc/sshctest"
	"github.com/bootlab/bootlab/internal/testutil/freeport"
	"github.com/bootlab/bootlab/lab/host"
)

// These tests run a real haproxy on loopback addresses (127.88.0.0/16 here,
// nothing leaves the machine) in front of real TLS backends answering
// /readyz, as a lab's API servers do.

func requireHAProxy(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Fatalf("haproxy is required: apt-get install -y haproxy")
	}
}

// backend is a TLS server on ip answering /readyz with 200 while healthy,
// 503 otherwise, and "/" with its name.
type backend struct {
	name    string
	srv     *httptest.Server
	healthy atomic.Bool
}

func newBackend(t *testing.T, name, ip string) *backend {
	t.Helper()
	b := &backend{name: name}
	b.healthy.Store(true)
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			if !b.healthy.Load() {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "ok")
			return
		}
		fmt.Fprint(w, b.name)
	}))
	l, err := net.Listen("tcp", ip+":0")
	require.NoError(t, err)
	b.srv.Listener = l
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) addr() string { return b.srv.Listener.Addr().String() }

// freePort is a port haproxy binds later: one no other test process holds,
// below the ephemeral range (freeport).
func freePort(t *testing.T, ip string) int {
	t.Helper()
	return freeport.TCP(t, ip)
}

// eventually polls cond every 100ms, at most n times (a bounded loop, not a
// timing assertion: the condition is what is asserted).
func eventually(t *testing.T, n int, what string, cond func() bool) {
	t.Helper()
	for range n {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not reached after %d polls", what, n)
}

func statusOf(t *testing.T, c Config) map[string]string {
	t.Helper()
	st, err := Inspect(context.Background(), c)
	require.NoError(t, err)
	out := map[string]string{}
	for _, b := range st.Backends {
		out[b.Frontend+"/"+b.Server] = b.Status
	}
	return out
}

func insecureClient() *http.Client {
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // local test backends
	}
}

func get(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err, "GET %s", url)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", url, body)
	return string(body)
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	requireHAProxy(t)
	ctx := context.Background()
	const lbIP = "127.88.0.1"
	b1 := newBackend(t, "b1", "127.88.0.2")
	b2 := newBackend(t, "b2", "127.88.0.3")
	port := freePort(t, lbIP)
	c := Config{
		Name:          "it",
		BindAddress:   lbIP,
		StatsPort:     freePort(t, lbIP),
		Dir:           t.TempDir(),
		CheckInterval: 100 * time.Millisecond,
		Frontends: []Frontend{{Name: "api", Port: port, Check: CheckReadyz, Servers: []Server{
			{Name: "b1", Address: b1.addr()}, {Name: "b2", Address: b2.addr()},
		}}},
	}
	t.Cleanup(func() { _ = Stop(context.Background(), c) })

	// Start.
	res, err := Ensure(ctx, c, nil)
	require.NoError(t, err)
	assert.Equal(t, Result{Changed: true, Started: true}, res)
	require.NoError(t, Check(ctx, nil, "", c.ConfigPath()))
	st, err := Inspect(ctx, c)
	require.NoError(t, err)
	require.True(t, st.Running)
	firstPID := st.PID
	eventually(t, 100, "both backends UP", func() bool {
		s := statusOf(t, c)
		return s["api/b1"] == "UP" && s["api/b2"] == "UP"
	})
	// Up on a passed check, in real haproxy's words: what verify needs
	// before it sends a request through the frontend.
	st, err = Inspect(ctx, c)
	require.NoError(t, err)
	for _, b := range st.Backends {
		assert.True(t, b.Proven(), "%s: %s %s", b.Server, b.Status, b.LastCheck)
	}

	// Idempotent.
	res, err = Ensure(ctx, c, nil)
	require.NoError(t, err)
	assert.Equal(t, Result{}, res, "unchanged and running: nothing to do")

	// Traffic is balanced over both backends.
	client := insecureClient()
	client.Transport.(*http.Transport).DisableKeepAlives = true
	lbURL := fmt.Sprintf("https://%s:%d/", lbIP, port)
	seen := map[string]bool{}
	for range 6 {
		seen[get(t, client, lbURL)] = true
	}
	assert.Equal(t, map[string]bool{"b1": true, "b2": true}, seen, "roundrobin reaches both backends")

	// /readyz failing takes b2 out of the rotation.
	// On its way down and up again b2 passes through haproxy's transitions
	// ("UP 1/3", "DOWN 1/2"), which verify reads as settling.
	b2Seen := map[string]bool{}
	b2Is := func(want string) func() bool {
		return func() bool {
			st := statusOf(t, c)["api/b2"]
			b2Seen[st] = true
			return st == want
		}
	}
	b2.healthy.Store(false)
	eventually(t, 100, "b2 DOWN", b2Is("DOWN"))
	// b1 stays in the rotation: UP, or "UP 1/3" and "UP 2/3" when a check
	// of it failed on a loaded machine (CI saw "UP 2/3"), which haproxy
	// still sends traffic to.
	b1Status := statusOf(t, c)["api/b1"]
	assert.True(t, b1Status == "UP" || strings.HasPrefix(b1Status, "UP "), "b1 is %q, want it up", b1Status)
	for range 4 {
		assert.Equal(t, "b1", get(t, client, lbURL), "a DOWN backend gets no traffic")
	}
	st, err = Inspect(ctx, c)
	require.NoError(t, err)
	for _, b := range st.Backends {
		if b.Server == "b2" {
			assert.Contains(t, b.LastCheck, "L7STS", "the check saw the HTTP 503")
			assert.Equal(t, b2.addr(), b.Address)
		}
	}
	b2.healthy.Store(true)
	eventually(t, 100, "b2 UP again", b2Is("UP"))
	for st := range b2Seen {
		if st != "UP" && st != "DOWN" {
			assert.True(t, BackendStatus{Status: st}.Settling(), "haproxy's %q is a transition", st)
		}
	}
	t.Logf("b2's statuses on its way down and up: %v", b2Seen)

	// The stats endpoint answers in HTML and CSV.
	statsURL := fmt.Sprintf("http://%s:%d/stats", lbIP, c.StatsPort)
	csv := get(t, http.DefaultClient, statsURL+";csv")
	assert.Contains(t, csv, "api,b1,")
	assert.Contains(t, get(t, http.DefaultClient, statsURL), "<html")

	// Reload on change keeps serving: a connection opened before the
	// reload is finished by the old process, new ones reach the new one,
	// and health states carry over (a DOWN server does not restart as UP).
	b2.healthy.Store(false)
	eventually(t, 100, "b2 DOWN before reload", func() bool { return statusOf(t, c)["api/b2"] == "DOWN" })
	held := insecureClient()
	held.Transport.(*http.Transport).MaxConnsPerHost = 1
	require.Equal(t, "b1", get(t, held, lbURL))
	b3 := newBackend(t, "b3", "127.88.0.4")
	c.Frontends[0].Servers = []Server{{Name: "b2", Address: b2.addr()}, {Name: "b3", Address: b3.addr()}}
	// Slower checks after the reload: without the carried-over state b2
	// would show as UP for seconds.
	c.CheckInterval = 2 * time.Second
	res, err = Ensure(ctx, c, nil)
	require.NoError(t, err)
	assert.Equal(t, Result{Changed: true, Reloaded: true}, res)
	st, err = Inspect(ctx, c)
	require.NoError(t, err)
	assert.NotEqual(t, firstPID, st.PID, "reload runs a new process")
	afterReload := statusOf(t, c)
	assert.Equal(t, "DOWN", afterReload["api/b2"], "b2's DOWN state survived the reload")
	assert.NotContains(t, afterReload, "api/b1")
	assert.Equal(t, "b1", get(t, held, lbURL), "the kept-alive connection is still served by the old process")
	assert.Equal(t, "b3", get(t, client, lbURL), "new connections see the new backends")
	held.CloseIdleConnections()
	eventually(t, 100, "old haproxy gone after its last connection", func() bool { return !alive(context.Background(), host.Local{}, firstPID) })
	b2.healthy.Store(true)
	eventually(t, 100, "b2 and b3 UP", func() bool {
		s := statusOf(t, c)
		return s["api/b2"] == "UP" && s["api/b3"] == "UP"
	})

	// Stop leaves no process, pid file or socket.
	pid := st.PID
	require.NoError(t, Stop(ctx, c))
	assert.False(t, alive(context.Background(), host.Local{}, pid), "haproxy still running after Stop")
	assert.NoFileExists(t, c.PIDPath())
	assert.NoFileExists(t, c.SocketPath())
	assert.NoFileExists(t, c.StatePath())
	st, err = Inspect(ctx, c)
	require.NoError(t, err)
	assert.False(t, st.Running)
	require.NoError(t, Stop(ctx, c), "stopping a stopped load balancer is fine")

	// Ensure after Stop starts again from the unchanged config.
	res, err = Ensure(ctx, c, nil)
	require.NoError(t, err)
	assert.Equal(t, Result{Started: true}, res)
}

// Stop must not kill another lab's haproxy even if our pid file names it.
func TestStopSparesAnotherLabsHAProxy(t *testing.T) {
	t.Parallel()
	requireHAProxy(t)
	ctx := context.Background()
	b := newBackend(t, "b", "127.88.1.2")
	mk := func(name, ip string) Config {
		return Config{Name: name, BindAddress: ip, StatsPort: freePort(t, ip), Dir: t.TempDir(),
			Frontends: []Frontend{{Name: "api", Port: freePort(t, ip), Check: CheckTCP, Servers: []Server{{Name: "b", Address: b.addr()}}}}}
	}
	ours, theirs := mk("ours", "127.88.1.1"), mk("theirs", "127.88.1.3")
	t.Cleanup(func() { _ = Stop(context.Background(), theirs) })
	_, err := Ensure(ctx, theirs, nil)
	require.NoError(t, err)
	st, err := Inspect(ctx, theirs)
	require.NoError(t, err)
	require.True(t, st.Running)

	require.NoError(t, os.MkdirAll(ours.Dir, 0o755))
	require.NoError(t, os.WriteFile(ours.PIDPath(), []byte(fmt.Sprintf("%d\n", st.PID)), 0o644))
	require.NoError(t, Stop(ctx, ours))
	assert.True(t, alive(context.Background(), host.Local{}, st.PID), "Stop killed a haproxy running another config")
}

// A config haproxy rejects never replaces the one in place.
func TestCheckRejectsAndKeepsGoodConfig(t *testing.T) {
	t.Parallel()
	requireHAProxy(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.cfg")
	require.NoError(t, os.WriteFile(bad, []byte("listen x\n    bind 127.0.0.1:1\n    nonsense-keyword on\n"), 0o644))
	err := Check(context.Background(), nil, "", bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rejected the configuration")
	assert.Contains(t, err.Error(), "nonsense-keyword")

	err = Check(context.Background(), nil, "haproxy-does-not-exist", bad)
	assert.ErrorIs(t, err, ErrNotInstalled)

	good, err := Render(sample())
	require.NoError(t, err)
	c := sample()
	c.Dir = dir
	require.NoError(t, writeChecked(context.Background(), c, "haproxy", good))
	err = writeChecked(context.Background(), c, "haproxy", []byte("global\n    nonsense-keyword on\n"))
	require.Error(t, err)
	kept, err := os.ReadFile(c.ConfigPath())
	require.NoError(t, err)
	assert.Equal(t, string(good), string(kept), "the rejected config replaced the good one")
	assert.NoFileExists(t, c.ConfigPath()+".new")
}

// Every golden haproxy.cfg is one haproxy accepts.
func TestGoldensPassHAProxyCheck(t *testing.T) {
	t.Parallel()
	requireHAProxy(t)
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.cfg"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		assert.NoError(t, Check(context.Background(), nil, "", f), f)
	}
}

// The same lifecycle through an SSH host (an in-process server on this
// machine): the config is written, checked and started over the
// connection, the pid file and admin socket are read there, and Stop ends
// it. Local and SSH hosts give the same results.
func TestLifecycleThroughSSHHost(t *testing.T) {
	t.Parallel()
	requireHAProxy(t)
	ctx := context.Background()
	srv := sshctest.Start(t)
	h, err := host.Open(ctx, srv.LibvirtURI(t, ""), host.Options{})
	require.NoError(t, err)
	defer h.Close()
	const lbIP = "127.88.1.1"
	b1 := newBackend(t, "b1", "127.88.1.2")
	port := freePort(t, lbIP)
	c := Config{
		Name: "ssh", BindAddress: lbIP, StatsPort: freePort(t, lbIP), Dir: filepath.Join(t.TempDir(), "on-host"),
		CheckInterval: 100 * time.Millisecond, Host: h,
		Frontends: []Frontend{{Name: "api", Port: port, Check: CheckReadyz, Servers: []Server{{Name: "b1", Address: b1.addr()}}}},
	}
	t.Cleanup(func() { _ = Stop(context.Background(), c) })

	action, err := Plan(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, "start", action)
	res, err := Ensure(ctx, c, nil)
	require.NoError(t, err)
	assert.Equal(t, Result{Changed: true, Started: true}, res)
	eventually(t, 100, "b1 up", func() bool { return statusOf(t, c)["api/b1"] == "UP" })
	assert.Equal(t, "b1", get(t, insecureClient(), fmt.Sprintf("https://%s:%d/", lbIP, port)))
	st, err := Inspect(ctx, c)
	require.NoError(t, err)
	assert.True(t, st.Running)
	// The same load balancer seen as a local one: same pid.
	local := c
	local.Host = nil
	lst, err := Inspect(ctx, local)
	require.NoError(t, err)
	assert.Equal(t, st.PID, lst.PID)

	res, err = Ensure(ctx, c, nil)
	require.NoError(t, err)
	assert.Equal(t, Result{}, res, "unchanged and running: nothing to do")

	c.Frontends[0].Servers = append(c.Frontends[0].Servers, Server{Name: "b2", Address: "127.88.1.3:1"})
	res, err = Ensure(ctx, c, nil)
	require.NoError(t, err)
	assert.Equal(t, Result{Changed: true, Reloaded: true}, res)

	require.NoError(t, Stop(ctx, c))
	st, err = Inspect(ctx, c)
	require.NoError(t, err)
	assert.False(t, st.Running)
	_, err = os.Stat(c.PIDPath())
	assert.True(t, os.IsNotExist(err), "pid file removed")
	assert.NotEmpty(t, srv.Commands(), "everything ran through the SSH host")
}

// recordingHost is this machine, noting every command it is asked to run.
type recordingHost struct {
	host.Local
	mu   sync.Mutex
	cmds []string
}

func (h *recordingHost) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	h.mu.Lock()
	h.cmds = append(h.cmds, cmd)
	h.mu.Unlock()
	return h.Local.Run(ctx, cmd, stdin, stdout, stderr)
}

func (h *recordingHost) count(substr string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.cmds {
		if strings.Contains(c, substr) {
			n++
		}
	}
	return n
}

// A first start looks haproxy up once, checks the new config once and
// starts it once: each is a process (a round trip on a remote host), and
// haproxy 2.6 reads every system CA file at each start.
func TestFirstStartRunsEachProgramOnce(t *testing.T) {
	t.Parallel()
	requireHAProxy(t)
	const lbIP = "127.88.0.41"
	b := newBackend(t, "b", "127.88.0.42")
	h := &recordingHost{}
	c := Config{Name: "once", BindAddress: lbIP, StatsPort: freePort(t, lbIP), Dir: t.TempDir(), Host: h,
		Frontends: []Frontend{{Name: "api", Port: freePort(t, lbIP), Check: CheckReadyz, Servers: []Server{{Name: "b", Address: b.addr()}}}}}
	t.Cleanup(func() { _ = Stop(context.Background(), c) })
	res, err := Ensure(context.Background(), c, nil)
	require.NoError(t, err)
	require.True(t, res.Started)
	assert.Equal(t, 1, h.count("command -v"), h.cmds)
	assert.Equal(t, 1, h.count(" -c -f "), h.cmds)
	assert.Equal(t, 1, h.count(" -D -f "), h.cmds)
}
