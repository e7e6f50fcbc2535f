package dashboard

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/stages"
)

func TestStagesFromRecords(t *testing.T) {
	t.Parallel()
	recs := []stages.Record{
		{Phase: stages.PhaseStart, Number: 1},
		{Phase: stages.PhaseEnd, Number: 1, Result: stages.ResultSuccess},
		{Phase: stages.PhaseSkip, Number: 2, Result: stages.ResultSkipped, Reason: "marker present"},
		{Phase: stages.PhaseStart, Number: 3},
		{Phase: stages.PhaseEnd, Number: 3, Result: stages.ResultFailure, ErrorMessage: "render failed\nline two"},
		{Phase: stages.PhaseStart, Number: 3},
		{Phase: stages.PhaseEnd, Number: 99, Result: stages.ResultSuccess},
	}
	got := StagesFromRecords(recs)
	require.Len(t, got, 15)
	assert.Equal(t, StageDone, got[0].State)
	assert.Equal(t, StageSkipped, got[1].State)
	assert.Equal(t, "marker present", got[1].Message)
	assert.Equal(t, StageRunning, got[2].State, "a rerun after a failure is running again")
	assert.Empty(t, got[2].Message)
	assert.Equal(t, StagePending, got[3].State)

	got = StagesFromRecords(recs[4:5])
	assert.Equal(t, StageFailed, got[2].State)
	assert.Equal(t, "render failed", got[2].Message)
}

// A lab built after another of the same name (lab down, lab up) shows none
// of the earlier lab's stages or verify result, even when its files are
// still in the lab directory (left by an older lab down, or put back by
// hand); once the lab runs a stage of its own, that stage shows.
func TestCollectorShowsOnlyTheLabsOwnRecords(t *testing.T) {
	t.Parallel()
	home, hv := fixtureHome(t, 1)
	dir := filepath.Join(home, "labs", "ux1")
	c := &Collector{Home: home, Connect: connector(hv)}
	views, err := c.Snapshot(context.Background())
	require.NoError(t, err)
	require.Equal(t, 6, views[0].StageReached, "the fixture lab's own records show")
	require.NotNil(t, views[0].Verify)

	st, err := labdir.LoadState(dir)
	require.NoError(t, err)
	st.UUID = "b2c4a1d0-1111-4222-8333-444455556666" // the same name, another lab
	require.NoError(t, st.Save(dir))
	views, err = c.Snapshot(context.Background())
	require.NoError(t, err)
	v := views[0]
	assert.Equal(t, 0, v.StageReached)
	assert.Equal(t, 0, v.StageRunning)
	for _, sv := range v.Stages {
		assert.Equal(t, StagePending, sv.State, "stage %02d", sv.Number)
	}
	assert.Nil(t, v.Verify, "the earlier lab's verify result is not this lab's")
	assert.NotContains(t, strings.Join(v.Failures, "\n"), "verify:")

	// Its own first stage, appended to the same file, shows.
	l, err := stages.OpenLog(filepath.Join(dir, "stages"), st.UUID)
	require.NoError(t, err)
	require.NoError(t, l.Records.Record(stages.Record{Phase: stages.PhaseEnd, Number: 1, Result: stages.ResultSuccess}))
	require.NoError(t, l.Close())
	views, err = c.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, views[0].StageReached)
	assert.Equal(t, StagePending, views[0].Stages[6].State, "the earlier lab's failed 07 stays out")
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain error":   "plain error",
		"first\nsecond": "first",
		"key: -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- done": "key: [redacted] done",
		`{"auths":{"x":{"auth":"dXNlcjpwYXNz"}}}`:                                        `{"auths":{"x":{"auth":"[redacted]"}}}`,
		"token=abc123 then":                 "token=[redacted] then",
		"client-key-data: LS0tLS1CRUdJTg==": "client-key-data: [redacted]",
		"jwt eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.sig": "jwt [redacted]",
	} {
		assert.Equal(t, want, Sanitize(in), in)
	}
	long := Sanitize(strings.Repeat("word ", 100))
	assert.LessOrEqual(t, len([]rune(long)), 301)
}

func TestHealth(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]string{
		"UP": HealthUp, "UP 1/3": HealthUp, "no check": HealthUp, "DOWN": HealthDown, "DOWN 1/2": HealthDown,
		"MAINT": HealthMaint, "MAINT (via x)": HealthMaint, "DRAIN": HealthMaint, "": HealthUnknown,
	} {
		assert.Equal(t, want, health(loadbalancer.BackendStatus{Status: status}), status)
	}
}

// The phase follows the load balancer: the bootstrap alone, then masters
// serving the API (handoff), then `lab pivot`.
func TestPhaseAndBackendHealth(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "p", Libvirt: spec.Libvirt{URI: "qemu:///fake"}, Topology: spec.Topology{Masters: 1}, Network: spec.Network{CIDR: "10.1.0.0/24"}, LabDir: t.TempDir()}
	s.Defaults()
	st := &lab.Status{Network: lab.NetworkStatus{Exists: true, Active: true}, LoadBalancer: &loadbalancer.Status{Running: true, Backends: []loadbalancer.BackendStatus{
		{Frontend: "api", Server: "bootstrap", Status: "UP"},
		{Frontend: "api", Server: "master-0", Status: "DOWN"},
	}}, Nodes: []lab.NodeStatus{{Name: "bootstrap", State: "running"}, {Name: "master-0", State: "running", IP: "10.1.0.99"}}}

	v := LabView{Network: NetworkView{Exists: true}}
	v.Nodes, v.LoadBalancer = nodesAndLB(s, st, false)
	assert.Equal(t, "10.1.0.99", v.Nodes[1].IP, "the leased address wins over the reserved one")
	assert.Equal(t, HealthUp, v.LoadBalancer.Frontends[0].Backends[0].Health)
	assert.Equal(t, HealthDown, v.LoadBalancer.Frontends[0].Backends[1].Health)
	assert.Equal(t, HealthUnknown, v.LoadBalancer.Frontends[1].Backends[0].Health, "no stat row: unknown")
	assert.Equal(t, PhaseBootstrapActive, phase(&v, s, false))
	assert.Contains(t, failures(&v, s), "backend api/master-0 is DOWN")

	st.LoadBalancer.Backends[1].Status = "UP"
	v.Nodes, v.LoadBalancer = nodesAndLB(s, st, false)
	assert.Equal(t, PhaseHandoff, phase(&v, s, false))

	v.Nodes, v.LoadBalancer = nodesAndLB(s, st, true)
	assert.Len(t, v.LoadBalancer.Frontends[0].Backends, 1, "after pivot the bootstrap is no backend")
	assert.Equal(t, PhaseBootstrapRemoved, phase(&v, s, true))

	assert.Equal(t, PhaseNotBuilt, phase(&LabView{}, s, false))
}

// A shut-off node and an orphaned lab show up as what needs a look.
func TestCollectorNodeDownAndOrphan(t *testing.T) {
	t.Parallel()
	home, hv := fixtureHome(t, 1)
	setActive(hv, "bootlab-ux1-worker-1", false)
	orphan := &spec.Spec{Name: "gone", Topology: spec.Topology{Masters: 1}, Network: spec.Network{CIDR: "10.9.9.0/24"}}
	orphan.Defaults()
	addLab(hv, orphan)
	c := &Collector{Home: home, Connect: connector(hv)}
	views, err := c.Snapshot(context.Background())
	require.NoError(t, err)
	require.Len(t, views, 2)
	assert.Equal(t, "gone", views[0].Name)
	assert.True(t, views[0].Orphaned)
	assert.Contains(t, views[0].Error, "orphaned")
	assert.Len(t, views[0].Nodes, 2)
	assert.Equal(t, 5, views[1].NodesUp)
	assert.Contains(t, views[1].Failures, "node worker-1 is shut off")
}

// A daemon that cannot be reached is logged when it starts failing, not on
// every poll, and the lab's view says why it is incomplete.
func TestCollectorLogsUnreachableLibvirtOnce(t *testing.T) {
	t.Parallel()
	home, _ := fixtureHome(t, 1)
	var logged strings.Builder
	c := &Collector{Home: home, Log: slog.New(slog.NewTextHandler(&logged, nil)),
		Connect: func(context.Context, string, *slog.Logger) (hypervisor.Hypervisor, error) {
			return nil, errors.New("dial unix /var/run/libvirt/libvirt-sock: connect: no such file or directory")
		}}
	for i := 0; i < 3; i++ {
		views, err := c.Snapshot(context.Background())
		require.NoError(t, err)
		require.Len(t, views, 1)
		assert.Contains(t, views[0].Error, "libvirt-sock")
		assert.Equal(t, "unknown", views[0].Nodes[0].State)
		assert.Contains(t, views[0].Failures[0], "libvirt qemu:///fake")
	}
	assert.Equal(t, 1, strings.Count(logged.String(), "cannot read labs from libvirt"), logged.String())
}

// Who serves the API and the MCS is read from the backends haproxy's
// check passes; the ingress ports play no part.
func TestServingFromTheLoadBalancer(t *testing.T) {
	t.Parallel()
	lb := LBView{Frontends: []FrontendView{
		{Name: "api", Port: 6443, Backends: []BackendView{{Server: "bootstrap", Health: HealthDown}, {Server: "master-0", Health: HealthUp}, {Server: "master-1", Health: HealthUp}}},
		{Name: "machine-config", Port: 22623, Backends: []BackendView{{Server: "bootstrap", Health: HealthUp}, {Server: "master-0", Health: HealthMaint}}},
		{Name: "ingress-http", Port: 80, Backends: []BackendView{{Server: "worker-0", Health: HealthUp}}},
	}}
	assert.Equal(t, ServingView{API: []string{"master-0", "master-1"}, MCS: []string{"bootstrap"}}, serving(lb))
	assert.Equal(t, ServingView{API: []string{}, MCS: []string{}}, serving(LBView{}), "nobody: empty lists, never null")
}

// No kubeconfig: no cluster card. One that cannot be used says why, and
// the answer is kept for clusterEvery (the page polls every second).
func TestClusterNeedsTheLabKubeconfig(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "k", LabDir: t.TempDir(), OpenShift: spec.OpenShift{ManualBootstrap: true}}
	s.Defaults()
	var c Collector
	assert.Nil(t, c.cluster(context.Background(), s))
	require.NoError(t, os.WriteFile(labdir.Kubeconfig(s), []byte("clusters: []\n"), 0o600))
	v := c.cluster(context.Background(), s)
	require.NotNil(t, v)
	assert.Contains(t, v.Error, "has no context, cluster or user")
	assert.Same(t, v, c.cluster(context.Background(), s), "kept, not read again within clusterEvery")
}

// On a rehearsal lab a backend down as the stages leave it is pending, in
// verify's words, and not among what needs a look: the masters' 6443
// before stage 13 ran, the bootstrap's after it until `lab pivot`. Down
// for any other reason it stays red.
func TestExpectedDownIsPendingNotRed(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "p", Libvirt: spec.Libvirt{URI: "qemu:///fake"}, Topology: spec.Topology{Masters: 1}, Network: spec.Network{CIDR: "10.1.0.0/24"},
		LabDir: t.TempDir(), OpenShift: spec.OpenShift{ManualBootstrap: true}}
	s.Defaults()
	require.True(t, s.Rehearsal())
	st := &lab.Status{Network: lab.NetworkStatus{Exists: true, Active: true}, LoadBalancer: &loadbalancer.Status{Running: true, Backends: []loadbalancer.BackendStatus{
		{Frontend: "api", Server: "bootstrap", Address: "10.1.0.10:6443", Status: "DOWN", LastCheck: "L4CON Connection refused"},
		{Frontend: "api", Server: "master-0", Address: "10.1.0.11:6443", Status: "DOWN", LastCheck: "L4CON Connection refused"},
	}}, Nodes: []lab.NodeStatus{{Name: "bootstrap", State: "running"}, {Name: "master-0", State: "running"}}}
	view := func(done ...int) LabView {
		v := LabView{Network: NetworkView{Exists: true}, NodesUp: 2}
		for _, n := range done {
			v.Stages = append(v.Stages, StageView{Number: n, State: StageDone})
		}
		v.Nodes, v.LoadBalancer = nodesAndLB(s, st, false)
		expectedDown(s, st, v.Stages, &v.LoadBalancer)
		v.Phase = phase(&v, s, false)
		return v
	}

	before := view(12)
	master := before.LoadBalancer.Frontends[0].Backends[1]
	assert.Equal(t, HealthPending, master.Health)
	assert.Contains(t, master.Pending, "waits for stage 13")
	assert.NotContains(t, strings.Join(failures(&before, s), "\n"), "master-0", "expected before stage 13: not red")

	after := view(12, 13)
	boot, master := after.LoadBalancer.Frontends[0].Backends[0], after.LoadBalancer.Frontends[0].Backends[1]
	assert.Equal(t, HealthPending, boot.Health)
	assert.Contains(t, boot.Pending, "waits for `lab pivot`")
	assert.Equal(t, HealthDown, master.Health, "after stage 13 a master's API must answer")
	assert.Contains(t, failures(&after, s), "backend api/master-0 is DOWN")
	assert.NotContains(t, strings.Join(failures(&after, s), "\n"), "api/bootstrap")
}
