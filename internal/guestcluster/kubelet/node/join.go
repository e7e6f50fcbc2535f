package node

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/internal/kube"
)

const (
	// SignerKubeletClient signs the kubelet's client certificate.
	SignerKubeletClient = "kubernetes.io/kube-apiserver-client-kubelet"
	csrPath             = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	// ClientCertFile is the kubelet's current client certificate and key,
	// in one PEM file, under the certificate directory.
	ClientCertFile = "kubelet-client-current.pem"
)

// NotApprovedError is a join that ended before the CSR got a certificate.
type NotApprovedError struct {
	CSR, Node, State string
	Err              error
}

func (e *NotApprovedError) Error() string {
	return fmt.Sprintf("node %s is not registered: its client CSR %s is %s: approve it (`bootlab lab approve-csrs`; on the bootstrap, approve-csr does it): %v",
		e.Node, e.CSR, e.State, e.Err)
}

func (e *NotApprovedError) Unwrap() error { return e.Err }

// Join gets the node its client certificate, as the kubelet's TLS
// bootstrap does: the certificate already in the certificate directory
// while it is valid for a day more, else a new key, a CSR sent with the
// bootstrap kubeconfig and the certificate once approved and signed. It
// writes the node's kubeconfig and returns its client.
func (n *Node) Join(ctx context.Context) (*kube.Client, error) {
	if c, err := n.existingClient(); err == nil {
		return c, nil
	}
	boot, err := kube.LoadKubeconfig(n.cfg.BootstrapKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("node %s: bootstrap kubeconfig: %w", n.cfg.Name, err)
	}
	boot.Dial = n.cfg.Dial
	bc, err := kube.NewClient(boot)
	if err != nil {
		return nil, fmt.Errorf("node %s: bootstrap kubeconfig %s: %w", n.cfg.Name, n.cfg.BootstrapKubeconfig, err)
	}
	key, req, err := newCSR(n.cfg.Name)
	if err != nil {
		return nil, err
	}
	csr := certv1.CertificateSigningRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: "certificates.k8s.io/v1", Kind: "CertificateSigningRequest"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certv1.CertificateSigningRequestSpec{Request: req, SignerName: SignerKubeletClient,
			Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth}},
	}
	if err := bc.Do(ctx, "POST", csrPath, &csr, &csr); err != nil {
		return nil, fmt.Errorf("node %s: create the client CSR with the bootstrap kubeconfig %s: %w", n.cfg.Name, n.cfg.BootstrapKubeconfig, err)
	}
	n.log.Info("kubelet stand-in: client CSR created, waiting for approval", "node", n.cfg.Name, "csr", csr.Name)
	cert, err := waitCertificate(ctx, bc, csr.Name, n.cfg.Poll)
	if err != nil {
		var na *NotApprovedError
		if errors.As(err, &na) {
			na.Node = n.cfg.Name
		}
		return nil, err
	}
	n.log.Info("kubelet stand-in: client certificate issued", "node", n.cfg.Name, "csr", csr.Name)
	return n.writeKubeconfig(boot, cert, key)
}

// newCSR makes the kubelet's key and client CSR: CN system:node:<name>,
// O system:nodes, an ECDSA P-256 key as the kubelet makes.
func newCSR(name string) (keyPEM, csrPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("node %s: make the CSR: %w", name, err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// waitCertificate polls the CSR until the signer wrote its certificate,
// it is denied or failed, or ctx ends.
func waitCertificate(ctx context.Context, c *kube.Client, name string, every time.Duration) ([]byte, error) {
	t := time.NewTicker(every)
	defer t.Stop()
	state, lastErr := "pending (not approved)", error(nil)
	for {
		var csr certv1.CertificateSigningRequest
		lastErr = c.Do(ctx, "GET", csrPath+"/"+name, nil, &csr)
		if lastErr == nil {
			if len(csr.Status.Certificate) > 0 {
				return csr.Status.Certificate, nil
			}
			for _, cond := range csr.Status.Conditions {
				switch cond.Type {
				case certv1.CertificateDenied, certv1.CertificateFailed:
					return nil, &NotApprovedError{CSR: name, State: string(cond.Type), Err: fmt.Errorf("%s: %s", cond.Reason, cond.Message)}
				case certv1.CertificateApproved:
					state = "approved but not signed yet (is kube-controller-manager's csrsigning controller running?)"
				}
			}
		}
		select {
		case <-ctx.Done():
			err := ctx.Err()
			if lastErr != nil {
				err = fmt.Errorf("%w (last look: %v)", err, lastErr)
			}
			return nil, &NotApprovedError{CSR: name, State: state, Err: err}
		case <-t.C:
		}
	}
}

// writeKubeconfig writes the certificate and key (0600) and a kubeconfig
// naming them, as the kubelet writes /var/lib/kubelet/kubeconfig.
func (n *Node) writeKubeconfig(boot kube.Config, cert, key []byte) (*kube.Client, error) {
	if err := os.MkdirAll(n.cfg.CertDir, 0o700); err != nil {
		return nil, fmt.Errorf("node %s: certificate directory: %w", n.cfg.Name, err)
	}
	pemPath := filepath.Join(n.cfg.CertDir, ClientCertFile)
	if err := writeFile(pemPath, append(append([]byte(nil), cert...), key...)); err != nil {
		return nil, err
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: default-cluster
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: default-auth
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: default-context
  context: {cluster: default-cluster, user: default-auth, namespace: default}
current-context: default-context
`, boot.Server, base64.StdEncoding.EncodeToString(boot.CAPEM), pemPath, pemPath)
	if err := writeFile(n.cfg.Kubeconfig, []byte(kc)); err != nil {
		return nil, err
	}
	cfg := boot
	cfg.CertPEM, cfg.KeyPEM = cert, key
	return kube.NewClient(cfg)
}

// existingClient is the client of the kubeconfig a former join wrote,
// while its certificate stays valid for a day more.
func (n *Node) existingClient() (*kube.Client, error) {
	cfg, err := kube.LoadKubeconfig(n.cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Dial = n.cfg.Dial
	pair, err := tls.X509KeyPair(cfg.CertPEM, cfg.KeyPEM)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	if leaf.Subject.CommonName != "system:node:"+n.cfg.Name || time.Until(leaf.NotAfter) < 24*time.Hour {
		return nil, errors.New("the certificate is another node's or expires within a day")
	}
	return kube.NewClient(cfg)
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// nodeRef is the owner reference the kubelet puts on what it makes for
// its node: the Lease; mirror pods with the node as their controller,
// which NodeRestriction requires.
func nodeRef(n *corev1.Node, controller bool) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID, Controller: &controller}}
}
