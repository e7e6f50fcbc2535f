//go:build integration

package reportprogress

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/create"
	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/openshiftcrds"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
)

func TestMain(m *testing.M) {
	os.Exit(kubetest.RunWithSharedCache(m))
}

// report-progress.sh through the release's real kube-apiserver: nothing
// before .bootkube.done; then, on a HighlyAvailable control plane, nothing
// until two masters have a current kube-apiserver revision; then
// ConfigMap kube-system/bootstrap with status complete.
func TestReportProgressThroughARealAPI(t *testing.T) {
	t.Parallel()
	rel := kuberelease.Build(t, kuberelease.DefaultMinor)
	cp := kubetest.StartControlPlane(t, rel.Etcd, rel.Programs)
	assets := t.TempDir()
	manifests := filepath.Join(assets, "manifests")
	require.NoError(t, os.MkdirAll(manifests, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "infra.yaml"), []byte("apiVersion: config.openshift.io/v1\nkind: Infrastructure\nmetadata: {name: cluster}\nspec: {}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "kas.yaml"), []byte("apiVersion: operator.openshift.io/v1\nkind: KubeAPIServer\nmetadata: {name: cluster}\nspec: {managementState: Managed}\n"), 0o644))
	crds, err := openshiftcrds.Manifests()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = create.Bootstrap(ctx, create.BootstrapOptions{Kubeconfig: cp.Files["kubeconfig"], ManifestDir: manifests, Extra: crds})
	require.NoError(t, err)
	kubectl := func(args ...string) (string, error) { return cp.Kubectl(args...) }
	out, err := kubectl("patch", "infrastructure", "cluster", "--subresource=status", "--type=merge", "-p", `{"status":{"controlPlaneTopology":"HighlyAvailable"}}`)
	require.NoError(t, err, out)
	require.NoError(t, os.MkdirAll(filepath.Join(assets, "auth"), 0o700))
	kcfg, err := os.ReadFile(cp.Files["kubeconfig"])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(assets, "auth", "kubeconfig"), kcfg, 0o600))

	var log testutil.SyncBuffer
	s := Service{Assets: assets, Poll: 200 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	exists := func() bool {
		_, err := kubectl("get", "configmap", "-n", "kube-system", "bootstrap")
		return err == nil
	}
	kubetest.WaitFor(t, time.Minute, "the wait for .bootkube.done", cp.API, func() (string, bool) {
		return log.String(), strings.Contains(log.String(), "Waiting for bootstrap to complete")
	})
	assert.False(t, exists(), "nothing before .bootkube.done")
	require.NoError(t, os.WriteFile(filepath.Join(assets, ".bootkube.done"), nil, 0o644))
	kubetest.WaitFor(t, time.Minute, "the HA API wait", cp.API, func() (string, bool) {
		return log.String(), strings.Contains(log.String(), "0 master(s) with a current kube-apiserver revision")
	})
	assert.False(t, exists(), "nothing before two masters serve")

	// 4.17's script counts the addresses of the default/kubernetes
	// endpoints instead, which this one kube-apiserver publishes alone.
	var log17 testutil.SyncBuffer
	ctx17, cancel17 := context.WithCancel(ctx)
	s17 := Service{Assets: assets, Poll: 200 * time.Millisecond, Release: "4.17.12", Log: slog.New(slog.NewTextHandler(&log17, nil))}
	done17 := make(chan error, 1)
	go func() { done17 <- s17.Run(ctx17) }()
	kubetest.WaitFor(t, time.Minute, "4.17's endpoints wait", cp.API, func() (string, bool) {
		return log17.String(), strings.Contains(log17.String(), "Got the following addresses for the default/kubernetes endpoint object")
	})
	cancel17()
	assert.ErrorIs(t, <-done17, context.Canceled)
	assert.Contains(t, log17.String(), "Waiting for at least 2 available IP addresses for the default/kubernetes service")
	assert.NotContains(t, log17.String(), "current kube-apiserver revision")
	assert.False(t, exists(), "one kube-apiserver's address is not two")
	out, err = kubectl("patch", "kubeapiserver", "cluster", "--subresource=status", "--type=merge", "-p",
		`{"status":{"nodeStatuses":[{"nodeName":"master-0","currentRevision":1},{"nodeName":"master-1","currentRevision":2}]}}`)
	require.NoError(t, err, out)
	require.NoError(t, <-done, log.String())
	out, err = kubectl("get", "configmap", "-n", "kube-system", "bootstrap", "-o", "jsonpath={.data.status}")
	require.NoError(t, err, out)
	assert.Equal(t, "complete", out)
	assert.Contains(t, log.String(), "progress.service (bootlab stand-in of report-progress.sh): created ConfigMap kube-system/bootstrap")
}
