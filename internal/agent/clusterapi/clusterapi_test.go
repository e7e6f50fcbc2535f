package clusterapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/agent/standin"
	"github.com/bootlab/bootlab/internal/pki"
)

// Stage 14's two calls against the masters' API stand-in: `oc patch
// clusterversion` as the script sends it (kubeconfig with the lab CA and
// a client certificate, merge patch from a file) is applied, and
// wait-for-ceo waits until the member list has no etcd-bootstrap.
func TestStage14AgainstTheMastersAPI(t *testing.T) {
	t.Parallel()
	ca, err := pki.NewCA("root-ca")
	require.NoError(t, err)
	serving, err := pki.NewLeaf(ca, "api", nil, []string{"api-int.ocp.lab.local"}, []net.IP{net.ParseIP("127.0.0.1")})
	require.NoError(t, err)
	client, err := pki.NewClient(ca, "system:admin", []string{"system:masters"})
	require.NoError(t, err)

	var mu sync.Mutex
	members := []standin.Member{{ID: 1, Name: "etcd-bootstrap"}, {ID: 2, Name: "master-0"}}
	api := New("master-0", func(context.Context) ([]standin.Member, error) {
		mu.Lock()
		defer mu.Unlock()
		return append([]standin.Member(nil), members...), nil
	})
	srv := httptest.NewUnstartedServer(api)
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	require.NoError(t, err)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	kc, err := probeKubeconfig(srv.URL, ca, client)
	require.NoError(t, err)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, kc, 0o600))
	patch := filepath.Join(dir, "original_cvo_overrides.patch")
	require.NoError(t, os.WriteFile(patch, []byte(`{"spec":{"overrides":null,"channel":"stable-4.19"}}`), 0o600))

	tools := standin.New()
	var out, errb bytes.Buffer
	code := tools.OcMain([]string{"patch", "clusterversion.config.openshift.io", "version", "--kubeconfig=" + kubeconfig, "--type=merge", "--patch-file=" + patch}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	assert.Equal(t, "clusterversion.config.openshift.io/version patched\n", out.String())
	assert.Contains(t, errb.String(), "stand-in on master-0")
	api.mu.Lock()
	assert.Equal(t, map[string]any{"channel": "stable-4.19"}, api.cv["spec"], "the merge patch is applied")
	api.mu.Unlock()

	tools.CEOPoll = 20 * time.Millisecond
	go func() {
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		members = members[1:]
		mu.Unlock()
	}()
	out.Reset()
	require.NoError(t, tools.WaitForCEO(map[string]string{"kubeconfig": kubeconfig}, &out, &errb))
	assert.Contains(t, out.String(), "Still waiting for the cluster-etcd-operator to bootstrap: still waiting for the bootstrap teardown; members 2: etcd-bootstrap, master-0")
	assert.Contains(t, out.String(), "Cluster etcd operator bootstrapped successfully (etcd bootstrap member is removed; members 1: master-0, answered by master-0)")

	// A kubeconfig whose CA did not sign the API's certificate is refused.
	other, err := pki.NewCA("other")
	require.NoError(t, err)
	bad, err := probeKubeconfig(srv.URL, other, client)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kubeconfig, bad, 0o600))
	errb.Reset()
	assert.Equal(t, 1, tools.OcMain([]string{"patch", "clusterversion", "version", "--kubeconfig", kubeconfig, "--type=merge", "--patch={}"}, &out, &errb))
	assert.Contains(t, errb.String(), "certificate")
}

func TestMergePatch(t *testing.T) {
	t.Parallel()
	doc := map[string]any{"a": 1.0, "b": map[string]any{"c": 2.0, "d": 3.0}}
	got := mergePatch(doc, map[string]any{"a": nil, "b": map[string]any{"c": nil, "e": 4.0}, "f": []any{1.0}})
	assert.Equal(t, map[string]any{"b": map[string]any{"d": 3.0, "e": 4.0}, "f": []any{1.0}}, got)
}

func probeKubeconfig(server string, ca, client pki.Pair) ([]byte, error) {
	b64 := base64.StdEncoding.EncodeToString
	return yaml.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Config",
		"clusters":        []any{map[string]any{"name": "c", "cluster": map[string]any{"server": server, "certificate-authority-data": b64(ca.CertPEM)}}},
		"users":           []any{map[string]any{"name": "u", "user": map[string]any{"client-certificate-data": b64(client.CertPEM), "client-key-data": b64(client.KeyPEM)}}},
		"contexts":        []any{map[string]any{"name": "u", "context": map[string]any{"cluster": "c", "user": "u"}}},
		"current-context": "u",
	})
}
