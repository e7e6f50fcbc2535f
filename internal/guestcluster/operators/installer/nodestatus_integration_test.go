//go:build integration

package installer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/create"
	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/openshiftcrds"
	"github.com/bootlab/bootlab/internal/kube"
)

// The installer stand-ins record each master's current revision in its
// operator's nodeStatuses through the real API, as the operators'
// installer controllers do, where cluster-bootstrap's HA gate and
// report-progress.sh read them: three masters at once keep each other's
// entries (a conflict is retried), and a later revision replaces the
// node's own.
func TestRecordRevisionThroughARealAPI(t *testing.T) {
	t.Parallel()
	cp, _ := realControlPlane(t)
	cfg, err := kube.LoadKubeconfig(cp.EmbeddedKubeconfig(t, t.TempDir()))
	require.NoError(t, err)
	c, err := kube.NewClient(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	crds, err := openshiftcrds.Manifests()
	require.NoError(t, err)
	_, err = create.Create(ctx, c, crds, create.Options{})
	require.NoError(t, err)
	// A CRD just created is served a moment later (its Established
	// condition): on a real cluster the operators' CRDs are long served
	// when an installer runs.
	for _, kind := range []string{"kubeapiservers.operator.openshift.io", "kubeschedulers.operator.openshift.io"} {
		require.Eventually(t, func() bool {
			_, err := cp.Kubectl("get", kind)
			return err == nil
		}, time.Minute, 200*time.Millisecond, "%s served", kind)
	}

	var wg sync.WaitGroup
	for _, n := range []string{"master-0", "master-1", "master-2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, RecordRevision(ctx, c, controlplane.KubeAPIServer, n, 1))
		}()
	}
	wg.Wait()
	require.NoError(t, RecordRevision(ctx, c, controlplane.KubeAPIServer, "master-1", 2))
	require.NoError(t, RecordRevision(ctx, c, controlplane.KubeScheduler, "master-0", 1))
	got, err := cp.Kubectl("get", "kubeapiserver", "cluster", "-o", `jsonpath={range .status.nodeStatuses[*]}{.nodeName}={.currentRevision} {end}`)
	require.NoError(t, err, got)
	assert.Contains(t, got, "master-0=1 ")
	assert.Contains(t, got, "master-1=2 ")
	assert.Contains(t, got, "master-2=1 ")
	assert.Len(t, got, len("master-0=1 master-1=2 master-2=1 "), "one entry per node: %s", got)
	got, err = cp.Kubectl("get", "kubescheduler", "cluster", "-o", `jsonpath={.status.nodeStatuses[0].nodeName}={.status.nodeStatuses[0].currentRevision}`)
	require.NoError(t, err, got)
	assert.Equal(t, "master-0=1", got)
}
