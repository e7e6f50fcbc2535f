package openshift

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/spec"
)

const testdata = "../../testdata/openshift"

func testSpec(t *testing.T, workers int) *spec.Spec {
	t.Helper()
	s := &spec.Spec{
		Name:     "golden",
		Profile:  spec.ProfileOpenShift,
		Topology: spec.Topology{Masters: 3, Workers: workers},
		Network:  spec.Network{CIDR: "192.168.126.0/24"},
		LabDir:   t.TempDir(),
	}
	if workers == 0 {
		s.Topology.Workers = 0
		s.Nodes = []spec.Node{{Name: "bootstrap", Role: spec.RoleBootstrap}, {Name: "master-0", Role: spec.RoleMaster}, {Name: "master-1", Role: spec.RoleMaster}, {Name: "master-2", Role: spec.RoleMaster}}
	}
	s.OpenShift.PullSecretFile = "unused"
	s.Defaults()
	return s
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join(testdata, name), got)
}

func TestInstallConfigGolden(t *testing.T) {
	t.Parallel()
	const ps = `{"auths":{"quay.io":{"auth":"c3R1ZGVudDpzM2NyM3Q="}}}`
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGoldenGoldenGoldenGoldenGoldenGoldenGolden bootlab-golden"
	for name, workers := range map[string]int{"install-config-3m2w.golden.yaml": 2, "install-config-compact.golden.yaml": 0} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := testSpec(t, workers)
			ic, err := NewInstallConfig(s, ps, key)
			require.NoError(t, err)
			assert.Equal(t, 3, ic.ControlPlane.Replicas)
			assert.Equal(t, 0, ic.Compute[0].Replicas, "UPI: the user boots workers, the installer makes none")
			data, err := ic.Marshal()
			require.NoError(t, err)
			golden(t, name, data)
		})
	}
}

func TestInstallConfigMachineNetworkIsLabCIDR(t *testing.T) {
	t.Parallel()
	s := testSpec(t, 1)
	s.Network.CIDR = "10.77.3.0/24"
	ic, err := NewInstallConfig(s, "{}", "ssh-ed25519 AAAA x")
	require.NoError(t, err)
	assert.Equal(t, "10.77.3.0/24", ic.Networking.MachineNetwork[0].CIDR)
}

func TestLoadSSHPublicKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k, err := LoadSSHPublicKey(writeFile(t, dir, "id.pub", "ssh-ed25519 AAAAC3Nza bootlab\n"))
	require.NoError(t, err)
	assert.Equal(t, "ssh-ed25519 AAAAC3Nza bootlab", k)
	_, err = LoadSSHPublicKey(writeFile(t, dir, "id", "-----BEGIN OPENSSH PRIVATE KEY-----\n"))
	assert.ErrorContains(t, err, "not an OpenSSH public key")
	_, err = LoadSSHPublicKey(filepath.Join(dir, "none.pub"))
	assert.ErrorContains(t, err, "openshift.sshPublicKeyFile")
}
