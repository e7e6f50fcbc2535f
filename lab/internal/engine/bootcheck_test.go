package engine

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/labdir"
)

// CheckBootFiles and ReadBootFiles walk the same list: what one finds
// missing the other cannot read, and a complete lab passes both.
func TestCheckBootFilesNamesTheNodeOrField(t *testing.T) {
	t.Parallel()
	s := bootSpec(t)
	require.NoError(t, CheckBootFiles(s, hypervisor.Full()))
	boot, err := ReadBootFiles(s)
	require.NoError(t, err)
	assert.Len(t, boot.Ignition, len(s.Nodes))

	n := s.Nodes[1]
	require.NoError(t, os.Remove(labdir.Ignition(s, n)))
	err = CheckBootFiles(s, hypervisor.Full())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node "+n.Name+" has no Ignition at "+labdir.Ignition(s, n))
	boot, err = ReadBootFiles(s)
	require.NoError(t, err, "a node without Ignition gets none when reading")
	assert.NotContains(t, boot.Ignition, n.Name)

	assert.NoError(t, CheckBootFiles(s, hypervisor.Capabilities{}), "the test driver boots nothing")

	require.NoError(t, os.Remove(s.Image.Initrd))
	for _, err := range []error{CheckBootFiles(s, hypervisor.Full()), func() error { _, err := ReadBootFiles(s); return err }()} {
		require.Error(t, err)
		assert.Contains(t, err.Error(), "image.initrd")
	}
}

// A rehearsal lab boots its bootstrap and masters with the Kubernetes
// volume or not at all: nothing plays the kube-apiserver without it.
func TestCheckBootFilesRefusesARehearsalLabWithoutItsKubernetesVolume(t *testing.T) {
	t.Parallel()
	s := bootSpec(t)
	s.OpenShift.ManualBootstrap = true
	require.True(t, s.Rehearsal())
	s.Image.KubeVolume = ""
	err := CheckBootFiles(s, hypervisor.Full())
	require.ErrorIs(t, err, errNoKubeVolume)
	assert.Contains(t, err.Error(), "image.kubeVolume is empty")
	assert.Contains(t, err.Error(), "bootlab lab up --manual-bootstrap")
	assert.NoError(t, CheckBootFiles(s, hypervisor.Capabilities{}), "the test driver boots nothing")
}
