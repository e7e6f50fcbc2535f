//go:build integration

package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// lb-no-bootstrap-mcs on a real haproxy: the lab's load balancer runs
// with the bootstrap on 22623 until the fault, without it after (and
// still on 6443), and with it again after --undo.
func TestBreakLoadBalancerOnHAProxy(t *testing.T) {
	dir := t.TempDir()
	s := &spec.Spec{Name: "faults", LabDir: filepath.Join(dir, "lab"), Profile: spec.ProfileProbe, Topology: spec.Topology{Masters: 3},
		Network: spec.Network{CIDR: "192.168.126.0/24"}, Storage: spec.Storage{PoolDir: filepath.Join(dir, "pool")}}
	s.OpenShift.ManualBootstrap = true
	s.Defaults()
	// Loopback addresses of this test's own: the lab's ports (6443,
	// 22623, 80, 443) are free there.
	s.Network.APIAddress, s.Network.IngressAddress = "127.88.55.1", "127.88.55.1"
	require.NoError(t, os.MkdirAll(s.LabDir, 0o700))
	ctx := context.Background()
	c := loadbalancer.LabConfig(s, false)
	_, err := loadbalancer.Ensure(ctx, c, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = loadbalancer.Stop(context.Background(), c) })

	// mcs waits until haproxy (the new one, after a reload) answers with
	// the servers of 22623 that ok wants, and returns every frontend's.
	mcs := func(what string, ok func(servers []string) bool) map[string][]string {
		var got map[string][]string
		require.Eventually(t, func() bool {
			st, err := loadbalancer.Inspect(ctx, c)
			if err != nil || !st.Running {
				return false
			}
			got = map[string][]string{}
			for _, b := range st.Backends {
				got[b.Frontend] = append(got[b.Frontend], b.Server)
			}
			return ok(got["machine-config"])
		}, 20*time.Second, 100*time.Millisecond, "%s: haproxy's servers: %v", what, got)
		return got
	}
	hasBootstrap := func(servers []string) bool { return slices.Contains(servers, "bootstrap") }
	mcs("the lab's load balancer", hasBootstrap)

	target := FaultTarget{}
	require.NoError(t, BreakFault(ctx, s, target, FaultLBNoBootstrapMCS, time.Now()))
	got := mcs("after the fault, 22623 lost the bootstrap", func(servers []string) bool { return len(servers) > 0 && !hasBootstrap(servers) })
	assert.ElementsMatch(t, []string{"master-0", "master-1", "master-2"}, got["machine-config"])
	assert.Contains(t, got["api"], "bootstrap", "6443 keeps it")

	undone, err := UndoFault(ctx, s, target, FaultLBNoBootstrapMCS)
	require.NoError(t, err)
	assert.Equal(t, []string{FaultLBNoBootstrapMCS}, undone)
	mcs("--undo puts the bootstrap back on 22623", hasBootstrap)
}
