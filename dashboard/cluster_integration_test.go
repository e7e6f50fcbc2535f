//go:build integration

package dashboard

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/labdir"
)

// The cluster card of a lab read through the release's real kube-apiserver
// on loopback, with the kubeconfig `lab kubeconfig` writes: each Node with
// its static (mirror) pods first, and the CSRs nobody approved yet.
func TestClusterViewFromTheRealAPI(t *testing.T) {
	cp := kuberelease.StartControlPlane(t)
	dir := t.TempDir()
	apply := func(name string, obj any) {
		data, err := json.Marshal(obj)
		require.NoError(t, err)
		p := filepath.Join(dir, name+".json")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		out, err := cp.Kubectl("create", "-f", p)
		require.NoError(t, err, out)
	}
	kubectl := func(args ...string) {
		out, err := cp.Kubectl(args...)
		require.NoError(t, err, out)
	}
	apply("node", map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "master-0"}})
	kubectl("patch", "node", "master-0", "--subresource=status", "--type=merge",
		"-p", `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"stand-in"}]}}`)
	kubectl("create", "namespace", "openshift-etcd")
	pod := func(ns, name string, mirror bool) map[string]any {
		meta := map[string]any{"name": name, "namespace": ns}
		if mirror {
			meta["annotations"] = map[string]any{mirrorAnnotation: "0123abcd"}
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": map[string]any{
			"nodeName": "master-0", "automountServiceAccountToken": false,
			"containers": []any{map[string]any{"name": "c", "image": "registry.invalid/x"}}}}
	}
	apply("etcd", pod("openshift-etcd", "etcd-master-0", true))
	kubectl("create", "serviceaccount", "default", "-n", "default") // no controller manager makes it here
	apply("app", pod("default", "app", false))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:master-1", Organization: []string{"system:nodes"}}}, key)
	require.NoError(t, err)
	apply("csr", map[string]any{"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
		"metadata": map[string]any{"name": "csr-master-1"},
		"spec": map[string]any{"request": base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})),
			"signerName": "kubernetes.io/kube-apiserver-client-kubelet", "usages": []string{"digital signature", "client auth"}}})

	home, hv := fixtureHome(t, 1)
	s, err := labdir.LoadState(filepath.Join(home, "labs", "ux1"))
	require.NoError(t, err)
	k, err := cluster.LoadKubeconfig(cp.Files["kubeconfig"])
	require.NoError(t, err)
	data, err := k.Render("bootlab-ux1", cluster.Endpoint{Server: k.Server})
	require.NoError(t, err)
	require.NoError(t, cluster.WriteKubeconfig(labdir.Kubeconfig(s.Spec), data))

	v, body := labView(t, home, connector(hv), "ux1")
	require.NotNil(t, v.Cluster, body)
	assert.Empty(t, v.Cluster.Error)
	require.Len(t, v.Cluster.Nodes, 1)
	n := v.Cluster.Nodes[0]
	assert.Equal(t, "master-0", n.Name)
	assert.True(t, n.Ready)
	assert.Equal(t, []PodView{{Namespace: "openshift-etcd", Name: "etcd-master-0", Phase: "Pending", Static: true},
		{Namespace: "default", Name: "app", Phase: "Pending"}}, n.Pods, "the static pod first")
	assert.Equal(t, []CSRView{{Name: "csr-master-1", Requestor: "admin", Signer: "kubernetes.io/kube-apiserver-client-kubelet"}}, v.Cluster.PendingCSRs)
	assert.Equal(t, ServingView{API: []string{}, MCS: []string{}}, v.Serving, "haproxy not running: nobody serves")

	kubectl("certificate", "approve", "csr-master-1")
	view := readCluster(t.Context(), labdir.Kubeconfig(s.Spec), s.Spec)
	assert.Empty(t, view.PendingCSRs, "an approved CSR is not pending")
	for _, sec := range secrets {
		assert.NotContains(t, body, sec)
	}
}
