package verify

import (
	"context"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
	"github.com/bootlab/bootlab/stages"
)

func rehearsalSpec(t *testing.T) *spec.Spec {
	t.Helper()
	s := &spec.Spec{Name: "r", Profile: spec.ProfileProbe, LabDir: t.TempDir(),
		Topology: spec.Topology{Masters: 1, Workers: 1}, OpenShift: spec.OpenShift{ManualBootstrap: true}}
	s.Defaults()
	require.True(t, s.Rehearsal())
	return s
}

// What a fresh rehearsal lab reports: the masters and workers retry their
// pointer Ignition, nothing serves 6443 or 22623 behind haproxy.
func freshRehearsalChecks() []check.Result {
	return []check.Result{
		{Group: "bootstrap", Name: "serve ssh :22", State: check.StatePassed, Detail: "listening"},
		{Group: "bootstrap", Name: "dns api.ocp.lab.local", Detail: "api.ocp.lab.local resolves to 10.0.0.9"},
		{Group: "master-0", Name: "ignition-fetch", Detail: "still pending: GET https://api-int.ocp.lab.local:22623/config/master: attempt 73: EOF (retrying)"},
		{Group: "master-0", Name: "hostname", Detail: "still pending: waiting"},
		{Group: "master-0", Name: "dhcp", Detail: "no lease"},
		{Group: "worker-0", Name: "ignition-fetch", Detail: "still pending: GET https://api-int.ocp.lab.local:22623/config/worker: attempt 9: EOF (retrying)"},
		{Group: HostGroup, Name: "lb api :6443", Detail: "192.168.126.1:6443 (readyz): EOF"},
		{Group: HostGroup, Name: "lb machine-config :22623", Detail: "192.168.126.1:22623 (healthz): tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{Group: HostGroup, Name: "backend api/bootstrap", Detail: "192.168.126.10:6443 DOWN L4CON Connection refused"},
		{Group: HostGroup, Name: "backend machine-config/bootstrap", Detail: "192.168.126.10:22623 DOWN L4CON Connection refused"},
		{Group: HostGroup, Name: "backend machine-config/master-0", Detail: "192.168.126.11:22623 DOWN L4CON Connection refused"},
		{Group: HostGroup, Name: "backend ingress-http/worker-0", Detail: "192.168.126.20:80 DOWN L7STS/500 HTTP status"},
		{Group: HostGroup, Name: "lb haproxy", Detail: "haproxy is not running (no live process for x.pid)"},
	}
}

// Before stage 12 the checks that wait for the MCS are pending with the
// stage to run; a check that fails for another reason still fails, and
// once the stage has run the same checks count for real.
func TestAwaitStagesOnlyWhatAStageStarts(t *testing.T) {
	t.Parallel()
	s := rehearsalSpec(t)
	mark := func(rs []check.Result) map[string]string {
		out := map[string]string{}
		for _, r := range rs {
			out[r.Label()] = r.Mark()
		}
		return out
	}
	for _, c := range []struct {
		name string
		run  map[int]bool
		want map[string]string
	}{
		{"nothing run", map[int]bool{7: true}, map[string]string{
			"bootstrap serve ssh :22":               "✓",
			"bootstrap dns api.ocp.lab.local":       "✗", // no stage mends DNS
			"master-0 ignition-fetch":               "…",
			"master-0 hostname":                     "…",
			"master-0 dhcp":                         "✗", // the agent gave up: not pending
			"worker-0 ignition-fetch":               "…",
			"host lb api :6443":                     "…",
			"host lb machine-config :22623":         "✗", // something answers, wrongly
			"host backend api/bootstrap":            "…",
			"host backend machine-config/bootstrap": "…",
			"host backend machine-config/master-0":  "…",
			"host backend ingress-http/worker-0":    "✗", // it answers, with an error
			"host lb haproxy":                       "✗",
		}},
		{"stage 12 run", map[int]bool{7: true, 12: true}, map[string]string{
			"master-0 ignition-fetch":               "✗",
			"worker-0 ignition-fetch":               "✗",
			"host lb api :6443":                     "…", // the bootstrap's API comes with 13, the masters' after it
			"host backend machine-config/bootstrap": "✗",
			"host backend machine-config/master-0":  "✗",
			"host backend api/bootstrap":            "…", // the bootstrap API comes with 13
		}},
		{"stage 13 run", map[int]bool{12: true, 13: true}, map[string]string{
			// Stage 13 tore the bootstrap API down, as cluster-bootstrap
			// does: its backend waits for `lab pivot` (issue 59).
			"host backend api/bootstrap": "…",
			"host lb api :6443":          "✗",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := mark(awaitStages(s, freshRehearsalChecks(), c.run))
			for label, want := range c.want {
				assert.Equal(t, want, got[label], label)
			}
		})
	}

	rs := awaitStages(s, freshRehearsalChecks(), map[int]bool{})
	assert.Equal(t, "waits for stage 12: masters fetch their config once stage 12 starts the MCS (now: GET https://api-int.ocp.lab.local:22623/config/master: attempt 73: EOF (retrying))", rs[2].Detail)
	assert.Equal(t, "`bootlab stage run --to 12` (`bootlab stage status` names the next stage)", rs[2].Fix)
	assert.Contains(t, rs[8].Detail, "waits for stage 13: the bootstrap API answers while stage 13 runs")
}

// A plain probe lab has no stages: nothing is ever pending for one.
func TestAwaitStagesPlainProbeLab(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	assert.Nil(t, stagesRun(s, &labdir.State{UUID: "u"}))
	rs := awaitStages(s, freshRehearsalChecks(), stagesRun(s, &labdir.State{UUID: "u"}))
	assert.Equal(t, freshRehearsalChecks(), rs)
}

// The stage records say what ran: the last event of a stage wins (a run
// started again and not ended is not done), another lab's records count
// for nothing.
func TestStagesRunFromRecords(t *testing.T) {
	t.Parallel()
	s := rehearsalSpec(t)
	st := &labdir.State{UUID: "lab-1"}
	assert.Empty(t, stagesRun(s, st), "no log: nothing ran")

	log, err := stages.OpenLog(labdir.Stages(s), st.UUID)
	require.NoError(t, err)
	now := time.Now()
	for _, r := range []stages.Record{
		{Timestamp: now, Phase: stages.PhaseStart, Number: 7},
		{Timestamp: now, Phase: stages.PhaseEnd, Number: 7, Result: stages.ResultSuccess},
		{Timestamp: now, Phase: stages.PhaseEnd, Number: 8, Result: stages.ResultFailure},
		{Timestamp: now, Phase: stages.PhaseSkip, Number: 11, Result: stages.ResultSkipped},
		{Timestamp: now, Phase: stages.PhaseEnd, Number: 12, Result: stages.ResultSuccess},
		{Timestamp: now, Phase: stages.PhaseStart, Number: 12},
		{Timestamp: now, Phase: stages.PhaseEnd, Number: 13, Result: stages.ResultSuccess, LabUUID: "another-lab"},
	} {
		require.NoError(t, log.Records.Record(r))
	}
	log.Close()
	assert.Equal(t, map[int]bool{7: true, 8: false, 11: true, 12: false}, stagesRun(s, st))

	// The log is read again on each call: verify's later passes see a
	// stage run meanwhile.
	f, err := os.OpenFile(labdir.Stages(s)+"/"+stages.RecordsFile, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"phase":"stage end","number":12,"result":"success","labUUID":"lab-1"}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.True(t, stagesRun(s, st)[12])
}

// A rehearsal master leaves :6443 closed until its installer stand-in gives
// it the real kube-apiserver after stage 13: after stage 12 its api check
// and its api backend wait for stage 13, and count for real once it ran.
func TestMasterAPIWaitsForStage13(t *testing.T) {
	t.Parallel()
	s := rehearsalSpec(t)
	checks := func() []check.Result {
		return []check.Result{
			{Group: "master-0", Name: masterAPICheck, Detail: "still pending: nothing on :6443 yet, as on a real master"},
			{Group: HostGroup, Name: "backend api/master-0", Detail: "192.168.126.11:6443 DOWN L4CON Connection refused"},
			{Group: "master-0", Name: "ignition-fetch", Detail: "still pending: attempt 3: EOF (retrying)"},
		}
	}
	after12 := awaitStages(s, checks(), map[int]bool{7: true, 12: true})
	assert.Equal(t, check.StatePending, after12[0].State, after12[0].Detail)
	assert.Contains(t, after12[0].Detail, "waits for stage 13")
	assert.Equal(t, check.StatePending, after12[1].State, after12[1].Detail)
	assert.Contains(t, after12[1].Detail, "waits for stage 13")
	assert.True(t, after12[2].Failed(), "a master's config fetch still counts after stage 12")

	after13 := awaitStages(s, checks(), map[int]bool{7: true, 12: true, 13: true})
	assert.True(t, after13[0].Failed(), "after stage 13 a closed :6443 on a master is a failure")
	assert.True(t, after13[1].Failed())
}

// A rehearsal master joins etcd only once the cluster's API answers (the
// etcd operator is a pod of the cluster): after stage 12 its etcd check
// waits for stage 13, and counts for real once stage 13 ran.
func TestMasterEtcdWaitsForStage13(t *testing.T) {
	t.Parallel()
	s := rehearsalSpec(t)
	checks := func() []check.Result {
		return []check.Result{{Group: "master-0", Name: masterEtcdCheck,
			Detail: "still pending: etcd operator stand-in: waiting for the cluster's API (stage 13 starts the bootstrap's): connection refused"}}
	}
	after12 := awaitStages(s, checks(), map[int]bool{7: true, 12: true})
	assert.Equal(t, check.StatePending, after12[0].State, after12[0].Detail)
	assert.Contains(t, after12[0].Detail, "waits for stage 13: a master joins etcd once the cluster's API answers")
	after13 := awaitStages(s, checks(), map[int]bool{7: true, 12: true, 13: true})
	assert.True(t, after13[0].Failed(), "after stage 13 a master that has not joined etcd is a failure")
}

// haproxy drops the "Connection refused" of an L4CON while its next check
// runs ("DOWN * L4CON"): before stage 13 that backend waits for it too.
func TestAwaitStagesBackendMidCheck(t *testing.T) {
	t.Parallel()
	s := rehearsalSpec(t)
	for _, detail := range []string{"192.168.126.10:6443 DOWN * L4CON", "192.168.126.10:6443 DOWN L4CON Connection refused"} {
		got := awaitStages(s, []check.Result{{Group: HostGroup, Name: "backend api/bootstrap", Detail: detail}}, map[int]bool{1: true})
		assert.Equal(t, "…", got[0].Mark(), detail)
		assert.Contains(t, got[0].Detail, "waits for stage 13", detail)
	}
	got := awaitStages(s, []check.Result{{Group: HostGroup, Name: "backend api/bootstrap", Detail: "192.168.126.10:6443 DOWN L7STS/500 HTTP status"}}, map[int]bool{1: true})
	assert.Equal(t, "✗", got[0].Mark(), "something answers, wrongly: not a stage to wait for")
}

// A frontend verify did not ask, because no server of it has passed
// haproxy's check, waits for the stage that starts its servers, as one
// haproxy accepted and closed does; once the stage ran it fails for real.
func TestAwaitStagesUnprovenFrontend(t *testing.T) {
	t.Parallel()
	s := rehearsalSpec(t)
	fe := loadbalancer.Frontend{Name: "api", Port: 6443, Check: loadbalancer.CheckReadyz}
	c, _, ok := unproven(fe, haproxyStats{st: &loadbalancer.Status{Running: true, Backends: []loadbalancer.BackendStatus{
		{Frontend: "api", Server: "bootstrap", Status: "DOWN", LastCheck: "L4CON Connection refused"},
		{Frontend: "api", Server: "master-0", Status: "DOWN", LastCheck: "L4CON Connection refused"},
	}}})
	require.True(t, ok)
	rs := awaitStages(s, []check.Result{c}, map[int]bool{12: true})
	assert.Equal(t, check.StatePending, rs[0].State)
	assert.Contains(t, rs[0].Detail, "waits for stage 13: nothing serves 6443 before stage 13")
	assert.Contains(t, rs[0].Detail, "(now: no server has passed haproxy's check yet (bootstrap DOWN L4CON")

	c2, _, _ := unproven(fe, haproxyStats{st: &loadbalancer.Status{Running: true, Backends: []loadbalancer.BackendStatus{
		{Frontend: "api", Server: "bootstrap", Status: "DOWN", LastCheck: "L4CON Connection refused"}}}})
	rs = awaitStages(s, []check.Result{c2}, map[int]bool{12: true, 13: true})
	assert.True(t, rs[0].Failed(), "after stage 13 it counts")
}

// A backend haproxy last saw time out (checked while its node booted) is
// looked at again with one connect: refused now, it is a port nothing
// listens on yet, which waits for its stage; a connect that times out or
// succeeds leaves haproxy's word, and any other last check is not redone.
func TestRecheckTimeoutOnlyRefinesATimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	open, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer open.Close()
	var d net.Dialer
	timedOut := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}
	}
	dials := 0
	counting := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials++
		return d.DialContext(ctx, network, addr)
	}
	tout := loadbalancer.BackendStatus{Status: "DOWN", LastCheck: "L4TOUT"}

	got := recheckTimeout(ctx, counting, tout, closed)
	assert.Equal(t, "L4TOUT; connect to "+closed+" just now: connection refused", got.LastCheck)
	assert.True(t, nothingListens(got.LastCheck))
	assert.Equal(t, "DOWN", got.Status, "still down: only the reason changes")
	s := rehearsalSpec(t)
	gated := awaitStages(s, []check.Result{{Group: HostGroup, Name: "backend machine-config/bootstrap", Detail: "192.168.126.10:22623 DOWN " + got.LastCheck}}, map[int]bool{1: true})
	assert.Equal(t, "…", gated[0].Mark(), "refused before stage 12: it waits for the MCS")
	gated = awaitStages(s, []check.Result{{Group: HostGroup, Name: "backend machine-config/bootstrap", Detail: "192.168.126.10:22623 DOWN " + got.LastCheck}}, map[int]bool{12: true})
	assert.Equal(t, "✗", gated[0].Mark(), "refused after stage 12 ran: a failure")

	assert.Equal(t, tout, recheckTimeout(ctx, timedOut, tout, closed), "a timeout again stays a timeout")
	assert.Equal(t, tout, recheckTimeout(ctx, counting, tout, open.Addr().String()), "something answers now: haproxy's next check will say so")
	assert.Equal(t, tout, recheckTimeout(ctx, nil, tout, closed), "no dialer, no second look")
	before := dials
	refused := loadbalancer.BackendStatus{Status: "DOWN", LastCheck: "L4CON Connection refused"}
	assert.Equal(t, refused, recheckTimeout(ctx, counting, refused, closed))
	l7 := loadbalancer.BackendStatus{Status: "DOWN", LastCheck: "L7STS/500 HTTP status"}
	assert.Equal(t, l7, recheckTimeout(ctx, counting, l7, closed))
	assert.Equal(t, before, dials, "only a timeout is looked at again")
}

// recheckTimeouts looks again at every backend whose last check timed out
// on a node that runs, all at once (each look may wait out dialTimeout):
// the dialer below answers only once three dials are in flight together,
// so a look one at a time would time out, and keep haproxy's L4TOUT. A
// healthy backend, one whose check was refused rather than timed out, one
// whose node is shut off and one haproxy does not list are not looked at.
func TestRecheckTimeoutsLookAtOnce(t *testing.T) {
	t.Parallel()
	lbc := loadbalancer.Config{Frontends: []loadbalancer.Frontend{
		{Name: "api", Port: 6443, Servers: []loadbalancer.Server{
			{Name: "bootstrap", Address: "192.0.2.10"}, {Name: "master-0", Address: "192.0.2.11"}, {Name: "master-1", Address: "192.0.2.12"}}},
		{Name: "machine-config", Port: 22623, Servers: []loadbalancer.Server{
			{Name: "bootstrap", Address: "192.0.2.10"}, {Name: "master-0", Address: "192.0.2.11"}, {Name: "master-2", Address: "192.0.2.13"}}},
	}}
	tout := loadbalancer.BackendStatus{Status: "DOWN", LastCheck: "L4TOUT"}
	seen := map[string]loadbalancer.BackendStatus{
		"api/bootstrap": tout, "api/master-0": tout, "api/master-1": tout,
		"machine-config/bootstrap": tout, "machine-config/master-0": {Status: "UP", LastCheck: "L7OK/200"},
		// Refused, not timed out: haproxy's word stands, no second look.
		"machine-config/master-2": {Status: "DOWN", LastCheck: "L4CON"},
	}
	vms := map[string]NodeVM{"bootstrap": {State: "running"}, "master-0": {State: "running"}, "master-1": {State: "shut off"}}

	var mu sync.Mutex
	var dialed []string
	inFlight := 0
	all := make(chan struct{})
	dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		if inFlight++; inFlight == 3 {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		case <-ctx.Done():
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
		}
	}
	got := recheckTimeouts(context.Background(), dial, lbc, seen, vms)

	assert.ElementsMatch(t, []string{"192.0.2.10:6443", "192.0.2.11:6443", "192.0.2.10:22623"}, dialed)
	require.Len(t, got, 3, "the three timed-out backends of running (or unseen) nodes: %v", got)
	for key, hp := range map[string]string{"api/bootstrap": "192.0.2.10:6443", "api/master-0": "192.0.2.11:6443", "machine-config/bootstrap": "192.0.2.10:22623"} {
		assert.Equal(t, "L4TOUT; connect to "+hp+" just now: connection refused", got[key].LastCheck, key)
		assert.Equal(t, "DOWN", got[key].Status, key)
	}
}

// Once stage 13 tore the temporary control plane down (6443) and stage 14
// removed the MCS (22623), the bootstrap's backends are down as on a real
// bootstrap that is done: pending on `lab pivot`, not a failure verify
// waits for. Before those stages the same state is a real failure (or
// waits for its stage), and a master's backend is never excused.
func TestAwaitsPivotAfterTheStagesStoppedTheBootstrap(t *testing.T) {
	t.Parallel()
	s := rehearsalSpec(t)
	api := check.Result{Group: HostGroup, Name: "backend api/bootstrap", Detail: "192.168.126.10:6443 DOWN L4CON Connection refused"}
	mcs := check.Result{Group: HostGroup, Name: "backend machine-config/bootstrap", Detail: "192.168.126.10:22623 DOWN L4CON Connection refused"}
	master := check.Result{Group: HostGroup, Name: "backend api/master-0", Detail: "192.168.126.11:6443 DOWN L4CON Connection refused"}
	wrong := check.Result{Group: HostGroup, Name: "backend api/bootstrap", Detail: "192.168.126.10:6443 DOWN L7STS/500 HTTP status"}
	all := map[int]bool{12: true, 13: true, 14: true, 15: true}

	got := awaitStages(s, []check.Result{api, mcs, master, wrong}, all)
	for _, c := range got[:2] {
		assert.Equal(t, check.StatePending, c.State, c.Name)
		assert.Contains(t, c.Detail, "waits for `lab pivot`: ", c.Name)
		assert.Equal(t, "`bootlab lab pivot` takes the bootstrap out of the load balancer, as the docs require once bootstrap is complete", c.Fix)
	}
	assert.Contains(t, got[0].Detail, "stopped when stage 13 finished")
	assert.Contains(t, got[1].Detail, "stopped when stage 14 removed its pod")
	assert.True(t, got[2].Failed(), "a master's API down after stage 13 is a failure")
	assert.True(t, got[3].Failed(), "a bootstrap that answers wrongly is no pivot to wait for")

	got = awaitStages(s, []check.Result{mcs}, map[int]bool{12: true, 13: true})
	assert.True(t, got[0].Failed(), "before stage 14 the bootstrap MCS must answer")

	// The bootstrap's own agent says the same (as seen in the class e2e
	// after stage 15): pending on the pivot too, and only after the stage
	// that stopped it.
	nodeAPI := check.Result{Group: "bootstrap", Name: "serve api :6443", State: check.StateFailed, Detail: "bootstrap API stopped: cluster-bootstrap tore the temporary control plane down (the kube-apiserver pod's manifest was removed)"}
	nodeMCS := check.Result{Group: "bootstrap", Name: "serve mcs :22623", State: check.StateFailed, Detail: "bootstrap MCS stopped: its pod's manifest was removed"}
	got = awaitStages(s, []check.Result{nodeAPI, nodeMCS}, all)
	for _, c := range got {
		assert.Equal(t, check.StatePending, c.State, c.Name)
		assert.Contains(t, c.Fix, "bootlab lab pivot", c.Name)
	}
	got = awaitStages(s, []check.Result{nodeMCS}, map[int]bool{12: true, 13: true})
	assert.True(t, got[0].Failed(), "stopped before stage 14 removed it: a failure")
}
