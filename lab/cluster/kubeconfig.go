package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bootlab/bootlab/internal/kube"
)

// Kubeconfig is the part of a kubeconfig file bootlab uses: the current
// context's server, CA and client credentials, as internal/kube reads
// them.
type Kubeconfig struct {
	Path   string
	Server string
	// TLSServerName is the name the server's certificate is checked for
	// when Server is an address (a kubeconfig `lab kubeconfig` wrote).
	TLSServerName string
	CAData        []byte
	CertData      []byte
	KeyData       []byte
	Token         string
}

// LoadKubeconfig reads the kubeconfig at path (the installer's
// <assets>/auth/kubeconfig) and resolves its current context.
func LoadKubeconfig(path string) (*Kubeconfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("kubeconfig %s not found: `bootlab lab up` with a pull secret makes it (openshift-install create ignition-configs)", path)
		}
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	return ParseKubeconfig(path, data, filepath.Dir(path))
}

// ParseKubeconfig reads a kubeconfig's current context from data, named
// path in errors (kube.ParseKubeconfig, a client certificate or a token).
// Files it names are read relative to dir; with dir empty (a kubeconfig
// read from a node) it must carry its certificates inline.
func ParseKubeconfig(path string, data []byte, dir string) (*Kubeconfig, error) {
	cfg, err := kube.ParseKubeconfig(path, data, dir, kube.ParseOptions{Token: true})
	if err != nil {
		return nil, err
	}
	return &Kubeconfig{Path: path, Server: cfg.Server, TLSServerName: cfg.ServerName,
		CAData: cfg.CAPEM, CertData: cfg.CertPEM, KeyData: cfg.KeyPEM, Token: cfg.Token}, nil
}

// config is k as internal/kube's client takes it, dialling with dial.
func (k *Kubeconfig) config(dial DialFunc) kube.Config {
	return kube.Config{Server: k.Server, ServerName: k.TLSServerName, CAPEM: k.CAData, CertPEM: k.CertData, KeyPEM: k.KeyData,
		Token: k.Token, Dial: dial, HTTP2: true, HandshakeTimeout: 10 * time.Second}
}
