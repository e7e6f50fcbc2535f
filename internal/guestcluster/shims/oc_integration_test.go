//go:build integration

package shims

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/create"
	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/openshiftcrds"
	"github.com/bootlab/bootlab/internal/kube"
)

// Stage 14's `oc patch clusterversion`, as the script sends it (a
// kubeconfig with the CA and a client certificate, a merge patch from a
// file), through the release's real kube-apiserver: the patch is applied
// and read back; a kubeconfig whose CA did not sign the API's certificate
// is refused.
func TestOcPatchClusterVersionThroughTheRealAPI(t *testing.T) {
	t.Parallel()
	cp, _ := realControlPlane(t)
	dir := t.TempDir()
	kubeconfig := cp.EmbeddedKubeconfig(t, dir)
	cfg, err := kube.LoadKubeconfig(kubeconfig)
	require.NoError(t, err)
	c, err := kube.NewClient(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	crds, err := openshiftcrds.Manifests()
	require.NoError(t, err)
	_, err = create.Create(ctx, c, crds, create.Options{})
	require.NoError(t, err)
	cv := map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": map[string]any{"name": "version"},
		"spec": map[string]any{"clusterID": "5e2e1e7e-0000-4000-8000-000000000000", "overrides": []any{map[string]any{"kind": "Deployment", "group": "apps", "name": "x", "namespace": "y", "unmanaged": true}}}}
	require.Eventually(t, func() bool {
		err = c.Do(ctx, "POST", "/apis/config.openshift.io/v1/clusterversions", cv, nil)
		return err == nil
	}, time.Minute, time.Second, "clusterversions is served once its CRD is established: %v", err)

	patch := filepath.Join(dir, "original_cvo_overrides.patch")
	require.NoError(t, os.WriteFile(patch, []byte(`{"spec":{"overrides":null,"channel":"stable-4.19"}}`), 0o600))
	var out, errb bytes.Buffer
	code := New().OcMain([]string{"patch", "clusterversion.config.openshift.io", "version", "--kubeconfig=" + kubeconfig, "--type=merge", "--patch-file=" + patch}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	assert.Equal(t, "clusterversion.config.openshift.io/version patched\n", out.String())
	got, err := cp.Kubectl("get", "clusterversion", "version", "-o", "jsonpath={.spec.channel}/{.spec.overrides}")
	require.NoError(t, err, got)
	assert.Equal(t, "stable-4.19/", got, "the merge patch is applied")

	// A kubeconfig whose CA did not sign the API's certificate is refused:
	// the client CA's, not the self-signed serving certificate's.
	bad := bytes.Replace(mustRead(t, kubeconfig), []byte(b64File(t, filepath.Join(filepath.Dir(cp.Files["admin.crt"]), "serving", "apiserver.crt"))), []byte(b64File(t, cp.Files["ca.crt"])), 1)
	require.NoError(t, os.WriteFile(kubeconfig, bad, 0o600))
	errb.Reset()
	assert.Equal(t, 1, New().OcMain([]string{"patch", "clusterversion", "version", "--kubeconfig", kubeconfig, "--type=merge", "--patch={}"}, &out, &errb))
	assert.Contains(t, errb.String(), "certificate")
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

func b64File(t *testing.T, p string) string {
	t.Helper()
	return base64.StdEncoding.EncodeToString(mustRead(t, p))
}
