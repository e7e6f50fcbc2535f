//go:build integration

package verify

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// The API checks against the release's real kube-apiserver on loopback,
// read with the admin kubeconfig as lab verify reads a rehearsal lab's:
// /readyz, kube-system/bootstrap as progress.service leaves it after stage
// 15, and the masters' Ready condition as their kubelets report it (no Node
// after stage 14 fails).
func TestAPIChecksOnTheRealAPI(t *testing.T) {
	cp := kuberelease.StartControlPlane(t)
	k, err := cluster.LoadKubeconfig(cp.Files["kubeconfig"])
	require.NoError(t, err)
	api, err := cluster.NewClient(k, "", nil)
	require.NoError(t, err)
	open := func(context.Context) (KubeAPI, KubeAPI, error) { return api, api, nil }
	s := rehearsalSpec(t)
	lbc := loadbalancer.LabConfig(s, false)
	after14 := map[int]bool{13: true, 14: true}

	rs := apiChecks(context.Background(), s, after14, open, lbc)
	assert.Equal(t, check.StatePending, rs[2].State, "the ConfigMap waits for stage 15")
	after14[15] = true
	rs = apiChecks(context.Background(), s, after14, open, lbc)
	assert.Equal(t, check.StatePassed, rs[0].State, rs[0].Detail)
	assert.Equal(t, check.StateFailed, rs[2].State, "no ConfigMap after stage 15 fails")
	assert.Contains(t, rs[2].Detail, `configmaps "bootstrap" not found`)
	assert.Equal(t, check.StateFailed, rs[3].State, "no Node registered after stage 14 fails: never skipped, never passed")
	assert.Contains(t, rs[3].Detail, "no Node registered after stage 14")

	kubectl := func(args ...string) {
		out, err := cp.Kubectl(args...)
		require.NoError(t, err, out)
	}
	kubectl("create", "configmap", "bootstrap", "-n", "kube-system", "--from-literal=status=complete")
	node := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"master-0"}}`
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/node.json", []byte(node), 0o600))
	kubectl("create", "-f", dir+"/node.json")
	rs = apiChecks(context.Background(), s, after14, open, lbc)
	assert.Equal(t, check.StateFailed, rs[3].State, "a registered master that is not Ready fails")
	assert.Equal(t, "not Ready: master-0 (Ready: none)", rs[3].Detail)
	kubectl("patch", "node", "master-0", "--subresource=status", "--type=merge",
		"-p", `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"stand-in"}]}}`)

	rs = apiChecks(context.Background(), s, after14, open, lbc)
	for _, r := range rs {
		assert.Equal(t, check.StatePassed, r.State, "%s: %s", r.Name, r.Detail)
	}
	assert.Contains(t, rs[2].Detail, "status: complete")
	assert.Equal(t, "master-0 Ready", rs[3].Detail)
}
