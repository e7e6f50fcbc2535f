package loadbalancer

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/host"
)

// statSample is `show stat` of haproxy 2.6 cut to the columns Inspect reads
// plus a few around them, in haproxy's order.
const statSample = `# pxname,svname,qcur,status,weight,check_status,check_code,last_chk,addr,mode,
stats,FRONTEND,,OPEN,,,,,,http,
stats,BACKEND,0,UP,0,,,,,http,
api,FRONTEND,,OPEN,,,,,,tcp,
api,bootstrap,0,UP,1,L7OK,200,"HTTP status check returned code <3C200>",192.168.126.10:6443,tcp,
api,master-0,0,DOWN,1,L4CON,,Connection refused,192.168.126.11:6443,tcp,
api,master-1,0,UP 1/3,1,L7STS,500,,192.168.126.12:6443,tcp,
api,master-2,0,UP,1,* L7OK,200,,192.168.126.13:6443,tcp,
api,BACKEND,0,UP,2,,,,,tcp,
ingress-http,worker-0,0,no check,1,,,,192.168.126.20:80,tcp,
ingress-http,worker-1,0,MAINT,1,,,,192.168.126.21:80,tcp,
`

func TestParseStat(t *testing.T) {
	t.Parallel()
	got, err := parseStat(statSample)
	require.NoError(t, err)
	assert.Equal(t, []BackendStatus{
		{Frontend: "api", Server: "bootstrap", Address: "192.168.126.10:6443", Status: "UP", LastCheck: "L7OK HTTP status check returned code <3C200>"},
		{Frontend: "api", Server: "master-0", Address: "192.168.126.11:6443", Status: "DOWN", LastCheck: "L4CON Connection refused"},
		{Frontend: "api", Server: "master-1", Address: "192.168.126.12:6443", Status: "UP 1/3", LastCheck: "L7STS"},
		// "* " is haproxy's mark of a check running now: the last result
		// is the rest.
		{Frontend: "api", Server: "master-2", Address: "192.168.126.13:6443", Status: "UP", LastCheck: "L7OK"},
		{Frontend: "ingress-http", Server: "worker-0", Address: "192.168.126.20:80", Status: "no check"},
		{Frontend: "ingress-http", Server: "worker-1", Address: "192.168.126.21:80", Status: "MAINT"},
	}, got)
	up := map[string]bool{}
	for _, b := range got {
		up[b.Server] = b.Up()
	}
	assert.Equal(t, map[string]bool{"bootstrap": true, "master-0": false, "master-1": true, "master-2": true, "worker-0": true, "worker-1": false}, up)
	assert.True(t, got[3].Proven(), "a server whose next check runs now is proven by its last")
}

func TestParseStatErrors(t *testing.T) {
	t.Parallel()
	_, err := parseStat("")
	assert.ErrorContains(t, err, "empty answer")
	_, err = parseStat("# pxname,svname,qcur\napi,x,0\n")
	assert.ErrorContains(t, err, `no "status" column`)
	_, err = parseStat("Unknown command. Please enter one of the following commands only :\n")
	assert.Error(t, err)
}

func TestInspectNotRunning(t *testing.T) {
	t.Parallel()
	c := sample()
	c.Dir = t.TempDir()
	st, err := Inspect(context.Background(), c)
	require.NoError(t, err)
	assert.False(t, st.Running)
	assert.Empty(t, st.Backends)
}

// A pid file naming a process that is not our haproxy (a recycled pid, a
// stale file) must never lead Stop to kill it.
func TestStopSparesForeignProcess(t *testing.T) {
	t.Parallel()
	c := sample()
	c.Dir = t.TempDir()
	sleeper := exec.Command("sleep", "60")
	require.NoError(t, sleeper.Start())
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	require.NoError(t, os.WriteFile(c.PIDPath(), []byte(strconv.Itoa(sleeper.Process.Pid)+"\n"), 0o644))

	_, running := runningPID(context.Background(), c)
	assert.False(t, running, "a sleep process is not our haproxy")
	require.NoError(t, Stop(context.Background(), c))
	assert.True(t, alive(context.Background(), host.Local{}, sleeper.Process.Pid), "Stop killed a process that is not our haproxy")
	assert.NoFileExists(t, c.PIDPath())
}

func TestIsOurHAProxy(t *testing.T) {
	t.Parallel()
	assert.False(t, isOurHAProxy(context.Background(), host.Local{}, os.Getpid(), "/x/haproxy.cfg"), "the test binary is not haproxy")
	assert.False(t, isOurHAProxy(context.Background(), host.Local{}, 1<<30, "/x/haproxy.cfg"), "no such pid")
	assert.True(t, alive(context.Background(), host.Local{}, os.Getpid()))
	assert.False(t, alive(context.Background(), host.Local{}, 1<<30))
}

func TestRunningPIDBadFiles(t *testing.T) {
	t.Parallel()
	c := sample()
	c.Dir = t.TempDir()
	for _, content := range []string{"", "abc", "-5", "0"} {
		require.NoError(t, os.WriteFile(filepath.Join(c.Dir, PIDFile), []byte(content), 0o644))
		_, ok := runningPID(context.Background(), c)
		assert.False(t, ok, "pid file %q", content)
	}
}

func TestBackendSettling(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]bool{
		"DOWN 1/2": true, "UP 1/3": true, "UP 2/3": true,
		"UP": false, "DOWN": false, "MAINT": false, "no check": false, "NOLB": false, "": false,
		"DOWN x/2": false, "DOWN 1/": false, "UP 1": false, "MAINT 1/2": false,
	} {
		assert.Equal(t, want, BackendStatus{Status: status}.Settling(), status)
	}
}

func TestBackendProven(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status, last string
		want         bool
	}{
		{"UP", "L7OK 200", true}, {"UP", "L4OK", true}, {"UP", "L6OK", true}, {"UP 1/3", "L7OK 200", true},
		{"no check", "", true},
		{"UP", "", false},          // before its first check: haproxy starts every server up
		{"UP", "INI", false},       // the same, as some versions say it
		{"UP 2/3", "L4CON", false}, // going down
		{"DOWN", "L7OK 200", false},
		{"DOWN 1/2", "L4OK", false}, // one more good check to go
		{"MAINT", "", false},
	} {
		assert.Equal(t, tc.want, BackendStatus{Status: tc.status, LastCheck: tc.last}.Proven(), "%s %s", tc.status, tc.last)
	}
}
