package loadbalancer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

func lbSpec(masters, workers int) *spec.Spec {
	s := &spec.Spec{Name: "demo", Profile: spec.ProfileOpenShift, LabDir: "/var/lib/bootlab/labs/demo",
		Topology: spec.Topology{Masters: masters, Workers: workers}}
	s.OpenShift.PullSecretFile = "/dev/null"
	s.Defaults()
	return s
}

func TestLabConfigGolden(t *testing.T) {
	t.Parallel()
	compact := lbSpec(3, 0)
	compact.Network.IngressAddress = "192.168.126.2"
	cases := []struct {
		golden  string
		spec    *spec.Spec
		removed bool
	}{
		{"lab-1-3-2.cfg", lbSpec(3, 2), false},
		{"lab-1-3-0-compact.cfg", compact, false},
		{"lab-1-3-2-pivoted.cfg", lbSpec(3, 2), true},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			c := LabConfig(tc.spec, tc.removed)
			assert.Equal(t, filepath.Dir(labdir.HAProxyConfig(tc.spec)), c.Dir)
			assert.Equal(t, labdir.HAProxyConfig(tc.spec), c.ConfigPath())
			assert.Equal(t, labdir.HAProxyPID(tc.spec), c.PIDPath())
			assert.Equal(t, labdir.HAProxySocket(tc.spec), c.SocketPath())
			got, err := Render(c)
			require.NoError(t, err)
			golden(t, tc.golden, got)
		})
	}
}

func TestLabConfigBackends(t *testing.T) {
	t.Parallel()
	servers := func(c Config, frontend string) []string {
		for _, f := range c.Frontends {
			if f.Name == frontend {
				var names []string
				for _, s := range f.Servers {
					names = append(names, s.Name)
				}
				return names
			}
		}
		return nil
	}
	s := lbSpec(3, 2)
	c := LabConfig(s, false)
	assert.Equal(t, s.Network.APIAddress, c.BindAddress)
	assert.Equal(t, spec.HAProxyStatsPort, c.StatsPort)
	assert.Equal(t, []string{"bootstrap", "master-0", "master-1", "master-2"}, servers(c, "api"))
	assert.Equal(t, []string{"bootstrap", "master-0", "master-1", "master-2"}, servers(c, "machine-config"))
	assert.Equal(t, []string{"worker-0", "worker-1"}, servers(c, "ingress-https"))

	pivoted := LabConfig(s, true)
	assert.Equal(t, []string{"master-0", "master-1", "master-2"}, servers(pivoted, "api"))
	assert.Equal(t, []string{"master-0", "master-1", "master-2"}, servers(pivoted, "machine-config"))
	assert.Equal(t, []string{"worker-0", "worker-1"}, servers(pivoted, "ingress-http"))

	compact := LabConfig(lbSpec(3, 0), false)
	assert.Equal(t, []string{"master-0", "master-1", "master-2"}, servers(compact, "ingress-http"), "no workers: routers run on the masters")
}

// A probe lab's servers enter rotation two quick checks after they answer;
// a real lab keeps the documented period for every state.
func TestLabConfigCheckIntervals(t *testing.T) {
	t.Parallel()
	real := LabConfig(lbSpec(3, 2), false)
	assert.Zero(t, real.CheckInterval)
	assert.Zero(t, real.TransitionInterval)

	p := lbSpec(3, 2)
	p.Profile = spec.ProfileProbe
	probe := LabConfig(p, false)
	assert.Equal(t, ProbeCheckInterval, probe.CheckInterval)
	assert.Equal(t, ProbeTransitionInterval, probe.TransitionInterval)
	assert.Less(t, probe.TransitionInterval, probe.CheckInterval)
	got, err := Render(probe)
	require.NoError(t, err)
	assert.Contains(t, string(got), "default-server inter 2s fastinter 250ms downinter 250ms fall 3 rise 2")

	// A rehearsal lab's real kube-apiservers, down for minutes while they
	// start under TCG, are not asked four times a second.
	r := lbSpec(3, 2)
	r.Profile = spec.ProfileProbe
	r.OpenShift.ManualBootstrap = true
	require.True(t, r.Rehearsal())
	rehearsal := LabConfig(r, false)
	assert.Equal(t, ProbeCheckInterval, rehearsal.CheckInterval)
	assert.Equal(t, ProbeCheckInterval, rehearsal.TransitionInterval)
	got, err = Render(rehearsal)
	require.NoError(t, err)
	assert.Contains(t, string(got), "default-server inter 2s fastinter 2s downinter 2s fall 3 rise 2")
}

// IngressNodes is the one rule for who serves 80 and 443; the load
// balancer's ingress backends must be exactly those nodes in every topology
// the spec accepts: with workers, without (compact and single master), and
// for an explicit node list in any order.
func TestIngressNodesAreTheIngressBackends(t *testing.T) {
	t.Parallel()
	probeSpec := func(masters, workers int) *spec.Spec {
		s := &spec.Spec{Name: "p", Profile: spec.ProfileProbe, LabDir: "/tmp/p", Topology: spec.Topology{Masters: masters, Workers: workers}}
		s.Defaults()
		return s
	}
	explicit := &spec.Spec{Name: "x", Profile: spec.ProfileProbe, LabDir: "/tmp/x", Nodes: []spec.Node{
		{Name: "infra-a", Role: spec.RoleWorker}, {Name: "cp-1", Role: spec.RoleMaster}, {Name: "boot", Role: spec.RoleBootstrap}, {Name: "cp-2", Role: spec.RoleMaster},
	}}
	explicit.Defaults()
	explicitCompact := &spec.Spec{Name: "y", Profile: spec.ProfileProbe, LabDir: "/tmp/y", Nodes: []spec.Node{
		{Name: "cp-1", Role: spec.RoleMaster}, {Name: "boot", Role: spec.RoleBootstrap},
	}}
	explicitCompact.Defaults()
	for _, tc := range []struct {
		name        string
		spec        *spec.Spec
		want        []string
		schedulable bool
	}{
		{"probe 1+1+0", probeSpec(1, 0), []string{"master-0"}, true},
		{"probe 1+3+0", probeSpec(3, 0), []string{"master-0", "master-1", "master-2"}, true},
		{"probe 1+3+1", probeSpec(3, 1), []string{"worker-0"}, false},
		{"probe 1+3+2", probeSpec(3, 2), []string{"worker-0", "worker-1"}, false},
		{"probe 1+1+1", probeSpec(1, 1), []string{"worker-0"}, false},
		{"probe 1+2+0", probeSpec(2, 0), []string{"master-0", "master-1"}, true},
		{"openshift 1+3+0", lbSpec(3, 0), []string{"master-0", "master-1", "master-2"}, true},
		{"openshift 1+5+3", lbSpec(5, 3), []string{"worker-0", "worker-1", "worker-2"}, false},
		{"explicit nodes with a worker", explicit, []string{"infra-a"}, false},
		{"explicit nodes without workers", explicitCompact, []string{"cp-1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.spec.Profile == spec.ProfileOpenShift {
				// Validation reads the pull secret: give it a well-formed one.
				ps := filepath.Join(t.TempDir(), "pull-secret.json")
				require.NoError(t, os.WriteFile(ps, []byte(`{"auths":{"quay.io":{"auth":"dTpw"}}}`), 0o600))
				tc.spec.OpenShift.PullSecretFile = ps
			}
			require.NoError(t, tc.spec.Validate(), "the spec accepts this topology")
			var got []string
			for _, n := range tc.spec.IngressNodes() {
				got = append(got, n.Name)
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.schedulable, tc.spec.MastersSchedulable())
			for _, removed := range []bool{false, true} {
				c := LabConfig(tc.spec, removed)
				for _, fe := range c.Frontends {
					if fe.Port != PortIngressHTTP && fe.Port != PortIngressHTTPS {
						continue
					}
					var names []string
					for _, srv := range fe.Servers {
						names = append(names, srv.Name)
						n, ok := tc.spec.Node(srv.Name)
						require.True(t, ok)
						assert.Equal(t, n.IP, srv.Address, "%s/%s", fe.Name, srv.Name)
					}
					assert.Equal(t, tc.want, names, "%s (bootstrap removed: %t)", fe.Name, removed)
				}
			}
		})
	}
}
