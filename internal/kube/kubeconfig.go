package kube

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"
)

// Config is what a client needs to reach an API: its URL and CA, and a
// client certificate or a bearer token.
type Config struct {
	// Server is the API's URL: https://localhost:6443.
	Server string
	// CAPEM verifies the server's certificate.
	CAPEM []byte
	// CertPEM and KeyPEM are the client's certificate and key.
	CertPEM, KeyPEM []byte
	// ServerName, when set, is the name the serving certificate must carry
	// instead of the server's host (cluster-bootstrap reaches localhost
	// with a certificate made for api-int, say).
	ServerName string
	// Token is a bearer token, for a user with no client certificate.
	Token string
	// Dial, when set, opens the connections (a node resolving the lab's
	// names through the DHCP server's DNS); nil dials directly.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// HTTP2 tries HTTP/2 (the host's clients); HandshakeTimeout bounds the
	// TLS handshake (0: only the request's 30 s).
	HTTP2            bool
	HandshakeTimeout time.Duration
}

// kubeconfig is the subset of a kubeconfig file Load reads: the one the
// installer writes in /opt/openshift/auth, or one that names files.
type kubeconfig struct {
	Clusters []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server        string `json:"server"`
			CA            string `json:"certificate-authority"`
			CAData        string `json:"certificate-authority-data"`
			TLSServerName string `json:"tls-server-name"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			Cert     string `json:"client-certificate"`
			CertData string `json:"client-certificate-data"`
			Key      string `json:"client-key"`
			KeyData  string `json:"client-key-data"`
			Token    string `json:"token"`
		} `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
	CurrentContext string `json:"current-context"`
}

// LoadKubeconfig reads the kubeconfig at path as the guest cluster's parts
// use it (ParseKubeconfig, files relative to the kubeconfig), with a client
// certificate: the installer's kubeconfigs have one.
func LoadKubeconfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("kubeconfig: %w", err)
	}
	return ParseKubeconfig(path, data, filepath.Dir(path), ParseOptions{})
}

// ParseOptions say what a kubeconfig may hold besides a client
// certificate.
type ParseOptions struct {
	// Token accepts a user with a bearer token and no client certificate.
	Token bool
}

// ParseKubeconfig reads a kubeconfig's current context (or its only
// context, or its only cluster and user when it has no context) from data,
// named name in errors: the server, the CA and the client certificate (or,
// with o.Token, a token), inline (-data) or in files relative to dir, as
// kubectl reads them. With dir empty (a kubeconfig read from a node) they
// must be inline.
func ParseKubeconfig(name string, data []byte, dir string, o ParseOptions) (Config, error) {
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return Config{}, fmt.Errorf("kubeconfig %s is not YAML: %w", name, err)
	}
	cluster, user, err := kc.pick()
	if err != nil {
		return Config{}, fmt.Errorf("kubeconfig %s: %w", name, err)
	}
	c := kc.Clusters[cluster].Cluster
	u := kc.Users[user].User
	if u, err := url.Parse(c.Server); err != nil || u.Scheme != "https" || u.Host == "" {
		return Config{}, fmt.Errorf("kubeconfig %s: cluster %q: server %q is not an https:// URL", name, kc.Clusters[cluster].Name, c.Server)
	}
	cfg := Config{Server: c.Server, ServerName: c.TLSServerName}
	for _, f := range []struct {
		field, data, file string
		into              *[]byte
	}{
		{"certificate-authority", c.CAData, c.CA, &cfg.CAPEM},
		{"client-certificate", u.CertData, u.Cert, &cfg.CertPEM},
		{"client-key", u.KeyData, u.Key, &cfg.KeyPEM},
	} {
		if *f.into, err = inlineOrFile(dir, f.data, f.file); err != nil {
			return Config{}, fmt.Errorf("kubeconfig %s: %s: %w", name, f.field, err)
		}
	}
	if o.Token {
		cfg.Token = u.Token
	}
	if (len(cfg.CertPEM) == 0 || len(cfg.KeyPEM) == 0) && cfg.Token == "" {
		if o.Token {
			return Config{}, fmt.Errorf("kubeconfig %s: user %q has neither a client certificate nor a token", name, kc.Users[user].Name)
		}
		return Config{}, fmt.Errorf("kubeconfig %s: user %q has no client-certificate(-data) and client-key(-data): bootlab authenticates with a client certificate only (the installer's auth/kubeconfig has one)", name, kc.Users[user].Name)
	}
	return cfg, nil
}

// pick finds the indexes of the cluster and user to use.
func (kc kubeconfig) pick() (cluster, user int, err error) {
	clusterName, userName := "", ""
	switch {
	case kc.CurrentContext != "":
		found := false
		for _, c := range kc.Contexts {
			if c.Name == kc.CurrentContext {
				clusterName, userName, found = c.Context.Cluster, c.Context.User, true
			}
		}
		if !found {
			return 0, 0, fmt.Errorf("current-context %q is not among its contexts", kc.CurrentContext)
		}
	case len(kc.Contexts) == 1:
		clusterName, userName = kc.Contexts[0].Context.Cluster, kc.Contexts[0].Context.User
	case len(kc.Contexts) > 1:
		return 0, 0, fmt.Errorf("%d contexts and no current-context: set current-context", len(kc.Contexts))
	case len(kc.Clusters) == 1 && len(kc.Users) == 1:
		return 0, 0, nil
	default:
		return 0, 0, fmt.Errorf("has no context, cluster or user to use: no context, and not exactly one cluster and one user (%d clusters, %d users)", len(kc.Clusters), len(kc.Users))
	}
	cluster, user = -1, -1
	for i, c := range kc.Clusters {
		if c.Name == clusterName {
			cluster = i
		}
	}
	for i, u := range kc.Users {
		if u.Name == userName {
			user = i
		}
	}
	if cluster < 0 {
		return 0, 0, fmt.Errorf("context names cluster %q, which is not among its clusters", clusterName)
	}
	if user < 0 {
		return 0, 0, fmt.Errorf("context names user %q, which is not among its users", userName)
	}
	return cluster, user, nil
}

func inlineOrFile(dir, data, file string) ([]byte, error) {
	if data != "" {
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, fmt.Errorf("the -data field is not base64: %w", err)
		}
		return b, nil
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
