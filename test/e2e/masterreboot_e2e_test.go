//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// masterNode is what `lab kubectl -- get node` says of a master: its
// identity (the Node's uid, the kubelet's boot id) and whether it is Ready.
type masterNode struct {
	UID, BootID string
	Ready       bool
}

func getMasterNode(t *testing.T, l labEnv, name string) (masterNode, result) {
	t.Helper()
	r := run(t, "lab", "kubectl", "-f", l.SpecFile, "--", "--request-timeout=10s", "get", "node", name, "-o", "json")
	var n struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
		Status struct {
			NodeInfo struct {
				BootID string `json:"bootID"`
			} `json:"nodeInfo"`
			Conditions []struct {
				Type, Status string
			} `json:"conditions"`
		} `json:"status"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &n) != nil {
		return masterNode{}, r
	}
	m := masterNode{UID: n.Metadata.UID, BootID: n.Status.NodeInfo.BootID}
	for _, c := range n.Status.Conditions {
		m.Ready = m.Ready || c.Type == "Ready" && c.Status == "True"
	}
	return m, r
}

// csrCount is how many CSRs the cluster has (a kubelet that lost its
// certificate asks for a new one).
func csrCount(t *testing.T, l labEnv) int {
	t.Helper()
	r := mustRun(t, "lab", "kubectl", "-f", l.SpecFile, "--", "--request-timeout=10s", "get", "csr", "-o", "name")
	return len(strings.Fields(r.Stdout))
}

// labNodeState is the node's state in `lab status -o json`.
func labNodeState(t *testing.T, l labEnv, name string) string {
	t.Helper()
	r := mustRun(t, "lab", "status", "-f", l.SpecFile, "-o", "json")
	var st struct {
		Nodes []struct {
			Name, State string
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &st), r.String())
	for _, n := range st.Nodes {
		if n.Name == name {
			return n.State
		}
	}
	return "absent"
}

// rebootMasterAfterHandoff resets master n after the handoff, as a power
// cut would (issue 56), and checks it comes back as an RHCOS master does:
// `lab status` shows it rebooting until it reports again; the kubelet
// stand-in starts the kept etcd and kube-apiserver pods; etcd lists it
// once, as the member it was; and `lab kubectl -- get nodes` shows the
// same Node Ready again, from the new boot, with no new CSR (its kubelet
// certificate was kept). The figures are logged.
func rebootMasterAfterHandoff(t *testing.T, l labEnv, s *spec.Spec, n spec.Node, memberList func() []string) {
	t.Helper()
	member := func(ms []string) []string {
		var mine []string
		for _, m := range ms {
			if strings.Contains(m, " "+n.Name+", ") {
				mine = append(mine, m)
			}
		}
		return mine
	}
	before := member(memberList())
	require.Len(t, before, 1, "%s is an etcd member before the reboot", n.Name)
	node, r := getMasterNode(t, l, n.Name)
	require.True(t, node.Ready, "%s Ready before the reboot:\n%s", n.Name, r)
	csrs := csrCount(t, l)

	reset := time.Now()
	r = mustRun(t, "lab", "reboot", "-f", l.SpecFile, n.Name, "--hard")
	assert.Contains(t, r.Stderr, "reset its VM")
	assert.Equal(t, "rebooting", labNodeState(t, l, n.Name), "a reset writes no report: the lab records it")
	r = run(t, "lab", "reboot", "-f", l.SpecFile, n.Name)
	assert.NotEqual(t, 0, r.Code, "a master has no SSH: no graceful reboot")
	assert.Contains(t, r.Stderr, "--hard")

	// Its next boot reports: lab status shows it running again.
	var reported time.Duration
	for deadline := time.Now().Add(6 * time.Minute); ; time.Sleep(3 * time.Second) {
		if st := labNodeState(t, l, n.Name); st == "running" {
			reported = time.Since(reset)
			break
		}
		require.False(t, time.Now().After(deadline), "%s never reported after its reset", n.Name)
	}
	// Ready again: the same Node, its new boot's kubelet posting.
	var ready time.Duration
	var after masterNode
	for deadline := time.Now().Add(20 * time.Minute); ; time.Sleep(5 * time.Second) {
		after, r = getMasterNode(t, l, n.Name)
		if after.Ready && after.BootID != "" && after.BootID != node.BootID {
			ready = time.Since(reset)
			break
		}
		require.False(t, time.Now().After(deadline), "%s not Ready from a new boot 20 minutes after its reset (boot id %q, was %q):\n%s", n.Name, after.BootID, node.BootID, r)
	}
	assert.Equal(t, node.UID, after.UID, "the same Node object: the master kept its identity")
	assert.Equal(t, csrs, csrCount(t, l), "no new CSR: the kubelet kept its certificate")
	r = mustRun(t, "lab", "kubectl", "-f", l.SpecFile, "--", "get", "nodes")
	t.Logf("after %s's reset: lab kubectl -- get nodes:\n%s", n.Name, r.Stdout)

	// etcd lists it once, as the member it was (same ID).
	var again []string
	for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(3 * time.Second) {
		if again = member(memberList()); len(again) == 1 && !strings.Contains(again[0], "true") {
			break
		}
		require.False(t, time.Now().After(deadline), "etcd does not list %s once as a voter after its reboot: %v", n.Name, again)
	}
	id := strings.TrimSuffix(strings.Fields(again[0])[0], ",")
	assert.Equal(t, strings.TrimSuffix(strings.Fields(before[0])[0], ","), id, "the same member ID: restarted on its data, not added again")
	// Ignition ran on its first boot: the config came from its disk, not
	// from an MCS (after the pivot the only one may be this master's).
	f, err := os.Open(labdir.ConsoleLog(s, n))
	require.NoError(t, err)
	rep, _ := wire.ParseConsole(f)
	f.Close()
	require.NotNil(t, rep)
	fetch := ""
	for _, c := range rep.Checks {
		if c.Name == "ignition-fetch" {
			fetch = c.Detail
		}
	}
	assert.Contains(t, fetch, "not fetched: Ignition ran on this node's first boot", "%s's ignition-fetch check after the reboot", n.Name)
	t.Logf("BENCH rehearsal %s power reset after the handoff: reported again (lab status running) %.0fs, Ready from the new boot %.0fs, etcd member %s",
		n.Name, reported.Seconds(), ready.Seconds(), id)
}
