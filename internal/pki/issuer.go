package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Issuer issues the certificates and keys a lab's Ignition carries (the
// etcd and kubelet signers, the control plane's serving and client pairs,
// the service-account key). An Issuer with a directory keeps each pair
// there and issues the same pair again for the same request, as the
// installer keeps its generated assets in its state file: Ignition written
// again is then byte for byte what the nodes booted, and `lab up` leaves a
// running lab alone instead of restarting every node with new
// certificates (and a rehearsal bootstrap without the stages it ran). A
// nil Issuer makes a new pair for every request.
type Issuer struct {
	dir string
	mu  sync.Mutex
}

// IssuedDir is the directory under a lab's PKI directory where KeepIn
// keeps what it issues.
const IssuedDir = "issued"

// KeepIn returns an Issuer that keeps what it issues in dir (made 0700).
func KeepIn(dir string) *Issuer { return &Issuer{dir: dir} }

// renewBefore is how long before its expiry a kept certificate is
// issued anew.
const renewBefore = 30 * 24 * time.Hour

// Client is NewClient, kept.
func (i *Issuer) Client(ca Pair, cn string, orgs []string) (Pair, error) {
	return i.pair(ca, "client", []string{cn, strings.Join(orgs, ",")}, func() (Pair, error) { return NewClient(ca, cn, orgs) })
}

// Intermediate is NewIntermediate, kept.
func (i *Issuer) Intermediate(ca Pair, cn string) (Pair, error) {
	return i.pair(ca, "signer", []string{cn}, func() (Pair, error) { return NewIntermediate(ca, cn) })
}

// Leaf is NewLeaf, kept.
func (i *Issuer) Leaf(ca Pair, cn string, orgs, dnsNames []string, ips []net.IP) (Pair, error) {
	ipText := make([]string, len(ips))
	for n, ip := range ips {
		ipText[n] = ip.String()
	}
	return i.pair(ca, "leaf", []string{cn, strings.Join(orgs, ","), strings.Join(dnsNames, ","), strings.Join(ipText, ",")},
		func() (Pair, error) { return NewLeaf(ca, cn, orgs, dnsNames, ips) })
}

// Key returns the PKCS#8 PEM of an ECDSA P-256 private key called name
// (the service-account signing key), kept.
func (i *Issuer) Key(name string) ([]byte, error) {
	return i.keep("key-"+requestID([]string{name}), validKey, newKey)
}

// newKey is the PKCS#8 PEM of a new ECDSA P-256 private key.
func newKey() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// validKey says whether data is a PKCS#8 PEM private key.
func validKey(data []byte) bool {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PRIVATE KEY" {
		return false
	}
	_, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	return err == nil
}

// pair returns the kept pair of the request (kind, issuer ca and fields)
// while it is sound, signed by ca and not about to expire; else it makes
// one with fresh and keeps it (certificate, then key, in one file).
func (i *Issuer) pair(ca Pair, kind string, fields []string, fresh func() (Pair, error)) (Pair, error) {
	if i == nil {
		return fresh()
	}
	name := kind + "-" + requestID(append([]string{kind, string(bytes.TrimSpace(ca.CertPEM))}, fields...))
	data, err := i.keep(name, func(data []byte) bool { return soundPair(splitPair(data), ca) }, func() ([]byte, error) {
		p, err := fresh()
		return append(append([]byte(nil), p.CertPEM...), p.KeyPEM...), err
	})
	if err != nil {
		return Pair{}, err
	}
	return splitPair(data), nil
}

// keep returns the file called name in the Issuer's directory while valid
// accepts it; else it makes one with fresh and keeps it (0600). A nil
// Issuer keeps nothing.
func (i *Issuer) keep(name string, valid func([]byte) bool, fresh func() ([]byte, error)) ([]byte, error) {
	if i == nil {
		return fresh()
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	path := filepath.Join(i.dir, name+".pem")
	data, err := os.ReadFile(path)
	switch {
	case err == nil && valid(data):
		return data, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	if data, err = fresh(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(i.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", i.dir, err)
	}
	return data, writeSecret(path, data)
}

// splitPair is the certificate and the key of a kept file (empty where
// it has none).
func splitPair(data []byte) Pair {
	cb, rest := pem.Decode(data)
	if cb == nil {
		return Pair{}
	}
	kb, _ := pem.Decode(rest)
	if kb == nil {
		return Pair{}
	}
	return Pair{CertPEM: pem.EncodeToMemory(cb), KeyPEM: pem.EncodeToMemory(kb)}
}

// soundPair says whether p parses, its key is its certificate's, ca
// signed it and it is valid for longer than renewBefore.
func soundPair(p Pair, ca Pair) bool {
	cert, key, err := p.Parse()
	if err != nil || time.Until(cert.NotAfter) < renewBefore {
		return false
	}
	pub, ok := key.Public().(*ecdsa.PublicKey)
	if !ok || !pub.Equal(cert.PublicKey) {
		return false
	}
	caCert, _, err := ca.Parse()
	return err == nil && cert.CheckSignatureFrom(caCert) == nil
}

// requestID names a request by a digest of its fields.
func requestID(fields []string) string {
	h := sha256.New()
	for _, f := range fields {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
