// Package cptest is the one fixture of a rehearsal bootstrap's
// control-plane secrets (tls/ and auth/kubeconfig), for the tests that
// check them (internal/controlplane) and the stage checks that read them
// (stages). Test code only.
package cptest

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/lab/probe"
)

// Secrets are the files a rehearsal bootstrap holds for its control plane,
// by controlplane's names: the lab CA, ControlPlaneTLS's pairs and keys,
// stage 07's etcd CA bundle and client pair (for 127.0.0.1 too, so a
// loopback etcd takes it), and a kubeconfig. ca is the lab CA.
func Secrets(t testing.TB) (files map[string][]byte, ca pki.Pair) {
	t.Helper()
	ca, err := pki.NewCA("bootlab-fixture-root")
	require.NoError(t, err)
	files = map[string][]byte{controlplane.RootCA: ca.CertPEM, controlplane.ClientCABundle: ca.CertPEM}
	tls, err := probe.ControlPlaneTLS(ca, "ocp.lab.local", controlplane.DefaultServiceCIDR)
	require.NoError(t, err)
	for _, f := range tls {
		files[f.Name] = f.Data
	}
	signer, err := pki.NewIntermediate(ca, "etcd-signer")
	require.NoError(t, err)
	client, err := pki.NewLeaf(signer, "etcd", nil, nil, []net.IP{net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	files[controlplane.EtcdCABundle] = append(append([]byte{}, signer.CertPEM...), ca.CertPEM...)
	files[controlplane.EtcdClientCert], files[controlplane.EtcdClientKey] = client.CertPEM, client.KeyPEM
	files[controlplane.Kubeconfig] = []byte("users:\n- name: admin\n  user:\n    client-certificate-data: AAAA\n")
	return files, ca
}

// Write lays Secrets out under root as a bootstrap has them after stage
// 07: opt/openshift/tls/ and opt/openshift/auth/kubeconfig, all 0600.
func Write(t testing.TB, root string) pki.Pair {
	t.Helper()
	files, ca := Secrets(t)
	for name, data := range files {
		dir := filepath.Join(root, "opt/openshift/tls")
		if name == controlplane.Kubeconfig {
			dir = filepath.Join(root, "opt/openshift/auth")
		}
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	return ca
}
