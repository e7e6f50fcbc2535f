package create

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An API that never answers fails the wait with where it asked and why,
// after the ready timeout; a broken manifest fails before any wait.
func TestBootstrapFailsClearly(t *testing.T) {
	t.Parallel()
	ca, client := testPKI(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close()) // nothing listens there now
	b64 := base64.StdEncoding.EncodeToString
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`clusters:
- name: c
  cluster: {server: "https://127.0.0.1:%d", certificate-authority-data: %s}
users:
- name: u
  user: {client-certificate-data: %s, client-key-data: %s}
`, port, b64(ca.CertPEM), b64(client.CertPEM), b64(client.KeyPEM))), 0o600))
	manifests := writeTree(t, map[string]string{"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: lab}\n"})

	var log bytes.Buffer
	start := time.Now()
	_, _, err = Bootstrap(context.Background(), BootstrapOptions{Kubeconfig: kubeconfig, ManifestDir: manifests,
		ReadyTimeout: 1500 * time.Millisecond, CreateTimeout: time.Second, Poll: 200 * time.Millisecond, Log: &log})
	require.Error(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond)
	assert.Contains(t, err.Error(), fmt.Sprintf("the API at https://127.0.0.1:%d is not ready", port))
	assert.Contains(t, err.Error(), "connection refused")
	assert.Contains(t, log.String(), "Waiting up to 1.5s for the Kubernetes API")
	assert.NotContains(t, log.String(), "API is up")

	broken := writeTree(t, map[string]string{"bad.yaml": "kind: ["})
	log.Reset()
	_, _, err = Bootstrap(context.Background(), BootstrapOptions{Kubeconfig: kubeconfig, ManifestDir: broken,
		ReadyTimeout: time.Minute, CreateTimeout: time.Minute, Log: &log})
	var le *LoadError
	require.ErrorAs(t, err, &le)
	assert.Contains(t, le.Files, "bad.yaml")
	assert.Empty(t, log.String(), "nothing waited for, nothing created")
}
