//go:build integration

package etcd

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/create"
	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/openshiftcrds"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
)

// Once the masters serve the API with their real kube-apiservers, the
// etcd operator stand-in writes EtcdRunningInCluster and
// EtcdBootstrapMemberRemoved into etcds/cluster through it, and stage 14's
// wait-for-ceo stand-in reads the first there: still waiting while there
// are not enough healthy members, done once there are, with the bootstrap
// member still in the list (cluster-etcd-operator waitforceo.go).
func TestEtcdStatusThroughTheRealAPIEndsWaitForCEO(t *testing.T) {
	t.Parallel()
	cp, _ := realControlPlane(t)
	dir := t.TempDir()
	kcPath := cp.EmbeddedKubeconfig(t, dir)
	cfg, err := kube.LoadKubeconfig(kcPath)
	require.NoError(t, err)
	c, err := kube.NewClient(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	crds, err := openshiftcrds.Manifests()
	require.NoError(t, err)
	_, err = create.Create(ctx, c, crds, create.Options{})
	require.NoError(t, err)

	member := func(name, ip string) Member {
		return Member{Name: name, PeerURLs: []string{"https://" + ip + ":2380"}, ClientURLs: []string{"https://" + ip + ":2379"}}
	}
	masters := []Member{member("master-0", "192.168.126.11"), member("master-1", "192.168.126.12"), member("master-2", "192.168.126.13")}
	withBoot := append([]Member{member(BootstrapMemberName, "192.168.126.10")}, masters...)
	var removed bool
	require.Eventually(t, func() bool {
		removed, err = WriteStatus(ctx, c, withBoot, false)
		return err == nil
	}, time.Minute, time.Second, "etcds/cluster is writable once its CRD is established: %v", err)
	assert.False(t, removed)

	w := WaitForCEO{Wait: 3 * time.Second, Poll: 500 * time.Millisecond}
	var out bytes.Buffer
	err = w.Run(kcPath, &out)
	require.Error(t, err, "not enough healthy members yet")
	assert.Contains(t, out.String(), "Still waiting for the cluster-etcd-operator to bootstrap: still waiting for three healthy etcd members; members 4:")

	removed, err = WriteStatus(ctx, c, withBoot, true)
	require.NoError(t, err)
	assert.False(t, removed, "running, the bootstrap member still there")
	out.Reset()
	require.NoError(t, w.Run(kcPath, &out))
	assert.Contains(t, out.String(), "Cluster etcd operator bootstrapped successfully (EnoughEtcdMembers: enough members found; members 4:")
	conds := func() string {
		got, err := cp.Kubectl("get", "etcd", "cluster", "-o", `jsonpath={range .status.conditions[*]}{.type}={.status} {end}`)
		require.NoError(t, err, got)
		return got
	}
	assert.Equal(t, "EtcdRunningInCluster=True EtcdBootstrapMemberRemoved=False ", conds())

	removed, err = WriteStatus(ctx, c, masters, true)
	require.NoError(t, err)
	assert.True(t, removed)
	assert.Equal(t, "EtcdRunningInCluster=True EtcdBootstrapMemberRemoved=True ", conds())
}

// realControlPlane starts the default release's etcd and kube-apiserver
// on loopback (built once into the run's shared cache) and returns them
// with the etcd binary.
func realControlPlane(t *testing.T, apiArgs ...string) (*kubetest.ControlPlane, string) {
	t.Helper()
	rel := kuberelease.Build(t, kuberelease.DefaultMinor)
	return kubetest.StartControlPlane(t, rel.Etcd, rel.Programs, apiArgs...), rel.Etcd
}
