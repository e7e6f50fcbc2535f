package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// Kubeconfig is the part of a kubeconfig file bootlab uses: the current
// context's server, CA and client credentials.
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

type kubeconfigFile struct {
	CurrentContext string `json:"current-context"`
	Clusters       []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			TLSServerName            string `json:"tls-server-name"`
			CertificateAuthority     string `json:"certificate-authority"`
			CertificateAuthorityData string `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			ClientCertificate     string `json:"client-certificate"`
			ClientCertificateData string `json:"client-certificate-data"`
			ClientKey             string `json:"client-key"`
			ClientKeyData         string `json:"client-key-data"`
			Token                 string `json:"token"`
		} `json:"user"`
	} `json:"users"`
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
// path in errors. Files it names are read relative to dir; with dir empty
// (a kubeconfig read from a node) it must carry its certificates inline.
func ParseKubeconfig(path string, data []byte, dir string) (*Kubeconfig, error) {
	var err error
	var f kubeconfigFile
	if err = yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse kubeconfig %s: %w", path, err)
	}
	if len(f.Contexts) == 0 || len(f.Clusters) == 0 || len(f.Users) == 0 {
		return nil, fmt.Errorf("kubeconfig %s has no context, cluster or user", path)
	}
	ctx := f.Contexts[0]
	for _, c := range f.Contexts {
		if c.Name == f.CurrentContext {
			ctx = c
		}
	}
	k := &Kubeconfig{Path: path}
	found := false
	for _, c := range f.Clusters {
		if c.Name != ctx.Context.Cluster {
			continue
		}
		found = true
		k.Server, k.TLSServerName = c.Cluster.Server, c.Cluster.TLSServerName
		if k.CAData, err = dataOrFile(c.Cluster.CertificateAuthorityData, c.Cluster.CertificateAuthority, dir); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: certificate-authority: %w", path, err)
		}
	}
	if !found || k.Server == "" {
		return nil, fmt.Errorf("kubeconfig %s: context %q names no cluster with a server", path, ctx.Name)
	}
	for _, u := range f.Users {
		if u.Name != ctx.Context.User {
			continue
		}
		if k.CertData, err = dataOrFile(u.User.ClientCertificateData, u.User.ClientCertificate, dir); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: client-certificate: %w", path, err)
		}
		if k.KeyData, err = dataOrFile(u.User.ClientKeyData, u.User.ClientKey, dir); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: client-key: %w", path, err)
		}
		k.Token = u.User.Token
	}
	if len(k.CertData) == 0 && k.Token == "" {
		return nil, fmt.Errorf("kubeconfig %s: user %q has neither a client certificate nor a token", path, ctx.Context.User)
	}
	return k, nil
}

func dataOrFile(b64, file, dir string) ([]byte, error) {
	if b64 != "" {
		return base64.StdEncoding.DecodeString(b64)
	}
	if file == "" {
		return nil, nil
	}
	if dir == "" {
		return nil, fmt.Errorf("names the file %s: a kubeconfig read from a node must carry its certificates inline (-data)", file)
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	return os.ReadFile(file)
}

// TLSConfig returns the TLS client configuration of the kubeconfig.
func (k *Kubeconfig) TLSConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: k.TLSServerName}
	if len(k.CAData) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(k.CAData) {
			return nil, fmt.Errorf("kubeconfig %s: certificate-authority-data holds no PEM certificate", k.Path)
		}
		cfg.RootCAs = pool
	}
	if len(k.CertData) > 0 {
		cert, err := tls.X509KeyPair(k.CertData, k.KeyData)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: client certificate: %w", k.Path, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
