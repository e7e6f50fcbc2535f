//go:build integration

package etcd

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil/kubetest"
)

// ConfigMap kube-system/bootstrap as a real kube-apiserver stores it (with
// OpenShift's etcd prefix, so at the key the teardown reads, in protobuf):
// the teardown's reader sees its status, complete or not.
func TestTeardownReadsTheBootstrapConfigMapTheRealAPIStores(t *testing.T) {
	t.Parallel()
	cp, etcdPath := realControlPlane(t, "--etcd-prefix=kubernetes.io")
	ctx := context.Background()
	etcdctl := Etcdctl{bin: filepath.Join(kubetest.Links(t, etcdPath, []string{"etcdctl"}), "etcdctl"),
		endpoints: []string{"http://127.0.0.1:" + cp.EtcdPort}}

	done, why := etcdctl.bootstrapComplete(ctx)
	assert.False(t, done)
	assert.Contains(t, why, "bootstrap is not yet complete")

	kubetest.WaitFor(t, time.Minute, "ConfigMap kube-system/bootstrap through the API", cp.API, func() (string, bool) {
		out, err := cp.Kubectl("create", "configmap", "bootstrap", "-n", "kube-system", "--from-literal=status=complete")
		return out, err == nil // kube-system may not exist for a moment after readyz
	})
	raw, err := etcdctl.run(ctx, "get", bootstrapConfigMapKey, "-w", "json")
	require.NoError(t, err)
	value, err := etcdValue(raw)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(value, []byte(protobufMagic)), "kube-apiserver stores it in protobuf")
	done, why = etcdctl.bootstrapComplete(ctx)
	assert.True(t, done, why)

	out, err := cp.Kubectl("patch", "configmap", "bootstrap", "-n", "kube-system", "--type=merge", "-p", `{"data":{"status":"progressing"}}`)
	require.NoError(t, err, out)
	done, why = etcdctl.bootstrapComplete(ctx)
	assert.False(t, done)
	assert.Contains(t, why, "no status complete")
	out, err = cp.Kubectl("patch", "configmap", "bootstrap", "-n", "kube-system", "--type=merge", "-p", `{"data":{"status":"complete"}}`)
	require.NoError(t, err, out)
	done, why = etcdctl.bootstrapComplete(ctx)
	assert.True(t, done, why)
}
