package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testPKI is a CA, a serving certificate for the lab's API names and an
// admin client certificate, as the installer's kubeconfig would carry.
type testPKI struct {
	caPEM             []byte
	pool              *x509.CertPool
	server            tls.Certificate
	clientPEM, keyPEM []byte
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "root-ca", OrganizationalUnit: []string{"openshift"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, _ := x509.ParseCertificate(caDER)
	p := &testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	leaf := func(serial int64, cn string, dns []string, usage x509.ExtKeyUsage) ([]byte, []byte) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		require.NoError(t, err)
		kd, err := x509.MarshalECPrivateKey(k)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
	}
	sc, sk := leaf(2, "api", []string{"api.ocp.lab.local", "api-int.ocp.lab.local"}, x509.ExtKeyUsageServerAuth)
	p.server, err = tls.X509KeyPair(sc, sk)
	require.NoError(t, err)
	p.clientPEM, p.keyPEM = leaf(3, "system:admin", nil, x509.ExtKeyUsageClientAuth)
	return p
}

// response is one canned answer of the API stand-in.
type response struct {
	code int
	body any // string is sent as is, anything else as JSON
}

// fakeAPI is a local HTTPS stand-in of the few Kubernetes/OpenShift API
// endpoints (and MCS endpoints) bootlab uses. Each path answers its list
// of responses in turn, repeating the last one.
type fakeAPI struct {
	srv   *httptest.Server
	mu    sync.Mutex
	seqs  map[string][]response
	calls map[string]int
	puts  map[string][]byte
}

func newFakeAPI(t *testing.T, p *testPKI, requireClientCert bool) *fakeAPI {
	f := &fakeAPI{seqs: map[string][]response{}, calls: map[string]int{}, puts: map[string][]byte{}}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}}
	if requireClientCert {
		f.srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
		f.srv.TLS.ClientCAs = p.pool
	}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) set(path string, rs ...response) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seqs[path] = rs
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	key := r.URL.Path
	if r.URL.RawQuery != "" {
		key += "?" + r.URL.RawQuery
	}
	if r.Method == http.MethodPut {
		b, _ := io.ReadAll(r.Body)
		f.puts[key] = b
		f.mu.Unlock()
		w.Write(b)
		return
	}
	seq := f.seqs[key]
	i := f.calls[key]
	f.calls[key]++
	f.mu.Unlock()
	if len(seq) == 0 {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"kind":"Status","message":"not found"}`))
		return
	}
	if i >= len(seq) {
		i = len(seq) - 1
	}
	rs := seq[i]
	if rs.code == 0 {
		rs.code = 200
	}
	w.WriteHeader(rs.code)
	switch b := rs.body.(type) {
	case string:
		w.Write([]byte(b))
	case nil:
	default:
		json.NewEncoder(w).Encode(b)
	}
}

func (f *fakeAPI) port() string {
	_, port, _ := net.SplitHostPort(f.srv.Listener.Addr().String())
	return port
}

func (f *fakeAPI) putCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.puts)
}

// writeKubeconfig writes an installer-shaped kubeconfig for server.
func writeKubeconfig(t *testing.T, p *testPKI, server string) string {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	data := `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ` + b64(p.caPEM) + `
    server: ` + server + `
  name: ocp
contexts:
- context:
    cluster: ocp
    user: admin
  name: admin
current-context: admin
kind: Config
preferences: {}
users:
- name: admin
  user:
    client-certificate-data: ` + b64(p.clientPEM) + `
    client-key-data: ` + b64(p.keyPEM) + `
`
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
	return path
}

// newTestClient is a client of fake through the api.<domain> name, dialled
// via 127.0.0.1 as the real one is dialled via the lab's API address.
func newTestClient(t *testing.T, p *testPKI, fake *fakeAPI) *Client {
	k, err := LoadKubeconfig(writeKubeconfig(t, p, "https://api.ocp.lab.local:"+fake.port()))
	require.NoError(t, err)
	c, err := NewClient(k, "127.0.0.1", nil)
	require.NoError(t, err)
	return c
}
