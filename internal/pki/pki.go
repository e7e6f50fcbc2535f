// Package pki makes the lab's certificate authority and serving
// certificates, shaped like the installer's: a self-signed root CA (CN
// root-ca, OU openshift, 10 years) and a Machine Config Server serving
// certificate for api-int signed by it. Keys are written 0600 and reused.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bootlab/bootlab/internal/atomicfile"
)

// Validity of the CA and of the certificates it signs, as the installer's.
const Validity = 10 * 365 * 24 * time.Hour

// Pair is a certificate and its private key, PEM-encoded.
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// caTemplate is the certificate of a CA called cn: the root and the
// signers below it differ only in who signs them.
func caTemplate(cn string) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn, OrganizationalUnit: []string{"openshift"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
}

// NewCA returns a self-signed CA like the installer's root CA.
func NewCA(cn string) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl := caTemplate(cn)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return Pair{}, fmt.Errorf("create CA certificate: %w", err)
	}
	return encode(der, key)
}

// NewServing returns a serverAuth certificate for dnsNames signed by ca.
func NewServing(ca Pair, cn string, dnsNames []string) (Pair, error) {
	tmpl := leafTemplate(cn, nil, x509.ExtKeyUsageServerAuth)
	tmpl.DNSNames = dnsNames
	return signedBy(ca, tmpl, fmt.Sprintf("serving certificate for %v", dnsNames))
}

// leafTemplate is the certificate of a non-CA subject cn in groups orgs,
// valid for the given uses.
func leafTemplate(cn string, orgs []string, usage ...x509.ExtKeyUsage) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usage,
	}
}

// signedBy makes a new key and the certificate tmpl for it, signed by ca;
// what names the certificate in an error.
func signedBy(ca Pair, tmpl *x509.Certificate, what string) (Pair, error) {
	caCert, caKey, err := ca.Parse()
	if err != nil {
		return Pair{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return Pair{}, fmt.Errorf("create %s: %w", what, err)
	}
	return encode(der, key)
}

// Parse decodes the pair.
func (p Pair) Parse() (*x509.Certificate, crypto.Signer, error) {
	cb, _ := pem.Decode(p.CertPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, errors.New("no PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse certificate: %w", err)
	}
	kb, _ := pem.Decode(p.KeyPEM)
	if kb == nil {
		return nil, nil, errors.New("no PEM private key block")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse private key: %w", err)
	}
	return cert, key, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) (Pair, error) {
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}),
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// Lab is the lab's PKI as kept in its directory.
type Lab struct {
	CA  Pair
	MCS Pair
}

// File names under the PKI directory, named like the installer's tls/ assets.
const (
	CACertFile  = "root-ca.crt"
	CAKeyFile   = "root-ca.key"
	MCSCertFile = "machine-config-server.crt"
	MCSKeyFile  = "machine-config-server.key"
)

// Ensure loads the lab CA and MCS certificate from dir, or creates them
// (0600) when absent. The MCS certificate is remade when it does not name
// apiInt or is not signed by the CA, so a renamed cluster gets a right one.
func Ensure(dir, apiInt string) (*Lab, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create PKI directory: %w", err)
	}
	ca, err := load(dir, CACertFile, CAKeyFile)
	if err != nil {
		return nil, err
	}
	if ca == nil {
		p, err := NewCA("root-ca")
		if err != nil {
			return nil, err
		}
		if err := save(dir, CACertFile, CAKeyFile, p); err != nil {
			return nil, err
		}
		ca = &p
	}
	mcs, err := load(dir, MCSCertFile, MCSKeyFile)
	if err != nil {
		return nil, err
	}
	if mcs == nil || !signedFor(*ca, *mcs, apiInt) {
		p, err := NewServing(*ca, "system:machine-config-server", []string{apiInt})
		if err != nil {
			return nil, err
		}
		if err := save(dir, MCSCertFile, MCSKeyFile, p); err != nil {
			return nil, err
		}
		mcs = &p
	}
	return &Lab{CA: *ca, MCS: *mcs}, nil
}

func signedFor(ca, leaf Pair, name string) bool {
	caCert, _, err := ca.Parse()
	if err != nil {
		return false
	}
	cert, _, err := leaf.Parse()
	if err != nil || !slices.Contains(cert.DNSNames, name) {
		return false
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name})
	return err == nil
}

func load(dir, certName, keyName string) (*Pair, error) {
	c, cerr := os.ReadFile(filepath.Join(dir, certName))
	k, kerr := os.ReadFile(filepath.Join(dir, keyName))
	if errors.Is(cerr, os.ErrNotExist) || errors.Is(kerr, os.ErrNotExist) {
		return nil, nil
	}
	if cerr != nil {
		return nil, cerr
	}
	if kerr != nil {
		return nil, kerr
	}
	p := Pair{CertPEM: c, KeyPEM: k}
	if _, _, err := p.Parse(); err != nil {
		return nil, fmt.Errorf("%s in %s: %w (delete both files to make new ones)", certName, dir, err)
	}
	return &p, nil
}

func save(dir, certName, keyName string, p Pair) error {
	for name, data := range map[string][]byte{certName: p.CertPEM, keyName: p.KeyPEM} {
		if err := writeSecret(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return nil
}

// writeSecret writes data to path (0600), replacing it atomically.
func writeSecret(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o600)
}

// SamePEM reports whether two PEM certificates are the same bytes.
func SamePEM(a, b []byte) bool { return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b)) }

// NewClient returns a clientAuth certificate for user cn in groups orgs
// signed by ca, as the installer's kubeconfig and etcd client certificates.
func NewClient(ca Pair, cn string, orgs []string) (Pair, error) {
	return signedBy(ca, leafTemplate(cn, orgs, x509.ExtKeyUsageClientAuth), "client certificate for "+cn)
}

// NewIntermediate returns a CA signed by ca, like the installer's signers
// (etcd-signer, ...) but chained to the lab's root CA.
func NewIntermediate(ca Pair, cn string) (Pair, error) {
	return signedBy(ca, caTemplate(cn), cn+" certificate")
}

// NewLeaf returns a certificate signed by ca for both server and client
// use (etcd's serving and peer certificates), with DNS names and IPs.
func NewLeaf(ca Pair, cn string, orgs, dnsNames []string, ips []net.IP) (Pair, error) {
	tmpl := leafTemplate(cn, orgs, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	tmpl.DNSNames, tmpl.IPAddresses = dnsNames, ips
	return signedBy(ca, tmpl, "certificate for "+cn)
}
