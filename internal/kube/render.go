package kube

import (
	"encoding/base64"

	"sigs.k8s.io/yaml"
)

// The kubeconfig file as kubectl reads it (client-go's clientcmd v1), the
// fields bootlab writes.
type (
	kcOut struct {
		APIVersion     string      `json:"apiVersion"`
		Kind           string      `json:"kind"`
		Clusters       []kcCluster `json:"clusters"`
		Users          []kcUser    `json:"users"`
		Contexts       []kcContext `json:"contexts"`
		CurrentContext string      `json:"current-context"`
	}
	kcCluster struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			TLSServerName            string `json:"tls-server-name,omitempty"`
			CertificateAuthorityData string `json:"certificate-authority-data,omitempty"`
		} `json:"cluster"`
	}
	kcUser struct {
		Name string `json:"name"`
		User struct {
			ClientCertificateData string `json:"client-certificate-data,omitempty"`
			ClientKeyData         string `json:"client-key-data,omitempty"`
			Token                 string `json:"token,omitempty"`
		} `json:"user"`
	}
	kcContext struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	}
)

// RenderKubeconfig is cfg as a kubeconfig of its own with one context, name
// (cluster, user and context all named so): its server and tls-server-name,
// the CA, client certificate and key inline, so the file works wherever it
// is copied, or its token.
func RenderKubeconfig(name string, cfg Config) ([]byte, error) {
	enc := base64.StdEncoding.EncodeToString
	var c kcCluster
	c.Name = name
	c.Cluster.Server, c.Cluster.TLSServerName = cfg.Server, cfg.ServerName
	if len(cfg.CAPEM) > 0 {
		c.Cluster.CertificateAuthorityData = enc(cfg.CAPEM)
	}
	var u kcUser
	u.Name = name
	if len(cfg.CertPEM) > 0 {
		u.User.ClientCertificateData, u.User.ClientKeyData = enc(cfg.CertPEM), enc(cfg.KeyPEM)
	}
	u.User.Token = cfg.Token
	var x kcContext
	x.Name = name
	x.Context.Cluster, x.Context.User = name, name
	return yaml.Marshal(kcOut{APIVersion: "v1", Kind: "Config", Clusters: []kcCluster{c}, Users: []kcUser{u},
		Contexts: []kcContext{x}, CurrentContext: name})
}
