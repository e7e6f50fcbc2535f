//go:build integration

package dashboard

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// The etcd card of a lab from a real etcd, as the bootstrap's and a
// master's agents read it into their console reports: the bootstrap's
// member alone and leading (stage 07, from the bootstrap's report before
// any master has one), then a master added as a learner, each on its node; the
// freshest list that was read wins over a master's failed read.
func TestEtcdMembersFromTheMastersReports(t *testing.T) {
	rel := kuberelease.Build(t, "4.19")
	home, hv := fixtureHome(t, 1)
	st, err := labdir.LoadState(filepath.Join(home, "labs", "ux1"))
	require.NoError(t, err)
	s := st.Spec
	node := func(name string) spec.Node {
		n, ok := s.Node(name)
		require.True(t, ok, name)
		return n
	}
	e := kubetest.StartEtcd(t, rel.Etcd, "etcd-bootstrap", node("bootstrap").IP)
	report := func(n spec.Node, m wire.EtcdMembers) {
		p := labdir.ConsoleLog(s, n)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		rep := wire.Report{Node: n.Name, Role: string(n.Role), Seq: 1, Boot: time.Now(), Etcd: &m}
		require.NoError(t, os.WriteFile(p, append([]byte("[    1.0] kernel line\n"), rep.Line()...), 0o600))
	}
	// A master's agent asks the member it reaches for the member list and
	// its status (etcd's v3 JSON API); this is the same pair against the
	// real etcd.
	read := func() wire.EtcdMembers {
		list, err := e.API("/v3/cluster/member/list", `{"linearizable":true}`)
		require.NoError(t, err)
		status, err := e.API("/v3/maintenance/status", `{}`)
		require.NoError(t, err)
		ms, err := wire.ParseEtcdMembers([]byte(list), []byte(status))
		require.NoError(t, err)
		return wire.EtcdMembers{Endpoint: e.Endpoint, Time: time.Now().UTC(), Members: ms}
	}
	view := func() EtcdView {
		v, body := labView(t, home, connector(hv), "ux1")
		require.NotNil(t, v.Etcd, body)
		return *v.Etcd
	}
	states := func(v EtcdView) map[string]string {
		out := map[string]string{}
		for _, m := range v.Members {
			out[m.Node] = m.State
		}
		return out
	}

	// Stage 07 run, stage 12 not: the masters have no config and report
	// nothing; the bootstrap reports its own member.
	report(node("bootstrap"), read())
	v := view()
	assert.Equal(t, "bootstrap", v.From, "the bootstrap's report, before any master's")
	require.Len(t, v.Members, 1)
	assert.Equal(t, map[string]string{"bootstrap": EtcdLeader}, states(v))

	report(node("master-1"), wire.EtcdMembers{Endpoint: "https://" + node("master-1").IP + ":2379", Time: time.Now().UTC(),
		Members: []wire.EtcdMember{}, Error: "etcd member list: context deadline exceeded"})
	report(node("master-0"), read())
	v = view()
	assert.Equal(t, "master-0", v.From, "a list that was read wins over a failed read, however recent")
	assert.Empty(t, v.Error)
	require.Len(t, v.Members, 1, "stage 07: the bootstrap's member alone")
	assert.Equal(t, "etcd-bootstrap", v.Members[0].Name)
	assert.Equal(t, map[string]string{"bootstrap": EtcdLeader}, states(v))

	_, err = e.Ctl("member", "add", "master-0", "--learner", "--peer-urls=https://"+node("master-0").IP+":2380")
	require.NoError(t, err)
	report(node("master-0"), read())
	v = view()
	require.Len(t, v.Members, 2, "the master joins as a learner")
	assert.Equal(t, map[string]string{"bootstrap": EtcdLeader, "master-0": EtcdLearner}, states(v))
	assert.Equal(t, "", v.Members[1].Name, "a learner not started yet has no name")
}
