package pki

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnsureCreatesReusesAndProtects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := Ensure(dir, "api-int.ocp.lab.local")
	require.NoError(t, err)

	caCert, _, err := l.CA.Parse()
	require.NoError(t, err)
	assert.True(t, caCert.IsCA)
	assert.Equal(t, "root-ca", caCert.Subject.CommonName)
	mcs, _, err := l.MCS.Parse()
	require.NoError(t, err)
	assert.Equal(t, []string{"api-int.ocp.lab.local"}, mcs.DNSNames)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	_, err = mcs.Verify(x509.VerifyOptions{Roots: pool, DNSName: "api-int.ocp.lab.local"})
	assert.NoError(t, err)

	for _, f := range []string{CACertFile, CAKeyFile, MCSCertFile, MCSKeyFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}

	again, err := Ensure(dir, "api-int.ocp.lab.local")
	require.NoError(t, err)
	assert.Equal(t, l.CA.CertPEM, again.CA.CertPEM, "CA reused")
	assert.Equal(t, l.MCS.CertPEM, again.MCS.CertPEM, "MCS cert reused")

	renamed, err := Ensure(dir, "api-int.other.lab.local")
	require.NoError(t, err)
	assert.Equal(t, l.CA.CertPEM, renamed.CA.CertPEM, "CA kept")
	assert.NotEqual(t, l.MCS.CertPEM, renamed.MCS.CertPEM, "MCS cert remade for the new name")
}

func TestServingNotTrustedByOtherCA(t *testing.T) {
	t.Parallel()
	a, err := NewCA("a")
	require.NoError(t, err)
	b, err := NewCA("b")
	require.NoError(t, err)
	leaf, err := NewServing(a, "x", []string{"x.example"})
	require.NoError(t, err)
	assert.True(t, signedFor(a, leaf, "x.example"))
	assert.False(t, signedFor(b, leaf, "x.example"))
	assert.False(t, signedFor(a, leaf, "y.example"))
}
