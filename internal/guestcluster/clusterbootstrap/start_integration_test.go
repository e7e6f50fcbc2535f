//go:build integration

package clusterbootstrap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
)

func TestMain(m *testing.M) {
	os.Exit(kubetest.RunWithSharedCache(m))
}

// realControlPlane starts the default release's etcd and kube-apiserver
// on loopback (built once into the run's shared cache) and returns them
// with the etcd binary.
func realControlPlane(t *testing.T, apiArgs ...string) (*kubetest.ControlPlane, string) {
	t.Helper()
	rel := kuberelease.Build(t, kuberelease.DefaultMinor)
	return kubetest.StartControlPlane(t, rel.Etcd, rel.Programs, apiArgs...), rel.Etcd
}

// With a real kube-apiserver, ConfigMap kube-system/bootstrap is created
// through it with status complete, and a second record updates it (the
// etcd operator's teardown reads it from etcd: its own test).
func TestRecordCompleteThroughTheRealAPI(t *testing.T) {
	t.Parallel()
	cp, _ := realControlPlane(t, "--etcd-prefix=kubernetes.io")
	assets := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(assets, "auth"), 0o700))
	kcfg, err := os.ReadFile(cp.Files["kubeconfig"])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(assets, "auth", "kubeconfig-loopback"), kcfg, 0o600))
	ctx := context.Background()
	status := func() string {
		t.Helper()
		out, err := cp.Kubectl("get", "configmap", "bootstrap", "-n", "kube-system", "-o", "jsonpath={.data.status}")
		require.NoError(t, err, out)
		return out
	}

	kubetest.WaitFor(t, time.Minute, "ConfigMap kube-system/bootstrap through the API", cp.API, func() (string, bool) {
		err := recordBootstrapCompleteAPI(ctx, assets)
		return fmt.Sprint(err), err == nil // kube-system may not exist for a moment after readyz
	})
	assert.Equal(t, "complete", status())

	out, err := cp.Kubectl("patch", "configmap", "bootstrap", "-n", "kube-system", "--type=merge", "-p", `{"data":{"status":"progressing"}}`)
	require.NoError(t, err, out)
	assert.Equal(t, "progressing", status())
	require.NoError(t, recordBootstrapCompleteAPI(ctx, assets), "a second record updates it")
	assert.Equal(t, "complete", status())
}
