package lab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/loadbalancer"
)

func lbSpec(masters, workers int) *Spec {
	s := &Spec{Name: "demo", Profile: ProfileOpenShift, LabDir: "/var/lib/bootlab/labs/demo",
		Topology: Topology{Masters: masters, Workers: workers}}
	s.OpenShift.PullSecretFile = "/dev/null"
	s.Defaults()
	return s
}

func TestLoadBalancerConfigGolden(t *testing.T) {
	compact := lbSpec(3, 0)
	compact.Network.IngressAddress = "192.168.126.2"
	cases := []struct {
		golden  string
		spec    *Spec
		removed bool
	}{
		{"lab-1-3-2.cfg", lbSpec(3, 2), false},
		{"lab-1-3-0-compact.cfg", compact, false},
		{"lab-1-3-2-pivoted.cfg", lbSpec(3, 2), true},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			c := LoadBalancerConfig(tc.spec, tc.removed)
			assert.Equal(t, filepath.Dir(tc.spec.HAProxyConfigPath()), c.Dir)
			assert.Equal(t, tc.spec.HAProxyConfigPath(), c.ConfigPath())
			assert.Equal(t, tc.spec.HAProxyPIDPath(), c.PIDPath())
			assert.Equal(t, tc.spec.HAProxySocketPath(), c.SocketPath())
			got, err := loadbalancer.Render(c)
			require.NoError(t, err)
			path := filepath.Join("..", "testdata", "haproxy", tc.golden)
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run `go test ./lab -run TestLoadBalancerConfigGolden -update`")
			assert.Equal(t, string(want), string(got))
		})
	}
}

func TestLoadBalancerConfigBackends(t *testing.T) {
	servers := func(c loadbalancer.Config, frontend string) []string {
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
	c := LoadBalancerConfig(s, false)
	assert.Equal(t, s.Network.APIAddress, c.BindAddress)
	assert.Equal(t, HAProxyStatsPort, c.StatsPort)
	assert.Equal(t, []string{"bootstrap", "master-0", "master-1", "master-2"}, servers(c, "api"))
	assert.Equal(t, []string{"bootstrap", "master-0", "master-1", "master-2"}, servers(c, "machine-config"))
	assert.Equal(t, []string{"worker-0", "worker-1"}, servers(c, "ingress-https"))

	pivoted := LoadBalancerConfig(s, true)
	assert.Equal(t, []string{"master-0", "master-1", "master-2"}, servers(pivoted, "api"))
	assert.Equal(t, []string{"master-0", "master-1", "master-2"}, servers(pivoted, "machine-config"))
	assert.Equal(t, []string{"worker-0", "worker-1"}, servers(pivoted, "ingress-http"))

	compact := LoadBalancerConfig(lbSpec(3, 0), false)
	assert.Equal(t, []string{"master-0", "master-1", "master-2"}, servers(compact, "ingress-http"), "no workers: routers run on the masters")
}
