package kube

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/pki"
)

func testPKI(t *testing.T) (ca, client pki.Pair) {
	t.Helper()
	ca, err := pki.NewCA("kubecreate-test")
	require.NoError(t, err)
	client, err = pki.NewClient(ca, "system:admin", []string{"system:masters"})
	require.NoError(t, err)
	return ca, client
}

func TestLoadKubeconfig(t *testing.T) {
	t.Parallel()
	ca, client := testPKI(t)
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	// The installer's form: one context, everything inline.
	inline := `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://api.lab.example:6443", certificate-authority-data: ` + b64(ca.CertPEM) + `}
users:
- name: admin
  user: {client-certificate-data: ` + b64(client.CertPEM) + `, client-key-data: ` + b64(client.KeyPEM) + `}
contexts:
- name: admin
  context: {cluster: lab, user: admin}
current-context: admin
`
	// kubectl's other form: files, relative to the kubeconfig, two
	// contexts and the current one picked.
	files := `clusters:
- name: other
  cluster: {server: "https://other:1"}
- name: lab
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.crt, tls-server-name: api-int.lab.example}
users:
- name: admin
  user: {client-certificate: pki/admin.crt, client-key: pki/admin.key}
contexts:
- name: a
  context: {cluster: other, user: admin}
- name: b
  context: {cluster: lab, user: admin}
current-context: b
`
	for _, tc := range []struct {
		name, config string
		want         Config
		err          string
	}{
		{name: "inline, as the installer writes it", config: inline,
			want: Config{Server: "https://api.lab.example:6443", CAPEM: ca.CertPEM, CertPEM: client.CertPEM, KeyPEM: client.KeyPEM}},
		{name: "files relative to the kubeconfig", config: files,
			want: Config{Server: "https://127.0.0.1:6443", ServerName: "api-int.lab.example", CAPEM: ca.CertPEM, CertPEM: client.CertPEM, KeyPEM: client.KeyPEM}},
		{name: "current context missing", config: strings.Replace(inline, "current-context: admin", "current-context: nope", 1),
			err: `current-context "nope" is not among its contexts`},
		{name: "context names a missing user", config: strings.Replace(inline, "{cluster: lab, user: admin}", "{cluster: lab, user: bob}", 1),
			err: `context names user "bob"`},
		{name: "two contexts, none current", config: strings.Replace(files, "current-context: b", "", 1),
			err: "2 contexts and no current-context"},
		{name: "no client certificate", config: strings.Replace(files, "{client-certificate: pki/admin.crt, client-key: pki/admin.key}", "{token: abc}", 1),
			err: `user "admin" has no client-certificate(-data) and client-key(-data)`},
		{name: "bad base64", config: strings.Replace(inline, "client-key-data: "+b64(client.KeyPEM), "client-key-data: '!!'", 1),
			err: "client-key: the -data field is not base64"},
		{name: "missing file", config: strings.Replace(files, "ca.crt", "nope.crt", 1),
			err: "certificate-authority: open "},
		{name: "plain http", config: strings.Replace(inline, "https://api", "http://api", 1),
			err: `server "http://api.lab.example:6443" is not an https:// URL`},
		{name: "not YAML", config: "clusters: [", err: "is not YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "pki"), 0o700))
			for name, data := range map[string][]byte{"ca.crt": ca.CertPEM, "pki/admin.crt": client.CertPEM, "pki/admin.key": client.KeyPEM} {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
			}
			path := filepath.Join(dir, "kubeconfig")
			require.NoError(t, os.WriteFile(path, []byte(tc.config), 0o600))
			got, err := LoadKubeconfig(path)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "kubeconfig "+path)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			_, err = NewClient(got)
			assert.NoError(t, err)
		})
	}
}

func TestNewClientRefusesBadCredentials(t *testing.T) {
	t.Parallel()
	ca, client := testPKI(t)
	_, other := testPKI(t)
	_, err := NewClient(Config{Server: "https://x", CAPEM: []byte("junk"), CertPEM: client.CertPEM, KeyPEM: client.KeyPEM})
	assert.ErrorContains(t, err, "no PEM certificate in the certificate authority")
	_, err = NewClient(Config{Server: "https://x", CAPEM: ca.CertPEM, CertPEM: client.CertPEM, KeyPEM: other.KeyPEM})
	assert.ErrorContains(t, err, "do not make a pair")
}
