package probe

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/netip"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/pki"
)

// TLSFile is one file of /opt/openshift/tls: its name there, mode and
// content.
type TLSFile struct {
	Name string
	Mode int
	Data []byte
}

// ControlPlaneTLS makes what the installer puts in tls/ for the bootstrap
// control plane, signed by the lab CA ca: the kube-apiserver's serving
// pairs (api and api-int behind the load balancer; localhost; the service
// network's kubernetes.default.svc and first IP of serviceCIDR) and the
// service-account signing key pair, the API's kubelet client pair, and
// the kubelet-signer (an intermediate of ca) the controller manager signs
// the kubelets' certificates with. Keys are 0600. Every call makes new
// keys.
func ControlPlaneTLS(ca pki.Pair, clusterDomain, serviceCIDR string) ([]TLSFile, error) {
	return controlPlaneTLS(nil, ca, clusterDomain, serviceCIDR)
}

// controlPlaneTLS is ControlPlaneTLS with its pairs and keys from iss.
func controlPlaneTLS(iss *pki.Issuer, ca pki.Pair, clusterDomain, serviceCIDR string) ([]TLSFile, error) {
	svc, err := firstServiceIP(serviceCIDR)
	if err != nil {
		return nil, err
	}
	var out []TLSFile
	for _, s := range []struct {
		cert, key, cn string
		dns           []string
		ips           []net.IP
	}{
		{controlplane.LBServerCert, controlplane.LBServerKey, "api." + clusterDomain,
			[]string{"api." + clusterDomain, "api-int." + clusterDomain}, nil},
		{controlplane.LocalhostServerCert, controlplane.LocalhostServerKey, "localhost",
			[]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}},
		{controlplane.ServiceNetworkServerCert, controlplane.ServiceNetworkServerKey, "kubernetes.default.svc",
			[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "openshift", "openshift.default", "openshift.default.svc"},
			[]net.IP{svc}},
	} {
		p, err := iss.Leaf(ca, s.cn, nil, s.dns, s.ips)
		if err != nil {
			return nil, err
		}
		out = append(out, TLSFile{s.cert, 0o644, p.CertPEM}, TLSFile{s.key, 0o600, p.KeyPEM})
	}
	saKey, err := iss.Key("service-account")
	if err != nil {
		return nil, err
	}
	pub, err := publicKeyPEM(saKey)
	if err != nil {
		return nil, err
	}
	signer, err := iss.Intermediate(ca, "kubelet-signer")
	if err != nil {
		return nil, err
	}
	// The API's client certificate for the kubelets (logs, exec), as the
	// installer's kube-apiserver-to-kubelet client: the masters' pods
	// name it (secret kubelet-client).
	kc, err := iss.Client(ca, "system:kube-apiserver", []string{"kube-master"})
	if err != nil {
		return nil, err
	}
	out = append(out, TLSFile{controlplane.KubeletClientCert, 0o644, kc.CertPEM}, TLSFile{controlplane.KubeletClientKey, 0o600, kc.KeyPEM})
	return append(out,
		TLSFile{controlplane.ServiceAccountKey, 0o600, saKey},
		TLSFile{controlplane.ServiceAccountPub, 0o644, pub},
		TLSFile{controlplane.KubeletSignerCert, 0o644, signer.CertPEM},
		TLSFile{controlplane.KubeletSignerKey, 0o600, signer.KeyPEM}), nil
}

// publicKeyPEM is the PKIX public key PEM of a PKCS#8 private key PEM.
func publicKeyPEM(keyPEM []byte) ([]byte, error) {
	b, _ := pem.Decode(keyPEM)
	if b == nil {
		return nil, fmt.Errorf("service-account key: no PEM block")
	}
	key, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("service-account key: a %T cannot sign", key)
	}
	der, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// firstServiceIP is the kubernetes service's address: the first of the
// service network.
func firstServiceIP(cidr string) (net.IP, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return nil, fmt.Errorf("service network %q is not an IPv4 CIDR", cidr)
	}
	return net.IP(p.Masked().Addr().Next().AsSlice()), nil
}
