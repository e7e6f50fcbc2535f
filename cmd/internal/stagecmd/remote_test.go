package stagecmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/sshc/sshctest"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/stages"
)

// A lab on a remote hypervisor: the stage commands reach its bootstrap node
// through the hypervisor host's SSH connection (like ssh -J), never directly.
func TestStageReachesRemoteLabThroughHypervisor(t *testing.T) {
	hyper := sshctest.Start(t)
	node := sshctest.Start(t)
	e := newEnv(t)
	hyperKH := filepath.Join(t.TempDir(), "hyper_known_hosts")
	s := &spec.Spec{Name: "stagetest", LabDir: e.labDir, OpenShift: spec.OpenShift{ManualBootstrap: true, Version: "4.19.10"},
		Network: spec.Network{CIDR: "127.0.0.0/24"},
		Libvirt: spec.Libvirt{URI: hyper.LibvirtURI(t, hyperKH)}}
	s.Defaults()
	for i := range s.Nodes {
		if s.Nodes[i].Role == spec.RoleBootstrap {
			s.Nodes[i].IP = node.Host
		}
	}
	key, err := os.ReadFile(node.KeyFile)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(labdir.SSHKey(s)), 0o700))
	require.NoError(t, os.WriteFile(labdir.SSHKey(s), key, 0o600))
	require.NoError(t, (&labdir.State{Spec: s}).Save(s.LabDir))

	cmd := NewCmdStatus(e.f, nil)
	require.NoError(t, execute(cmd, "--lab-dir", e.labDir, "--name", "stagetest", "--user", "root", "--port", strconv.Itoa(node.Port), "-o", "json"), e.err.String())
	var st stages.Status
	require.NoError(t, json.Unmarshal(e.out.Bytes(), &st), e.out.String())
	assert.Equal(t, "root@"+node.Addr, st.Node)
	assert.Len(t, st.Stages, 15)
	assert.Equal(t, []string{"tcp " + node.Addr}, hyper.Dials(), "the node was dialled from the hypervisor host")
	assert.Empty(t, hyper.Commands(), "nothing ran on the hypervisor")
	assert.NotEmpty(t, node.Commands())
	kh, err := os.ReadFile(labdir.KnownHosts(s))
	require.NoError(t, err)
	assert.Contains(t, string(kh), "127.0.0.1", "the node's key is in the lab's known_hosts")
}
