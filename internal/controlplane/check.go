package controlplane

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// CheckPod says whether doc (a bootstrap-manifests/*-pod.yaml) is
// component c's pod as the lab renders it for in: its namespace and name,
// a container that runs the program by its name, and every flag the lab's
// PKI and layout decide, with that value. It is what `stage validate`
// checks on a node and what the renders' tests check.
func CheckPod(c Component, in Input, doc []byte) error {
	w := Wanted(c, in.withDefaults())
	var pod corev1.Pod
	if err := yaml.Unmarshal(doc, &pod); err != nil {
		return fmt.Errorf("%s does not parse as a Pod: %v", w.File, err)
	}
	if pod.Namespace != w.Namespace || pod.Name != w.Name {
		return fmt.Errorf("%s is pod %s/%s, want %s/%s", w.File, pod.Namespace, pod.Name, w.Namespace, w.Name)
	}
	var ctr *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == w.Container {
			ctr = &pod.Spec.Containers[i]
		}
	}
	if ctr == nil {
		return fmt.Errorf("%s: pod %s/%s has no container %s", w.File, w.Namespace, w.Name, w.Container)
	}
	cmd := CommandLine(*ctr)
	if len(cmd) == 0 || path.Base(cmd[0]) != string(c) {
		return fmt.Errorf("%s: container %s runs %q, want the program %s (the node's link to hyperkube)", w.File, w.Container, strings.Join(cmd, " "), c)
	}
	have := flagValues(cmd[1:])
	var wrong []string
	for k, want := range flagValues(w.Args) {
		if k == "v" {
			continue // verbosity is the learner's to change
		}
		if got := have[k]; !slices.Equal(got, want) {
			wrong = append(wrong, fmt.Sprintf("--%s is %q, want %q", k, strings.Join(got, ","), strings.Join(want, ",")))
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		return fmt.Errorf("%s: %s", w.File, strings.Join(wrong, "; "))
	}
	return nil
}

// SecretFiles are the files of SecretsDir component c's pod reads.
func SecretFiles(c Component) []string {
	switch c {
	case KubeAPIServer:
		return []string{EtcdCABundle, EtcdClientCert, EtcdClientKey, LBServerCert, LBServerKey, LocalhostServerCert, LocalhostServerKey,
			ServiceNetworkServerCert, ServiceNetworkServerKey, ClientCABundle, ServiceAccountPub, ServiceAccountKey,
			KubeletClientCert, KubeletClientKey, KubeletSignerCert}
	case KubeControllerManager:
		return []string{Kubeconfig, ServiceAccountKey, RootCA, KubeletSignerCert, KubeletSignerKey}
	default:
		return []string{Kubeconfig}
	}
}

// ReadSecret reads one of the secret files by its name in SecretsDir.
type ReadSecret func(name string) ([]byte, error)

// CheckSecrets says whether the files component c's pod reads are there
// and belong together: each serving certificate is signed by the lab CA
// and pairs with its key, the etcd client certificate is signed by the
// etcd CA bundle and pairs with its key, and the service-account public
// key is the private key's.
func CheckSecrets(c Component, read ReadSecret) error {
	files := map[string][]byte{}
	for _, f := range SecretFiles(c) {
		b, err := read(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		files[f] = b
	}
	switch c {
	case KubeAPIServer:
		rootCA, err := read(RootCA)
		if err != nil {
			return fmt.Errorf("%s: %w", RootCA, err)
		}
		for _, p := range [][2]string{{LBServerCert, LBServerKey}, {LocalhostServerCert, LocalhostServerKey}, {ServiceNetworkServerCert, ServiceNetworkServerKey}} {
			if err := signedPair(files[p[0]], files[p[1]], rootCA, x509.ExtKeyUsageServerAuth); err != nil {
				return fmt.Errorf("%s: %w", p[0], err)
			}
		}
		if err := signedPair(files[EtcdClientCert], files[EtcdClientKey], files[EtcdCABundle], x509.ExtKeyUsageClientAuth); err != nil {
			return fmt.Errorf("%s: %w", EtcdClientCert, err)
		}
		if _, err := certs(files[ClientCABundle]); err != nil {
			return fmt.Errorf("%s: %w", ClientCABundle, err)
		}
		if err := signedPair(files[KubeletClientCert], files[KubeletClientKey], rootCA, x509.ExtKeyUsageClientAuth); err != nil {
			return fmt.Errorf("%s: %w", KubeletClientCert, err)
		}
		if err := isCA(files[KubeletSignerCert]); err != nil {
			return err
		}
		return samePublicKey(files[ServiceAccountPub], files[ServiceAccountKey])
	case KubeControllerManager:
		if _, err := certs(files[RootCA]); err != nil {
			return fmt.Errorf("%s: %w", RootCA, err)
		}
		if _, err := privateKey(files[ServiceAccountKey]); err != nil {
			return fmt.Errorf("%s: %w", ServiceAccountKey, err)
		}
		if err := isCA(files[KubeletSignerCert]); err != nil {
			return err
		}
		signer, _ := certs(files[KubeletSignerCert])
		key, err := privateKey(files[KubeletSignerKey])
		if err != nil {
			return fmt.Errorf("%s: %w", KubeletSignerKey, err)
		}
		if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(signer[0].PublicKey) {
			return fmt.Errorf("%s is not the key of %s", KubeletSignerKey, KubeletSignerCert)
		}
	}
	if !bytes.Contains(files[Kubeconfig], []byte("client-certificate")) {
		return fmt.Errorf("%s holds no client certificate", Kubeconfig)
	}
	return nil
}

// isCA checks that the kubelet signer is a CA certificate.
func isCA(pemData []byte) error {
	signer, err := certs(pemData)
	if err != nil {
		return fmt.Errorf("%s: %w", KubeletSignerCert, err)
	}
	if !signer[0].IsCA {
		return fmt.Errorf("%s is not a CA certificate: the controller manager signs the kubelets' certificates with it", KubeletSignerCert)
	}
	return nil
}

func certs(pemData []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := pemData; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return out, nil
}

func privateKey(pemData []byte) (crypto.Signer, error) {
	b, _ := pem.Decode(pemData)
	if b == nil {
		return nil, errors.New("holds no PEM key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("a %s block that is no private key bootlab reads", b.Type)
}

type equaler interface{ Equal(crypto.PublicKey) bool }

// signedPair checks that the first certificate of certPEM verifies
// against caPEM for usage and that keyPEM is its key.
func signedPair(certPEM, keyPEM, caPEM []byte, usage x509.ExtKeyUsage) error {
	cs, err := certs(certPEM)
	if err != nil {
		return err
	}
	cas, err := certs(caPEM)
	if err != nil {
		return fmt.Errorf("its CA: %w", err)
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	inter := x509.NewCertPool()
	for _, c := range cs[1:] {
		inter.AddCert(c)
	}
	if _, err := cs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return fmt.Errorf("not signed by its CA: %w", err)
	}
	key, err := privateKey(keyPEM)
	if err != nil {
		return err
	}
	if pub, ok := key.Public().(equaler); !ok || !pub.Equal(cs[0].PublicKey) {
		return errors.New("its key is not the certificate's")
	}
	return nil
}

func samePublicKey(pubPEM, keyPEM []byte) error {
	b, _ := pem.Decode(pubPEM)
	if b == nil {
		return fmt.Errorf("%s holds no PEM public key", ServiceAccountPub)
	}
	pub, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return fmt.Errorf("%s: %w", ServiceAccountPub, err)
	}
	key, err := privateKey(keyPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", ServiceAccountKey, err)
	}
	if k, ok := key.Public().(equaler); !ok || !k.Equal(pub) {
		return fmt.Errorf("%s is not the public key of %s: tokens signed with one would not verify with the other", ServiceAccountPub, ServiceAccountKey)
	}
	return nil
}
