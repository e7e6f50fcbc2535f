//go:build e2e

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/procstat"
)

type lbStatus struct {
	LoadBalancer *struct {
		Running  bool `json:"running"`
		PID      int  `json:"pid"`
		Backends []struct {
			Frontend, Server, Address, Status string
		} `json:"backends"`
	} `json:"loadBalancer"`
}

func labLB(t *testing.T, spec string) lbStatus {
	t.Helper()
	r := mustRun(t, "lab", "status", "-f", spec, "-o", "json")
	var st lbStatus
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &st), r.Stdout)
	require.NotNil(t, st.LoadBalancer, "lab status shows no load balancer:\n%s", r.Stdout)
	return st
}

func servers(st lbStatus, frontend string) []string {
	var out []string
	for _, b := range st.LoadBalancer.Backends {
		if b.Frontend == frontend {
			out = append(out, b.Server)
		}
	}
	return out
}

func procAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	st, err := procstat.Parse(data)
	return err == nil && !st.Gone()
}

// Preflight passes on the CI host, the lab's haproxy runs on the API
// address with the bootstrap and masters behind 6443/22623, pivot takes the
// bootstrap out (once: the second pivot changes nothing), and down leaves
// no haproxy behind.
func TestLoadBalancerPreflightPivot(t *testing.T) {
	parallel(t)
	l := newLabWith(t, "topology:\n  masters: 3\n  workers: 0\n")

	pf := run(t, "lab", "preflight", "-f", l.SpecFile, "-o", "json")
	require.Equal(t, 0, pf.Code, "preflight failed on the CI host:\n%s", pf)
	var report struct {
		Accelerator string `json:"accelerator"`
		Checks      []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
	}
	require.NoError(t, json.Unmarshal([]byte(pf.Stdout), &report))
	assert.Equal(t, "tcg", report.Accelerator)
	assert.GreaterOrEqual(t, len(report.Checks), 9)

	mustRun(t, "lab", "up", "-f", l.SpecFile)
	before := labLB(t, l.SpecFile)
	require.True(t, before.LoadBalancer.Running)
	assert.Equal(t, []string{"bootstrap", "master-0", "master-1", "master-2"}, servers(before, "api"))
	assert.Equal(t, []string{"bootstrap", "master-0", "master-1", "master-2"}, servers(before, "machine-config"))
	assert.Equal(t, []string{"master-0", "master-1", "master-2"}, servers(before, "ingress-https"), "compact lab: ingress on the masters")

	// The stats endpoint listens on the lab's API address (the bridge gateway).
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + l.Gateway() + ":9000/stats;csv")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "api,bootstrap,")

	r := mustRun(t, "lab", "pivot", "-f", l.SpecFile, "-o", "json")
	var pv struct {
		Changed bool `json:"changed"`
		Before  []struct{ Frontend, Server string }
		After   []struct{ Frontend, Server string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &pv), r.Stdout)
	assert.True(t, pv.Changed)
	after := labLB(t, l.SpecFile)
	assert.Equal(t, []string{"master-0", "master-1", "master-2"}, servers(after, "api"))
	assert.Equal(t, []string{"master-0", "master-1", "master-2"}, servers(after, "machine-config"))
	assert.NotEqual(t, before.LoadBalancer.PID, after.LoadBalancer.PID, "haproxy was reloaded")

	r = mustRun(t, "lab", "pivot", "-f", l.SpecFile, "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &pv), r.Stdout)
	assert.False(t, pv.Changed, "a second pivot changes nothing")
	assert.Equal(t, after.LoadBalancer.PID, labLB(t, l.SpecFile).LoadBalancer.PID)

	// A second up keeps the bootstrap out (the state remembers the pivot).
	mustRun(t, "lab", "up", "-f", l.SpecFile)
	assert.Equal(t, []string{"master-0", "master-1", "master-2"}, servers(labLB(t, l.SpecFile), "api"))

	pid := labLB(t, l.SpecFile).LoadBalancer.PID
	labDown(t, l.LabDir, "-f", l.SpecFile)
	assert.False(t, procAlive(pid), "haproxy pid %d survived lab down", pid)
	assert.Empty(t, leftovers(t, l))
}
