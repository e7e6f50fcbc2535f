package logbundle

import (
	"archive/tar"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var gatherAt = time.Date(2025, 5, 14, 10, 30, 0, 0, time.UTC)

const pemRSA = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAv8secretsecret\n-----END RSA PRIVATE KEY-----\n"

// read unpacks a bundle: its entries by name (directories end in /).
func read(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[h.Name] = string(data)
	}
}

func TestFilterLeavesCredentialsOut(t *testing.T) {
	t.Parallel()
	b64 := base64.StdEncoding.EncodeToString([]byte(pemRSA))
	for _, c := range []struct {
		rel, data string
	}{
		{"rendered-assets/openshift/auth/kubeconfig", "apiVersion: v1"},
		{"rendered-assets/openshift/auth/kubeadmin-password", "hunter2"},
		{"rendered-assets/openshift/tls/admin-kubeconfig-signer.key", "x"},
		{"rendered-assets/openshift/manifests/pull-secret.yaml", "x"},
		{"rendered-assets/openshift/manifests/cluster-config.yaml", `{"auths":{"quay.io":{"auth":"Zm9vOmJhcg=="}}}`},
		{"rendered-assets/openshift/tls/bundle.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" + pemRSA},
		{"rendered-assets/openshift/manifests/tls.yaml", "apiVersion: v1\nkind: Secret\ndata:\n  tls.crt: x\n"},
		{"rendered-assets/openshift/manifests/ca.yaml", "data:\n  key: " + b64 + "\n"},
		{"rendered-assets/openshift/bootstrap-configs/admin.yaml", "users:\n- name: admin\n  user:\n    client-key-data: abc\n"},
		{"rendered-assets/openshift/x.json", `{"users":[{"user":{"token":"sha256~abc"}}]}`},
		{"bootstrap/network/.ssh/id_ed25519", "x"},
		{"bootstrap/files/id_rsa", "x"},
		{"bootstrap/files/ssh_host_ed25519_key", "x"},
		{"bootstrap/files/sa-token", "x"},
	} {
		got, why := Filter(c.rel, []byte(c.data))
		assert.Nil(t, got, c.rel)
		assert.NotEmpty(t, why, c.rel)
	}
	for _, keep := range []string{"rendered-assets/openshift/tls/root-ca.crt", "bootstrap/services/bootkube.json", "control-plane/10.0.0.11/journals/kubelet.log", "rendered-assets/openshift/id_rsa.pub"} {
		got, why := Filter(keep, []byte("fine\n"))
		assert.Equal(t, "fine\n", string(got), keep)
		assert.Empty(t, why, keep)
	}
}

// A log keeps its lines, without the key, token or pull secret it printed.
func TestFilterCutsSecretsOutOfLogs(t *testing.T) {
	t.Parallel()
	jwtTok := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlc2lnbmF0dXJl"
	b64 := base64.StdEncoding.EncodeToString([]byte(pemRSA))
	log := "May 14 10:00:00 bootstrap bootkube.sh[1]: starting\n" + pemRSA +
		"May 14 10:00:01 bootstrap bootkube.sh[1]: token " + jwtTok + "\n" +
		"May 14 10:00:02 bootstrap curl[2]: Authorization: Bearer abcdefghijklmnopqrstuvwxyz\n" +
		"May 14 10:00:03 bootstrap x[3]: data " + b64 + "\n" +
		`May 14 10:00:04 bootstrap x[3]: {"auths":{"quay.io":{"auth":"Zm9vOmJhcg=="}}}` + "\n" +
		"May 14 10:00:05 bootstrap bootkube.sh[1]: bootkube.service complete\n"
	got, why := Filter("bootstrap/journals/bootkube.log", []byte(log))
	require.Empty(t, why)
	s := string(got)
	for _, secret := range []string{"MIIEowIBAAKCAQEAv8secretsecret", jwtTok, "abcdefghijklmnopqrstuvwxyz", b64, "Zm9vOmJhcg=="} {
		assert.NotContains(t, s, secret)
	}
	assert.Contains(t, s, "starting")
	assert.Contains(t, s, "bootkube.service complete")
	assert.Contains(t, s, Removed)
}

func TestWriterLayoutLimitsAndMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Create(dir, gatherAt, Limits{File: 64, Total: 200})
	require.NoError(t, err)
	assert.Equal(t, "20250514103000", w.ID)
	require.NoError(t, w.Dir("control-plane/10.0.0.12"))
	n, err := w.Add("bootstrap/journals/kubelet.log", []byte(strings.Repeat("line of the kubelet\n", 10)))
	require.NoError(t, err)
	assert.LessOrEqual(t, n, int64(64), "a log past the file cap keeps its tail")
	n, err = w.Add("resources/pods.json", []byte(`{"items":[`+strings.Repeat(`{},`, 40)+`{}]}`))
	require.NoError(t, err)
	assert.Zero(t, n, "a JSON file past the file cap is left out")
	_, err = w.Add("rendered-assets/openshift/auth/kubeconfig", []byte("x"))
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		_, err = w.Add("bootstrap/containers/c"+string(rune('a'+i))+".log", []byte(strings.Repeat("x", 60)))
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, w.Size(), int64(200))
	_, err = w.Add("../escape.log", []byte("x"))
	assert.Error(t, err)
	require.NoError(t, w.Commit())

	assert.Equal(t, []string{filepath.Base(w.Path)}, list(t, dir), "only the bundle is left: no temporary file")
	info, err := os.Stat(w.Path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	got := read(t, w.Path)
	assert.Contains(t, got, "log-bundle-20250514103000/")
	assert.Contains(t, got, "log-bundle-20250514103000/control-plane/10.0.0.12/")
	assert.True(t, strings.HasPrefix(got["log-bundle-20250514103000/bootstrap/journals/kubelet.log"], "line of the kubelet\n"))
	assert.NotContains(t, got, "log-bundle-20250514103000/resources/pods.json")
	assert.NotContains(t, got, "log-bundle-20250514103000/rendered-assets/openshift/auth/kubeconfig")
	var m struct{ Missing []Missing }
	require.NoError(t, json.Unmarshal([]byte(got["log-bundle-20250514103000/"+MissingFile]), &m))
	text := ""
	for _, e := range m.Missing {
		text += e.File + ": " + e.Why + "\n"
	}
	assert.Contains(t, text, "resources/pods.json: left out")
	assert.Contains(t, text, "rendered-assets/openshift/auth/kubeconfig: left out: under auth/")
	assert.Contains(t, text, "bootstrap/journals/kubelet.log: only its last")
	assert.Contains(t, text, "reached its limit")

	_, err = Create(dir, gatherAt, DefaultLimits())
	assert.ErrorContains(t, err, "exists", "a bundle of the same second is never replaced")
}

func TestAbortLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Create(dir, gatherAt, DefaultLimits())
	require.NoError(t, err)
	_, err = w.Add("bootstrap/journals/bootkube.log", []byte("x\n"))
	require.NoError(t, err)
	w.Abort()
	assert.Empty(t, list(t, dir))
}

// list is dir's entries, dot-files (a temporary file) included.
func list(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
