package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/probe"
)

func TestWriteProbeIgnition(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "p", Profile: spec.ProfileProbe, LabDir: t.TempDir()}
	s.Defaults()
	require.NoError(t, WriteProbeIgnition(s))
	for _, n := range s.Nodes {
		p := labdir.Ignition(s, n)
		fi, err := os.Stat(p)
		require.NoError(t, err, n.Name)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), n.Name)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		cfg, err := ignition.Parse(data)
		require.NoError(t, err, n.Name)
		if n.Role == spec.RoleBootstrap {
			pc := probeConfigOf(t, cfg)
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
	require.NoError(t, WriteProbeIgnition(s))
	ca2, err := os.ReadFile(filepath.Join(s.LabDir, "pki", "root-ca.crt"))
	require.NoError(t, err)
	assert.Equal(t, ca1, ca2, "the lab CA is reused on re-runs")
}

// Ignition written again for the same spec is the same bytes, for a probe
// and a rehearsal lab: `lab up` on a running lab then finds every node's
// plan unchanged and restarts none (a rehearsal bootstrap would lose the
// stages a learner ran). A changed spec still changes what it names.
func TestWriteProbeIgnitionIsStable(t *testing.T) {
	t.Parallel()
	for _, rehearsal := range []bool{false, true} {
		t.Run(fmt.Sprintf("rehearsal=%v", rehearsal), func(t *testing.T) {
			t.Parallel()
			s := &spec.Spec{Name: "p", Profile: spec.ProfileProbe, LabDir: t.TempDir(), Topology: spec.Topology{Masters: 3, Workers: 1}}
			s.OpenShift.ManualBootstrap = rehearsal
			s.Defaults()
			require.NoError(t, EnsureSSHKey(s))
			read := func() map[string][]byte {
				require.NoError(t, WriteProbeIgnition(s))
				out := map[string][]byte{}
				for _, n := range s.Nodes {
					data, err := os.ReadFile(labdir.Ignition(s, n))
					require.NoError(t, err)
					out[n.Name] = data
				}
				return out
			}
			first, second := read(), read()
			for name, data := range first {
				assert.True(t, bytes.Equal(data, second[name]), "%s: Ignition differs when written again", name)
			}
			kept, err := os.ReadDir(filepath.Join(labdir.PKI(s), pki.IssuedDir))
			if !rehearsal && errors.Is(err, os.ErrNotExist) {
				err = nil // a plain probe lab's configs carry only the CA and MCS pair
			}
			require.NoError(t, err)
			for _, e := range kept {
				fi, err := e.Info()
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), e.Name())
			}
			if rehearsal {
				assert.NotEmpty(t, kept, "the rehearsal assets' pairs are kept")
			}
			s.Cluster.Name = "other"
			s.Defaults()
			third := read()
			assert.False(t, bytes.Equal(first["bootstrap"], third["bootstrap"]), "a renamed cluster gets new configs")
		})
	}
}

// The probe agents serve ingress on exactly the nodes haproxy sends 80 and
// 443 to: read back from the configs each pool is served (what an agent
// finds about itself), for every topology the spec accepts.
func TestProbeIngressNodesAreTheLoadBalancers(t *testing.T) {
	t.Parallel()
	for _, topo := range []spec.Topology{{Masters: 1}, {Masters: 3}, {Masters: 3, Workers: 1}, {Masters: 3, Workers: 2}, {Masters: 1, Workers: 1}} {
		t.Run(fmt.Sprintf("1+%d+%d", topo.Masters, topo.Workers), func(t *testing.T) {
			t.Parallel()
			s := &spec.Spec{Name: "p", Profile: spec.ProfileProbe, LabDir: t.TempDir(), Topology: topo}
			s.Defaults()
			p, err := pki.Ensure(filepath.Join(s.LabDir, "pki"), "api-int."+s.Cluster.Domain())
			require.NoError(t, err)
			cfgs, err := probe.Generate(ProbeInput(s, p))
			require.NoError(t, err)
			var serving []string
			seen := 0
			for _, served := range [][]byte{cfgs.Bootstrap, cfgs.MasterServed, cfgs.WorkerServed} {
				cfg, err := ignition.Parse(served)
				require.NoError(t, err)
				pc := probeConfigOf(t, cfg)
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
			for _, fe := range loadbalancer.LabConfig(s, false).Frontends {
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

// Prepare builds from a copy: the spec given keeps what the user wrote,
// the one returned names the boot files, and every node has its Ignition.
func TestPrepareProbeLeavesTheSpecAsGiven(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "p", Profile: spec.ProfileProbe, LabDir: t.TempDir()}
	s.Defaults()
	dir := t.TempDir()
	s.Image.Kernel, s.Image.Initrd = filepath.Join(dir, "vmlinuz"), filepath.Join(dir, "initrd")
	require.NoError(t, os.WriteFile(s.Image.Kernel, []byte("k"), 0o644))
	require.NoError(t, os.WriteFile(s.Image.Initrd, []byte("i"), 0o644))
	before := *s
	built, err := Prepare(context.Background(), s, PrepareOptions{})
	require.NoError(t, err)
	assert.Equal(t, before.Image, s.Image)
	assert.NotSame(t, s, built)
	assert.Equal(t, s.Image.Kernel, built.Image.Kernel, "its own kernel is kept")
	require.NoError(t, CheckBootFiles(built, hypervisor.Full()), "every node got its Ignition")

	reh := *s
	reh.OpenShift.ManualBootstrap = true
	_, err = Prepare(context.Background(), &reh, PrepareOptions{})
	var ve *spec.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "image.rehearsalInitrd", ve.Errs[0].Field)

	other := *s
	other.Profile = "bare"
	_, err = Prepare(context.Background(), &other, PrepareOptions{})
	var np *InputError
	require.ErrorAs(t, err, &np)
	assert.Contains(t, err.Error(), `profile "bare" has no preparer`)
}

// A rehearsal lab whose spec names another service network
// (openshift.serviceNetwork: 172.31.0.0/16) gets it in its bootstrap's
// install-config and Network config, and so in the kube-apiserver's
// --service-cluster-ip-range the render of stage 08 writes from that
// Network config (internal/controlplane, as the render and the stage's
// check read it).
func TestRehearsalIgnitionCarriesTheSpecsServiceNetwork(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "p", Profile: spec.ProfileProbe, LabDir: t.TempDir(), Topology: spec.Topology{Masters: 1, Workers: 1}}
	s.OpenShift.ManualBootstrap = true
	s.OpenShift.ServiceNetwork = []string{"172.31.0.0/16"}
	s.Defaults()
	require.NoError(t, s.Validate())
	require.NoError(t, EnsureSSHKey(s))
	require.NoError(t, WriteProbeIgnition(s))
	bs, ok := s.Node("bootstrap")
	require.True(t, ok)
	data, err := os.ReadFile(labdir.Ignition(s, bs))
	require.NoError(t, err)
	boot, err := ignition.Parse(data)
	require.NoError(t, err)
	read := func(p string) []byte {
		data, ok, err := ignition.FileContents(boot, wire.AssetDir+"/"+p)
		require.NoError(t, err)
		require.True(t, ok, p)
		return data
	}
	assert.Contains(t, string(read("manifests/cluster-config.yaml")), "serviceNetwork:\n      - 172.31.0.0/16", "install-config networking.serviceNetwork")
	n, err := controlplane.ParseNetwork(read(controlplane.NetworkManifest))
	require.NoError(t, err)
	assert.Equal(t, "172.31.0.0/16", n.ServiceCIDR)
	assert.Equal(t, spec.DefaultClusterNetworkCIDR, n.ClusterCIDR, "the pod network the spec left unset is the installer's")
	assert.Contains(t, controlplane.KubeAPIServerArgs(controlplane.Input{ServiceCIDR: n.ServiceCIDR, ClusterCIDR: n.ClusterCIDR}),
		"--service-cluster-ip-range=172.31.0.0/16")
}

// probeConfigOf is the probe config (wire.ConfigPath) an Ignition config
// carries, as the agent reads it.
func probeConfigOf(t *testing.T, cfg types.Config) *wire.Config {
	t.Helper()
	data, ok, err := ignition.FileContents(cfg, wire.ConfigPath)
	require.NoError(t, err)
	require.True(t, ok, "no %s in the Ignition config", wire.ConfigPath)
	var c wire.Config
	require.NoError(t, json.Unmarshal(data, &c))
	return &c
}
