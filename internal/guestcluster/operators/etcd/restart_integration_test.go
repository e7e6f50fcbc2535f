//go:build integration

package etcd

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
	"github.com/bootlab/bootlab/internal/wire"
)

// A master that booted again with its member's data finds itself in the
// real etcd's member list by name and adds nothing: the member, its ID and
// the count stay as they were. On the leader the teardown goes on where it
// stands (here the bootstrap member is gone already). A member the list
// does not have is never added back: the operator waits and says why.
func TestResumeFindsTheExistingMemberInTheRealEtcd(t *testing.T) {
	rel := kuberelease.Build(t, kuberelease.DefaultMinor)
	e := kubetest.StartEtcd(t, rel.Etcd, "master-0", "10.0.0.11")
	local := Etcdctl{bin: e.Etcdctl, endpoints: []string{e.Endpoint}, api: newEtcdHTTP()}
	before, err := local.Members(t.Context())
	require.NoError(t, err)
	require.Len(t, before, 1)

	var mu sync.Mutex
	var said []string
	var last Progress
	o := &Operator{Log: slog.New(slog.DiscardHandler), Poll: 50 * time.Millisecond, Report: func(p Progress, detail string) {
		mu.Lock()
		defer mu.Unlock()
		last = p
		said = append(said, detail)
	}}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	o.Resume(ctx, wire.NodeExpect{Name: "master-0", IP: "10.0.0.11"}, local, true, &wire.EtcdJoin{BootstrapIP: "10.0.0.10", Masters: 1})
	require.NoError(t, ctx.Err(), "Resume returned on its own: %v", said)
	assert.Equal(t, Joined, last)
	assert.Contains(t, strings.Join(said, "\n"), "master-0 restarted as the member it was")
	assert.Contains(t, said[len(said)-1], "bootstrap teardown: the etcd-bootstrap member is removed", "the leader's teardown finds the bootstrap member gone")
	after, err := local.Members(t.Context())
	require.NoError(t, err)
	require.Len(t, after, 1, "nothing added")
	assert.Equal(t, before[0].ID, after[0].ID, "the same member")

	// A master whose member the list does not have.
	said = nil
	ctx, cancel = context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	o.Resume(ctx, wire.NodeExpect{Name: "master-1", IP: "10.0.0.12"}, local, false, nil)
	mu.Lock()
	assert.Equal(t, Waiting, last)
	require.NotEmpty(t, said)
	assert.Contains(t, said[len(said)-1], "the member list has no master-1")
	assert.Contains(t, said[len(said)-1], "removed from the cluster")
	mu.Unlock()
	after, err = local.Members(t.Context())
	require.NoError(t, err)
	assert.Len(t, after, 1, "a member missing from the list is not added back")
}
