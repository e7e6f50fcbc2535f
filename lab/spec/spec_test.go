package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every invalid fixture fails with exactly the message in its .err golden.

const specDir = "../../testdata/specs"

func TestDefaultsDeriveAddressesAndSizes(t *testing.T) {
	t.Parallel()
	s := &Spec{Name: "demo"}
	s.Defaults()
	require.NoError(t, s.Validate())
	assert.Equal(t, ProfileProbe, s.Profile)
	assert.Equal(t, NetworkIsolated, s.Network.Mode)
	assert.Equal(t, "192.168.126.1", s.Network.Gateway)
	assert.Equal(t, Topology{Masters: 3, Workers: 2}, s.Topology)
	want := map[string]string{"bootstrap": "192.168.126.10", "master-0": "192.168.126.11", "master-2": "192.168.126.13", "worker-0": "192.168.126.20", "worker-1": "192.168.126.21"}
	for name, ip := range want {
		n, ok := s.Node(name)
		require.True(t, ok, name)
		assert.Equal(t, ip, n.IP, name)
		assert.Equal(t, 256, n.MemoryMiB, name)
	}
	// Defaults are idempotent: a second pass changes nothing.
	before, _ := s.Marshal()
	s.Defaults()
	after, _ := s.Marshal()
	assert.Equal(t, string(before), string(after))
}

// A rehearsal lab's bootstrap gets 1.5 GiB and its masters 1 GiB, one
// vCPU each (a second did not make the bootstrap's kube-apiserver ready
// sooner under TCG: docs/rehearsal-lab.md), unless the spec says
// otherwise.
func TestDefaultsRehearsalSizes(t *testing.T) {
	t.Parallel()
	s := &Spec{Name: "demo", OpenShift: OpenShift{ManualBootstrap: true}}
	s.Defaults()
	b, _ := s.Node("bootstrap")
	assert.Equal(t, 1, b.VCPUs)
	assert.Equal(t, RehearsalBootstrapMemoryMiB, b.MemoryMiB)
	m, _ := s.Node("master-0")
	assert.Equal(t, 1, m.VCPUs)
	assert.Equal(t, RehearsalMasterMemoryMiB, m.MemoryMiB)

	set := &Spec{Name: "demo", OpenShift: OpenShift{ManualBootstrap: true}, Nodes: []Node{{Name: "bootstrap", Role: RoleBootstrap, VCPUs: 3}}}
	set.Defaults()
	b, _ = set.Node("bootstrap")
	assert.Equal(t, 3, b.VCPUs, "the spec's vCPUs are kept")
	assert.Equal(t, RehearsalBootstrapMemoryMiB, b.MemoryMiB)
}

func TestDefaultsOpenShiftSizes(t *testing.T) {
	t.Parallel()
	s := &Spec{Name: "ocp", OpenShift: OpenShift{PullSecretFile: "/x"}, Topology: Topology{Masters: 3, Workers: 1}}
	s.Defaults()
	assert.Equal(t, ProfileOpenShift, s.Profile)
	assert.Equal(t, NetworkNAT, s.Network.Mode)
	b, _ := s.Node("bootstrap")
	m, _ := s.Node("master-1")
	w, _ := s.Node("worker-0")
	assert.Equal(t, Node{Name: "bootstrap", Role: RoleBootstrap, VCPUs: 4, MemoryMiB: 16384, DiskGiB: 100, MAC: b.MAC, IP: "192.168.126.10"}, b)
	assert.Equal(t, 16384, m.MemoryMiB)
	assert.Equal(t, Node{Name: "worker-0", Role: RoleWorker, VCPUs: 2, MemoryMiB: 8192, DiskGiB: 100, MAC: w.MAC, IP: "192.168.126.20"}, w)
}

func TestDefaultsSkipTakenAddresses(t *testing.T) {
	t.Parallel()
	s := &Spec{Name: "demo", Nodes: []Node{
		{Name: "bootstrap", Role: RoleBootstrap, IP: "192.168.126.11"},
		{Name: "master-0", Role: RoleMaster},
	}}
	s.Defaults()
	require.NoError(t, s.Validate())
	m, _ := s.Node("master-0")
	assert.Equal(t, "192.168.126.12", m.IP)
}

func TestDeriveMACIsStableAndDistinct(t *testing.T) {
	t.Parallel()
	assert.Equal(t, DeriveMAC("a", "master-0"), DeriveMAC("a", "master-0"))
	assert.NotEqual(t, DeriveMAC("a", "master-0"), DeriveMAC("b", "master-0"))
	assert.True(t, strings.HasPrefix(DeriveMAC("a", "x"), "52:54:00:"))
}

func TestValidationErrorListsAtMost20Problems(t *testing.T) {
	t.Parallel()
	var e errs
	for i := 0; i < 27; i++ {
		e.add(fmt.Sprintf("nodes[%d].mac", i), "bad")
	}
	msg := e.err().Error()
	assert.Contains(t, msg, "lab spec: 27 problems:")
	assert.Contains(t, msg, "nodes[19].mac: bad")
	assert.NotContains(t, msg, "nodes[20].mac")
	assert.True(t, strings.HasSuffix(msg, "\n  ... and 7 more"), msg)
}

func TestProbeLabWarnsAboutOpenShiftFieldsItIgnores(t *testing.T) {
	t.Parallel()
	s := &Spec{Name: "p", Profile: ProfileProbe, LabDir: "/tmp/p", OpenShift: OpenShift{OCPath: "/usr/bin/oc", Mirrors: Mirrors{RHCOS: "http://m"}, Version: "4.21.2"}}
	s.Defaults()
	require.NoError(t, s.Validate(), "a version is used by a probe lab's stages; the rest is ignored, not wrong")
	var got []string
	for _, w := range s.Warnings() {
		got = append(got, w.Field)
	}
	assert.Equal(t, []string{"openshift.ocPath", "openshift.mirrors"}, got)
}

func TestStageCheckpointsDefaultOn(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte("name: te\n"), "te.yaml")
	require.NoError(t, err)
	assert.True(t, s.StageCheckpoints(), "stage run checkpoints unless told not to")
	s.Defaults()
	require.NotNil(t, s.Stages.Checkpoints, "lab config prints the default")

	s, err = Parse([]byte("name: te\nstages: {checkpoints: false}\n"), "te.yaml")
	require.NoError(t, err)
	assert.False(t, s.StageCheckpoints())

	old := &Spec{Name: "recorded-before-the-field"}
	assert.True(t, old.StageCheckpoints(), "a lab state written before stages.checkpoints existed")
}
