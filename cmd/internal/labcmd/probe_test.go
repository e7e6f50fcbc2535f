package labcmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/ignition"
	"github.com/bootlab/bootlab/lab/pki"
	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/verify"
)

func TestVerifyFlags(t *testing.T) {
	var got *VerifyOptions
	cmd := NewCmdVerify(testFactory(), func(o *VerifyOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-f", "x.yaml", "-o", "json", "--timeout", "90s"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "x.yaml", got.Spec.File)
	assert.Equal(t, "json", got.Output)
	assert.Equal(t, 90*time.Second, got.Timeout)

	cmd = NewCmdVerify(testFactory(), func(o *VerifyOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"-o", "yaml"})
	err := cmd.Execute()
	var ce *cmdutil.CodeError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, cmdutil.ExitUsage, ce.Code)
}

func TestProbeImageBuildFlags(t *testing.T) {
	var got *ProbeImageBuildOptions
	cmd := NewCmdProbeImageBuild(testFactory(), func(o *ProbeImageBuildOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--kernel", "/k", "--modules", "/m", "-o", "json"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, &ProbeImageBuildOptions{Kernel: "/k", Modules: "/m", Output: "json"}, got)

	cmd = NewCmdProbeImageBuild(testFactory(), func(o *ProbeImageBuildOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"--kernel", "/k"})
	err := cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--kernel and --modules go together")
}

func TestWriteProbeIgnition(t *testing.T) {
	s := &lab.Spec{Name: "p", Profile: lab.ProfileProbe, LabDir: t.TempDir()}
	s.Defaults()
	require.NoError(t, cmdutil.WriteProbeIgnition(s))
	for _, n := range s.Nodes {
		p := s.IgnitionPath(n)
		fi, err := os.Stat(p)
		require.NoError(t, err, n.Name)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), n.Name)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		cfg, err := ignition.Parse(data)
		require.NoError(t, err, n.Name)
		if n.Role == lab.RoleBootstrap {
			pc, err := probe.ParseProbeConfig(cfg)
			require.NoError(t, err)
			self, ok := pc.Self(n.MAC)
			require.True(t, ok)
			assert.Equal(t, n.IP, self.IP)
			assert.Equal(t, s.FQDN(n), self.FQDN)
			continue
		}
		require.Len(t, cfg.Ignition.Config.Merge, 1, n.Name)
		assert.Equal(t, "https://api-int.ocp.lab.local:22623/config/"+string(n.Role), *cfg.Ignition.Config.Merge[0].Source)
	}
	ca1, err := os.ReadFile(filepath.Join(s.LabDir, "pki", "root-ca.crt"))
	require.NoError(t, err)
	require.NoError(t, cmdutil.WriteProbeIgnition(s))
	ca2, err := os.ReadFile(filepath.Join(s.LabDir, "pki", "root-ca.crt"))
	require.NoError(t, err)
	assert.Equal(t, ca1, ca2, "the lab CA is reused on re-runs")
}

// The probe agents serve ingress on exactly the nodes haproxy sends 80 and
// 443 to: read back from the configs each pool is served (what an agent
// finds about itself), for every topology the spec accepts.
func TestProbeIngressNodesAreTheLoadBalancers(t *testing.T) {
	for _, topo := range []lab.Topology{{Masters: 1}, {Masters: 3}, {Masters: 3, Workers: 1}, {Masters: 3, Workers: 2}, {Masters: 1, Workers: 1}} {
		t.Run(fmt.Sprintf("1+%d+%d", topo.Masters, topo.Workers), func(t *testing.T) {
			s := &lab.Spec{Name: "p", Profile: lab.ProfileProbe, LabDir: t.TempDir(), Topology: topo}
			s.Defaults()
			p, err := pki.Ensure(filepath.Join(s.LabDir, "pki"), "api-int."+s.Cluster.Domain())
			require.NoError(t, err)
			cfgs, err := probe.Generate(cmdutil.ProbeInput(s, p))
			require.NoError(t, err)
			var serving []string
			seen := 0
			for _, served := range [][]byte{cfgs.Bootstrap, cfgs.MasterServed, cfgs.WorkerServed} {
				cfg, err := ignition.Parse(served)
				require.NoError(t, err)
				pc, err := probe.ParseProbeConfig(cfg)
				require.NoError(t, err)
				for _, n := range pc.SortedNodes() {
					seen++
					if n.Ingress {
						serving = append(serving, n.Name)
					}
				}
			}
			require.Equal(t, len(s.Nodes), seen, "every node finds itself in its pool's config")
			sort.Strings(serving)

			var backends []string
			for _, fe := range lab.LoadBalancerConfig(s, false).Frontends {
				if fe.Name == "ingress-http" {
					for _, srv := range fe.Servers {
						backends = append(backends, srv.Name)
					}
				}
			}
			sort.Strings(backends)
			require.NotEmpty(t, backends)
			assert.Equal(t, backends, serving)
		})
	}
}

func TestPrintVerify(t *testing.T) {
	var b bytes.Buffer
	res := &verify.Result{Checks: []check.Result{
		{Group: "host", Name: "dns api.x", OK: true, Detail: "api.x -> 1.2.3.4"},
		{Group: "master-0", Name: "ignition-fetch", Detail: "still pending:\n x509", Fix: "rewrite the pointer"},
	}}
	require.NoError(t, printVerify(&b, res, ""))
	out := b.String()
	assert.Contains(t, out, "✓  host")
	assert.Contains(t, out, "✗  master-0  ignition-fetch")
	assert.Contains(t, out, "1 of 2 failed:")
	assert.Contains(t, out, "fix: rewrite the pointer")
	assert.False(t, strings.Contains(out, "pending:\n"), "details are one line")
}
