//go:build integration

package etcd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
)

// A master reads the member list through the first endpoint that answers
// (its own member refuses before it runs): the real etcd's members with
// the leader marked, a learner as a learner; with none answering, the
// error names each endpoint's failure. The health and the key the
// stand-ins poll are read from the same etcd.
func TestReadMembersFromTheRealEtcd(t *testing.T) {
	rel := kuberelease.Build(t, kuberelease.DefaultMinor)
	e := kubetest.StartEtcd(t, rel.Etcd, "etcd-bootstrap", "127.0.0.1")
	dead := Etcdctl{bin: e.Etcdctl, endpoints: []string{"http://127.0.0.1:" + kubetest.FreePort(t)}}
	live := Etcdctl{bin: e.Etcdctl, endpoints: []string{e.Endpoint}}

	got := ReadMembers(t.Context(), dead, live)
	assert.Empty(t, got.Error)
	assert.Equal(t, e.Endpoint, got.Endpoint)
	require.Len(t, got.Members, 1)
	assert.Equal(t, "etcd-bootstrap", got.Members[0].Name)
	assert.True(t, got.Members[0].Leader, "a one-member cluster's member leads")
	assert.False(t, got.Members[0].Learner)

	_, err := e.Ctl("member", "add", "master-0", "--learner", "--peer-urls=https://10.0.0.11:2380")
	require.NoError(t, err)
	got = ReadMembers(t.Context(), live)
	require.Len(t, got.Members, 2)
	assert.True(t, got.Members[1].Learner)
	assert.False(t, got.Members[1].Leader)
	assert.Equal(t, "10.0.0.11", got.Members[1].Host())

	ok, why := live.healthy(t.Context(), live.endpoints)
	assert.True(t, ok, "a member with a leader answers /health: %s", why)
	ok, why = live.healthy(t.Context(), append(live.endpoints, dead.endpoints...))
	assert.False(t, ok, "every endpoint must answer")
	assert.Contains(t, why, dead.endpoints[0])

	// The serializable read the teardown controller polls: nil while the
	// key is absent, the value once etcdctl put wrote it.
	v, err := live.rangeSerializable(t.Context(), bootstrapConfigMapKey)
	require.NoError(t, err)
	assert.Nil(t, v)
	_, err = live.run(t.Context(), "put", bootstrapConfigMapKey, "value")
	require.NoError(t, err)
	v, err = live.rangeSerializable(t.Context(), bootstrapConfigMapKey)
	require.NoError(t, err)
	assert.Equal(t, "value", string(v))

	got = ReadMembers(t.Context(), dead)
	assert.Empty(t, got.Members)
	assert.Contains(t, got.Error, "etcd member list: "+dead.endpoints[0])
	assert.False(t, got.Time.IsZero())
}
