package probe

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/internal/wire"
)

const domain = "ocp.lab.local"

func testInput(t *testing.T) Input {
	t.Helper()
	p, err := pki.Ensure(t.TempDir(), "api-int."+domain)
	require.NoError(t, err)
	return Input{
		ClusterDomain: domain, APIAddress: "192.168.126.1", IngressAddress: "192.168.126.1",
		Nodes: []wire.NodeExpect{
			{Name: "bootstrap", FQDN: "bootstrap." + domain, Role: wire.RoleBootstrap, IP: "192.168.126.10", MAC: "52:54:00:00:00:0A"},
			{Name: "master-0", FQDN: "master-0." + domain, Role: wire.RoleMaster, IP: "192.168.126.11", MAC: "52:54:00:00:00:0b"},
			{Name: "worker-0", FQDN: "worker-0." + domain, Role: wire.RoleWorker, IP: "192.168.126.20", MAC: "52:54:00:00:00:14"},
		},
		PKI: *p,
	}
}

// TestGeneratedConfigsPassIgnitionValidate runs Ignition's own validate
// tool on every generated config.
func TestGeneratedConfigsPassIgnitionValidate(t *testing.T) {
	t.Parallel()
	cfgs, err := Generate(testInput(t))
	require.NoError(t, err)
	dir := t.TempDir()
	for name, data := range map[string][]byte{"bootstrap": cfgs.Bootstrap, "master": cfgs.Master, "worker": cfgs.Worker, "master-served": cfgs.MasterServed, "worker-served": cfgs.WorkerServed} {
		p := filepath.Join(dir, name+".ign")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		testutil.IgnitionValidate(t, p)
	}
}
