package docs

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap"
)

// Page 13's "Changes by release" table says what the cluster-bootstrap
// stand-in does per release: each row is held to
// clusterbootstrap.BehaviourFor, so a change of the code cannot leave the
// page behind (and the other way round).
func TestStage13ReleaseTableFollowsTheStandIn(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("stages/13-cb-bootstrap.md")
	require.NoError(t, err)
	rows := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		for _, rel := range []string{"4.16, 4.17", "4.18", "4.19+"} {
			if strings.HasPrefix(l, "| "+rel+" |") {
				rows[rel] = l
			}
		}
	}
	require.Len(t, rows, 3, "page 13 has a row for 4.16/4.17, 4.18 and 4.19+")
	for rel, version := range map[string]string{"4.16, 4.17": "4.17.0", "4.18": "4.18.0", "4.19+": "4.19.0"} {
		b, row := clusterbootstrap.BehaviourFor(version), rows[rel]
		if rel == "4.16, 4.17" {
			b16 := clusterbootstrap.BehaviourFor("4.16.0")
			b16.Branch = b.Branch
			assert.Equal(t, b, b16, "4.16 and 4.17 behave the same")
		}
		switch b.Gate {
		case clusterbootstrap.GateMasterNodes:
			assert.Contains(t, row, "2 master Nodes joined", rel)
		case clusterbootstrap.GateRevisions:
			if rel == "4.18" {
				assert.Contains(t, row, "report a revision on at least 2 nodes", rel)
			}
		}
		if b.MinTearDownDelay > 0 && rel == "4.18" {
			assert.Contains(t, row, "at least "+strings.TrimSuffix(b.MinTearDownDelay.String(), "s")+" s for load balancers", rel)
		}
		if b.MinTearDownDelay == 0 {
			assert.Contains(t, row, "no delay", rel)
		}
		switch {
		case b.HAFrom >= 3:
			assert.Contains(t, row, "at least 3", rel)
			assert.Equal(t, "", b.HAGate(2), "%s: two replicas skip the gate", rel)
		default:
			assert.Contains(t, row, "unless single-node", rel)
		}
		if b.FinishedBeforeTeardown {
			assert.True(t, strings.Contains(row, "sends `bootstrap-finished`, then tears down") || strings.HasSuffix(row, "| as 4.18 |"), rel)
		} else {
			assert.Contains(t, row, "tears down, then sends `bootstrap-finished`", rel)
		}
	}
}
