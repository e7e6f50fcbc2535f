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

// An API that never answers leaves every manifest failed when the create's
// context ends, each with why (discovery: connection refused), as
// upstream's rounds retry until their deadline; a broken manifest fails
// before anything is asked.
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := Bootstrap(ctx, BootstrapOptions{Kubeconfig: kubeconfig, ManifestDir: manifests, Log: &log})
	var ie *IncompleteError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Failed, 1)
	assert.Equal(t, "ns.yaml", ie.Failed[0].Path)
	assert.Contains(t, ie.Failed[0].Reason, "connection refused")
	assert.Greater(t, res.Rounds, 1, "retried every 200 ms until the context ended")
	assert.Contains(t, log.String(), fmt.Sprintf("at https://127.0.0.1:%d", port))

	broken := writeTree(t, map[string]string{"bad.yaml": "kind: ["})
	log.Reset()
	_, err = Bootstrap(context.Background(), BootstrapOptions{Kubeconfig: kubeconfig, ManifestDir: broken, Log: &log})
	var le *LoadError
	require.ErrorAs(t, err, &le)
	assert.Contains(t, le.Files, "bad.yaml")
	assert.Empty(t, log.String(), "nothing asked, nothing created")
}

// Extra manifests sort among the directory's files by their SortPath, as
// bootlab's CRDs would sit in manifests/ under their upstream names.
func TestOrderSortsExtraManifestsByTheirUpstreamName(t *testing.T) {
	t.Parallel()
	ms := []Manifest{
		{Path: "zz.yaml"},
		{Path: "bootlab-crds/0000_12_etcd_01_etcds.crd.yaml", SortPath: "0000_12_etcd_01_etcds.crd.yaml"},
		{Path: "0000_00_a.yaml"},
		{Path: "0000_20_b.yaml"},
	}
	Order(ms)
	var got []string
	for _, m := range ms {
		got = append(got, m.Path)
	}
	assert.Equal(t, []string{"0000_00_a.yaml", "bootlab-crds/0000_12_etcd_01_etcds.crd.yaml", "0000_20_b.yaml", "zz.yaml"}, got)
}
