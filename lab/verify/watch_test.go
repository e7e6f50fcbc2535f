package verify

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// remoteHost is a host.Host that says it is another machine.
type remoteHost struct{ host.Local }

func (remoteHost) Remote() bool { return true }

func TestWatchConsolesOnlyLocalProbeLogs(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	boot, _ := s.Node("bootstrap")
	master, _ := s.Node("master-0")

	w := watchConsoles(s, false, Options{})
	assert.Equal(t, []string{labdir.ConsoleLog(s, boot), labdir.ConsoleLog(s, master)}, w.paths)
	w = watchConsoles(s, true, Options{})
	assert.Equal(t, []string{labdir.ConsoleLog(s, master)}, w.paths, "a removed bootstrap's log is not waited on")

	assert.Empty(t, watchConsoles(s, false, Options{Host: remoteHost{}}).paths, "a remote lab's logs are read over SSH: not stat'ed every 100 ms")
	real := *s
	real.Profile = spec.ProfileOpenShift
	assert.Empty(t, watchConsoles(&real, false, Options{}).paths, "only a probe node reports on its console")
}

func TestConsoleWatchNoticesWrites(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	w := watchConsoles(s, false, Options{})
	w.mark()
	assert.False(t, w.changed(), "nothing written yet")

	writeConsole(t, s, "master-0", "[ 0.1] booting\n")
	assert.True(t, w.changed(), "a log that appears")
	w.mark()
	assert.False(t, w.changed())

	master, _ := s.Node("master-0")
	f, err := os.OpenFile(labdir.ConsoleLog(s, master), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"probe":"report"}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.True(t, w.changed(), "a log that grew")
}

func TestConsoleWatchWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Written while waiting: the wait ends on it, not on the hour.
	s := testSpec(t)
	w := watchConsoles(s, false, Options{})
	w.mark()
	writeConsole(t, s, "bootstrap", "report\n")
	why, err := w.wait(ctx, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, wakeConsole, why)

	// Nothing to watch: the interval.
	none := &consoleWatch{}
	none.mark()
	why, err = none.wait(ctx, 10*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, wakeInterval, why)

	// Nothing written: the interval, shorter than the gap or not.
	w.mark()
	for _, d := range []time.Duration{10 * time.Millisecond, watchGap + 50*time.Millisecond} {
		why, err = w.wait(ctx, d)
		require.NoError(t, err)
		assert.Equal(t, wakeInterval, why, d)
	}

	gone, stop := context.WithCancel(ctx)
	stop()
	_, err = w.wait(gone, time.Hour)
	assert.ErrorIs(t, err, context.Canceled)
}

// Run starts its next pass when a node reports, without waiting out the
// interval: here an hour, with the test's context ending after 3 s.
func TestRunPassesAgainOnAReport(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	s.Network.CIDR = "127.0.0.0/24"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	writeConsole(t, s, "master-0", "")
	master, _ := s.Node("master-0")
	done, wrote := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(wrote)
		// The node keeps reporting (its heartbeat), as a booted agent does.
		for i := 1; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if os.WriteFile(labdir.ConsoleLog(s, master), make([]byte, i), 0o600) != nil {
				return
			}
		}
	}()
	res, err := Run(ctx, s, nil, Options{Timeout: time.Hour, Interval: time.Hour})
	close(done)
	<-wrote
	require.ErrorIs(t, err, context.DeadlineExceeded, "haproxy not running stays for less than the interval: not hopeless yet")
	assert.GreaterOrEqual(t, res.Passes, 3, "the node's reports started passes, not the hour")
}

func TestCatchingUp(t *testing.T) {
	t.Parallel()
	down := loadbalancer.BackendStatus{Status: "DOWN", LastCheck: "L4CON Connection refused"}
	serving := &wire.Report{Checks: []wire.Check{{Name: "serve api :6443", OK: true}}}
	pending := &wire.Report{Checks: []wire.Check{{Name: "serve api :6443", Pending: true}}}
	failed := &wire.Report{Checks: []wire.Check{{Name: "serve api :6443", Detail: "listen: address already in use"}}}
	other := &wire.Report{Checks: []wire.Check{{Name: "serve mcs :22623", OK: true}}}
	for _, tc := range []struct {
		name string
		b    loadbalancer.BackendStatus
		rep  *wire.Report
		want bool
	}{
		{"its node serves the port: haproxy's next check sees it", down, serving, true},
		{"in one of haproxy's transitions", loadbalancer.BackendStatus{Status: "DOWN 1/2"}, nil, true},
		{"no report", down, nil, false},
		{"its server still starting", down, pending, false},
		{"its server failed", down, failed, false},
		{"it serves another port", down, other, false},
	} {
		assert.Equal(t, tc.want, catchingUp(tc.b, tc.rep, 6443), tc.name)
	}
}

func TestUnprovenFrontendIsNotDialed(t *testing.T) {
	t.Parallel()
	fe := loadbalancer.Frontend{Name: "api", Port: 6443, Check: loadbalancer.CheckReadyz}
	stats := func(bs ...loadbalancer.BackendStatus) haproxyStats {
		return haproxyStats{st: &loadbalancer.Status{Running: true, PID: 7, Backends: bs}}
	}
	booting := loadbalancer.BackendStatus{Frontend: "api", Server: "bootstrap", Status: "UP"}
	refused := loadbalancer.BackendStatus{Frontend: "api", Server: "master-0", Status: "DOWN", LastCheck: "L4CON Connection refused"}
	serving := loadbalancer.BackendStatus{Frontend: "api", Server: "master-0", Status: "UP", LastCheck: "L7OK 200"}
	other := loadbalancer.BackendStatus{Frontend: "machine-config", Server: "bootstrap", Status: "UP", LastCheck: "L7OK 200"}

	c, unchecked, ok := unproven(fe, stats(booting, refused, other))
	require.True(t, ok, "no server of api has passed a check")
	assert.True(t, c.Failed())
	assert.Equal(t, "lb api :6443", c.Name)
	assert.Equal(t, "no server has passed haproxy's check yet (bootstrap UP, master-0 DOWN L4CON Connection refused)", c.Detail)
	assert.True(t, unchecked, "the bootstrap has its first check to come")

	_, unchecked, ok = unproven(fe, stats(refused))
	assert.True(t, ok)
	assert.False(t, unchecked, "every server failed its checks: nothing changes by itself")

	_, _, ok = unproven(fe, stats(booting, serving))
	assert.False(t, ok, "a server passed: the request decides")
	_, _, ok = unproven(fe, stats(other))
	assert.False(t, ok, "haproxy lists no server of api: the request decides")
	_, _, ok = unproven(fe, haproxyStats{st: &loadbalancer.Status{}})
	assert.False(t, ok, "haproxy not running: the request decides")
	ingress := loadbalancer.Frontend{Name: "ingress-http", Port: 80}
	_, _, ok = unproven(ingress, stats(loadbalancer.BackendStatus{Frontend: "ingress-http", Server: "worker-0", Status: "DOWN", LastCheck: "L4CON"}))
	assert.False(t, ok, "a TCP frontend's check is haproxy accepting: it is always made")
}
