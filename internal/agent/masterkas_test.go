package agent

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/agent/standin"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/probe"
)

// A master's kube-apiserver revision names the masters' voting members,
// never the bootstrap's (gone at stage 14) nor a learner or an unstarted
// member, and waits until this master's own member votes.
func TestVotingMasters(t *testing.T) {
	t.Parallel()
	m := func(name, ip string, learner bool) standin.Member {
		return standin.Member{Name: name, PeerURLs: []string{"https://" + ip + ":2380"}, ClientURLs: []string{"https://" + ip + ":2379"}, IsLearner: learner}
	}
	boot := m(standin.BootstrapMemberName, "192.168.126.10", false)
	for _, tc := range []struct {
		name    string
		ms      []standin.Member
		servers []string
		ok      bool
	}{
		{"learner", []standin.Member{boot, m("master-0", "192.168.126.11", true)}, nil, false},
		{"unstarted", []standin.Member{boot, m("", "192.168.126.11", false)}, nil, false},
		{"voter", []standin.Member{boot, m("master-0", "192.168.126.11", false), m("master-1", "192.168.126.12", true)},
			[]string{"https://192.168.126.11:2379"}, true},
		{"others vote, not this one", []standin.Member{boot, m("master-1", "192.168.126.12", false)}, []string{"https://192.168.126.12:2379"}, false},
		{"three", []standin.Member{m("master-0", "192.168.126.11", false), m("master-1", "192.168.126.12", false), m("master-2", "192.168.126.13", false)},
			[]string{"https://192.168.126.11:2379", "https://192.168.126.12:2379", "https://192.168.126.13:2379"}, true},
	} {
		servers, ok := votingMasters(tc.ms, "https://192.168.126.11:2380")
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.servers, servers, tc.name)
	}
}

// The masters' kube-apiservers roll out in name order, one at a time, as
// the operator's installer controller does: each master waits for the
// one before it; workers and the bootstrap are not in the order.
func TestMasterBefore(t *testing.T) {
	t.Parallel()
	pc := &probe.Config{Nodes: map[string]probe.NodeExpect{}}
	for _, n := range []probe.NodeExpect{
		{Name: "master-2", Role: probe.RoleMaster, IP: "10.0.0.13"},
		{Name: "bootstrap", Role: probe.RoleBootstrap, IP: "10.0.0.10"},
		{Name: "master-0", Role: probe.RoleMaster, IP: "10.0.0.11"},
		{Name: "worker-0", Role: probe.RoleWorker, IP: "10.0.0.20"},
		{Name: "master-1", Role: probe.RoleMaster, IP: "10.0.0.12"},
	} {
		pc.Nodes[n.Name] = n
	}
	before := func(name string) string {
		p := masterBefore(pc, pc.Nodes[name])
		if p == nil {
			return ""
		}
		return p.Name + "@" + p.IP
	}
	assert.Equal(t, "", before("master-0"))
	assert.Equal(t, "master-0@10.0.0.11", before("master-1"))
	assert.Equal(t, "master-1@10.0.0.12", before("master-2"))
}

// waitTurn goes once the master before serves its own kube-apiserver, not
// while its in-memory API stand-in answers (a node header), and reports
// what it waits for; it gives up waiting after its limit, and stops with
// its context.
func TestWaitTurn(t *testing.T) {
	t.Parallel()
	real := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	defer real.Close()
	standIn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(probe.NodeHeader, "master-0")
		fmt.Fprint(w, "ok")
	}))
	defer standIn.Close()
	starting := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "[+]ping ok\n[-]poststarthook/rbac/bootstrap-roles failed: not finished\n")
	}))
	defer starting.Close()

	agent := func() (*Agent, *testutil.SyncBuffer) {
		out := &testutil.SyncBuffer{}
		return &Agent{log: newLogger(out), rep: newReporter(&Console{w: out})}, out
	}
	a, _ := agent()
	assert.True(t, a.waitTurn(context.Background(), "", "", time.Hour), "the first master goes at once")
	a, out := agent()
	assert.True(t, a.waitTurn(context.Background(), "master-0", real.URL+"/readyz", time.Hour))
	assert.Contains(t, out.String(), "this master's turn")

	for _, tc := range []struct{ name, url, why string }{
		{"stand-in", standIn.URL, "its in-memory API stand-in answers"},
		{"starting", starting.URL, "poststarthook/rbac/bootstrap-roles failed"},
	} {
		a, out = agent()
		assert.True(t, a.waitTurn(context.Background(), "master-0", tc.url+"/readyz", 0), tc.name)
		assert.Contains(t, out.String(), "going without the master before", tc.name)

		a, out = agent()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan bool)
		go func() { done <- a.waitTurn(ctx, "master-0", tc.url+"/readyz", time.Hour) }()
		require.Eventually(t, func() bool {
			return strings.Contains(out.String(), "waiting for master-0's own kube-apiserver")
		}, 10*time.Second, 10*time.Millisecond, tc.name)
		assert.Contains(t, out.String(), tc.why, tc.name)
		cancel()
		assert.False(t, <-done, "%s: it stops with its context", tc.name)
	}
}
