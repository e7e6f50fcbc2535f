package pki

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A kept Issuer issues the same pair for the same request, a new one for
// any other request, and keeps every pair 0600 in a 0700 directory.
func TestIssuerKeepsWhatItIssues(t *testing.T) {
	t.Parallel()
	ca, err := NewCA("root-ca")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), IssuedDir)
	iss := KeepIn(dir)

	c1, err := iss.Client(ca, "system:admin", []string{"system:masters"})
	require.NoError(t, err)
	c2, err := KeepIn(dir).Client(ca, "system:admin", []string{"system:masters"})
	require.NoError(t, err)
	assert.Equal(t, c1, c2, "the same request, even from another Issuer on the directory, gets the kept pair")
	other, err := iss.Client(ca, "system:admin", nil)
	require.NoError(t, err)
	assert.NotEqual(t, c1.CertPEM, other.CertPEM, "other groups are another request")

	l1, err := iss.Leaf(ca, "etcd", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	require.NoError(t, err)
	l2, err := iss.Leaf(ca, "etcd", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	require.NoError(t, err)
	assert.Equal(t, l1, l2)
	l3, err := iss.Leaf(ca, "etcd", nil, []string{"localhost"}, []net.IP{net.ParseIP("10.0.0.1")})
	require.NoError(t, err)
	assert.NotEqual(t, l1.CertPEM, l3.CertPEM, "other addresses are another request")
	cert, _, err := l3.Parse()
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1", cert.IPAddresses[0].String())

	s1, err := iss.Intermediate(ca, "etcd-signer")
	require.NoError(t, err)
	s2, err := iss.Intermediate(ca, "etcd-signer")
	require.NoError(t, err)
	assert.Equal(t, s1, s2)
	signer, _, err := s1.Parse()
	require.NoError(t, err)
	assert.True(t, signer.IsCA)

	k1, err := iss.Key("service-account")
	require.NoError(t, err)
	k2, err := iss.Key("service-account")
	require.NoError(t, err)
	assert.Equal(t, k1, k2)
	k3, err := iss.Key("other")
	require.NoError(t, err)
	assert.NotEqual(t, k1, k3)

	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 7, "one file per distinct request")
	for _, e := range entries {
		fi, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), e.Name())
	}
}

// A nil Issuer makes a new pair for every request.
func TestNilIssuerIssuesAnew(t *testing.T) {
	t.Parallel()
	ca, err := NewCA("root-ca")
	require.NoError(t, err)
	var iss *Issuer
	a, err := iss.Client(ca, "u", nil)
	require.NoError(t, err)
	b, err := iss.Client(ca, "u", nil)
	require.NoError(t, err)
	assert.NotEqual(t, a.KeyPEM, b.KeyPEM)
	k1, err := iss.Key("k")
	require.NoError(t, err)
	k2, err := iss.Key("k")
	require.NoError(t, err)
	assert.NotEqual(t, k1, k2)
}

// What cannot be trusted any more is issued anew: a pair of another CA
// (the lab's PKI directory was remade), a damaged file, a certificate
// about to expire.
func TestIssuerReissuesWhatItCannotKeep(t *testing.T) {
	t.Parallel()
	ca, err := NewCA("root-ca")
	require.NoError(t, err)
	dir := t.TempDir()
	iss := KeepIn(dir)
	first, err := iss.Client(ca, "u", nil)
	require.NoError(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	path := filepath.Join(dir, entries[0].Name())

	// Damaged: the file no longer holds a pair.
	require.NoError(t, os.WriteFile(path, []byte("not PEM"), 0o600))
	second, err := iss.Client(ca, "u", nil)
	require.NoError(t, err)
	assert.NotEqual(t, first.CertPEM, second.CertPEM)
	cert, _, err := second.Parse()
	require.NoError(t, err)
	caCert, _, err := ca.Parse()
	require.NoError(t, err)
	require.NoError(t, cert.CheckSignatureFrom(caCert))

	// Signed by another CA under the same request file name.
	otherCA, err := NewCA("root-ca")
	require.NoError(t, err)
	foreign, err := NewClient(otherCA, "u", nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(append([]byte(nil), foreign.CertPEM...), foreign.KeyPEM...), 0o600))
	third, err := iss.Client(ca, "u", nil)
	require.NoError(t, err)
	assert.NotEqual(t, foreign.CertPEM, third.CertPEM, "a pair another CA signed is not kept")

	// About to expire.
	tmpl := leafTemplate("u", nil, x509.ExtKeyUsageClientAuth)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	expiring, err := signedBy(ca, tmpl, "expiring")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(append([]byte(nil), expiring.CertPEM...), expiring.KeyPEM...), 0o600))
	fourth, err := iss.Client(ca, "u", nil)
	require.NoError(t, err)
	assert.NotEqual(t, expiring.CertPEM, fourth.CertPEM, "a pair about to expire is issued anew")
	cert, _, err = fourth.Parse()
	require.NoError(t, err)
	assert.Greater(t, time.Until(cert.NotAfter), renewBefore)
}
