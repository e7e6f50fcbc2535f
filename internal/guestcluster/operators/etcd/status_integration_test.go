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
// etcd operator stand-in writes EtcdBootstrapMemberRemoved into
// etcds/cluster through it, and stage 14's wait-for-ceo stand-in reads it
// there: still waiting while the bootstrap member is in the list, done
// once it is removed.
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
	var removed bool
	require.Eventually(t, func() bool {
		removed, err = WriteStatus(ctx, c, append([]Member{member(BootstrapMemberName, "192.168.126.10")}, masters...))
		return err == nil
	}, time.Minute, time.Second, "etcds/cluster is writable once its CRD is established: %v", err)
	assert.False(t, removed)

	w := WaitForCEO{Wait: 3 * time.Second, Poll: 500 * time.Millisecond}
	var out bytes.Buffer
	err = w.Run(kcPath, &out)
	require.Error(t, err, "the bootstrap member is still there")
	assert.Contains(t, out.String(), "Still waiting for the cluster-etcd-operator to bootstrap: still waiting for the bootstrap teardown; members 4:")

	removed, err = WriteStatus(ctx, c, masters)
	require.NoError(t, err)
	assert.True(t, removed)
	out.Reset()
	require.NoError(t, w.Run(kcPath, &out))
	assert.Contains(t, out.String(), "Cluster etcd operator bootstrapped successfully (etcd bootstrap member is removed; members 3:")
	got, err := cp.Kubectl("get", "etcd", "cluster", "-o", "jsonpath={.status.conditions[0].type}={.status.conditions[0].status}")
	require.NoError(t, err, got)
	assert.Equal(t, "EtcdBootstrapMemberRemoved=True", got)
}

// realControlPlane starts the default release's etcd and kube-apiserver
// on loopback (built once into the run's shared cache) and returns them
// with the etcd binary.
func realControlPlane(t *testing.T, apiArgs ...string) (*kubetest.ControlPlane, string) {
	t.Helper()
	rel := kuberelease.Build(t, kuberelease.DefaultMinor)
	return kubetest.StartControlPlane(t, rel.Etcd, rel.Programs, apiArgs...), rel.Etcd
}
