package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/pki"
)

// The reads go to etcd's JSON API over TLS with the node's client
// certificate, which the member requires (--client-cert-auth), verifying
// the member's serving certificate against the CA bundle; one connection
// serves every poll; a member signed by another CA is refused, and a
// missing certificate file is named.
func TestEtcdReadsOverTLSWithTheClientCertificate(t *testing.T) {
	t.Parallel()
	ca, err := pki.NewCA("etcd-signer")
	require.NoError(t, err)
	serving, err := pki.NewLeaf(ca, "etcd-serving", nil, nil, []net.IP{net.ParseIP("127.0.0.1")})
	require.NoError(t, err)
	client, err := pki.NewClient(ca, "etcd", []string{"system:etcd-peers"})
	require.NoError(t, err)
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	cacert, cert, key := file("ca.crt", ca.CertPEM), file("client.crt", client.CertPEM), file("client.key", client.KeyPEM)

	var conns atomic.Int32
	member := func(p pki.Pair) *httptest.Server {
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(ca.CertPEM))
		pair, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
		require.NoError(t, err)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if r.URL.Path != "/v3/cluster/member/list" || string(body) != `{"linearizable":true}` || len(r.TLS.PeerCertificates) == 0 {
				http.Error(w, `{"message":"unexpected `+r.URL.Path+`"}`, http.StatusBadRequest)
				return
			}
			_, _ = io.WriteString(w, `{"members":[{"ID":"171","name":"etcd-bootstrap","peerURLs":["https://10.0.0.10:2380"]}]}`)
		}))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	srv := member(serving)
	c := Etcdctl{endpoints: []string{srv.URL}, cacert: cacert, cert: cert, key: key, api: newEtcdHTTP()}
	for range 3 {
		ms, err := c.Members(t.Context())
		require.NoError(t, err)
		require.Len(t, ms, 1)
		assert.Equal(t, "etcd-bootstrap", ms[0].Name)
		assert.Equal(t, "ab", ms[0].hexID())
	}
	assert.Equal(t, int32(1), conns.Load(), "the polls share one connection")

	other, err := pki.NewCA("another-signer")
	require.NoError(t, err)
	forged, err := pki.NewLeaf(other, "etcd-serving", nil, nil, []net.IP{net.ParseIP("127.0.0.1")})
	require.NoError(t, err)
	bad := member(forged)
	_, err = Etcdctl{endpoints: []string{bad.URL}, cacert: cacert, cert: cert, key: key, api: newEtcdHTTP()}.Members(t.Context())
	require.Error(t, err, "a member whose certificate another CA signed")
	assert.Contains(t, err.Error(), "etcd member list: "+bad.URL)

	_, err = Etcdctl{endpoints: []string{srv.URL}, cacert: cacert, cert: filepath.Join(dir, "none.crt"), key: key, api: newEtcdHTTP()}.Members(t.Context())
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "etcd client certificate") && strings.Contains(err.Error(), "none.crt"), err.Error())
}
