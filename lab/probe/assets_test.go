package probe

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/spec"
)

func rehearsalInput(t *testing.T) Input {
	in := testInput(t)
	in.Rehearsal = true
	in.SSHAuthorizedKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm1dFvC5y2o9kS3B9lG4zS3VfN1nO0m6j3yWQf1m3Xh bootlab-t\n"
	in.SSHHostKeyPEM = []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n")
	in.Assets = AssetInput{ClusterName: "ocp", BaseDomain: "lab.local", MachineCIDR: "192.168.126.0/24", Masters: 3, Workers: 2,
		Release: ReleaseFor("4.19.10")}
	return in
}

// The rehearsal bootstrap gets /opt/openshift as the installer lays it:
// the manifests stage 01 checks, kubeconfigs (0600) whose client
// certificates the lab CA signed, secrets 0600, and bootkube.sh with the
// helpers it sources in /usr/local/bin.
func TestRehearsalAssets(t *testing.T) {
	t.Parallel()
	in := rehearsalInput(t)
	cfgs, err := Generate(in)
	require.NoError(t, err)
	boot, err := ignition.Parse(cfgs.Bootstrap)
	require.NoError(t, err)
	modes := map[string]int{}
	for _, f := range boot.Storage.Files {
		modes[f.Path] = *f.Mode
	}
	read := func(p string) []byte {
		data, ok, err := ignition.FileContents(boot, p)
		require.NoError(t, err, p)
		require.True(t, ok, "%s is in the bootstrap Ignition", p)
		return data
	}
	for p, want := range map[string]string{
		"/opt/openshift/manifests/cluster-config.yaml":                           "ConfigMap/cluster-config-v1",
		"/opt/openshift/manifests/04-openshift-machine-config-operator.yaml":     "Namespace/openshift-machine-config-operator",
		"/opt/openshift/manifests/cluster-infrastructure-02-config.yml":          "Infrastructure/cluster",
		"/opt/openshift/manifests/cluster-network-02-config.yml":                 "Network/cluster",
		"/opt/openshift/openshift/99_feature-gate.yaml":                          "FeatureGate/cluster",
		"/opt/openshift/openshift/99_openshift-machineconfig_99-master-ssh.yaml": "MachineConfig/99-master-ssh",
	} {
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal(read(p), &m), p)
		assert.Equal(t, want, m.Kind+"/"+m.Metadata.Name, p)
	}
	assert.Contains(t, string(read("/opt/openshift/manifests/cluster-infrastructure-02-config.yml")), "apiServerInternalURI: https://api-int.ocp.lab.local:6443")
	assert.Contains(t, string(read("/opt/openshift/manifests/cluster-config.yaml")), "cidr: 192.168.126.0/24")

	ca := x509.NewCertPool()
	require.True(t, ca.AppendCertsFromPEM(in.PKI.CA.CertPEM))
	dir := t.TempDir()
	for name, server := range map[string]string{"kubeconfig": "https://api.ocp.lab.local:6443", "kubeconfig-loopback": "https://localhost:6443", "kubeconfig-kubelet": "https://api-int.ocp.lab.local:6443"} {
		p := "/opt/openshift/auth/" + name
		assert.Equal(t, 0o600, modes[p], p)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), read(p), 0o600))
		kc, err := cluster.LoadKubeconfig(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, server, kc.Server)
		assert.Equal(t, in.PKI.CA.CertPEM, kc.CAData)
		b, _ := pem.Decode(kc.CertData)
		require.NotNil(t, b)
		c, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		_, err = c.Verify(x509.VerifyOptions{Roots: ca, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		assert.NoError(t, err, "%s's client certificate is signed by the lab CA", name)
	}
	// The control plane's serving pairs and service-account keys: the
	// kube-apiserver's check passes on them (with a stand-in for stage 07's
	// etcd files, which the etcd render writes later).
	tls := map[string][]byte{}
	for _, f := range []string{controlplane.LBServerCert, controlplane.LBServerKey, controlplane.LocalhostServerCert, controlplane.LocalhostServerKey,
		controlplane.ServiceNetworkServerCert, controlplane.ServiceNetworkServerKey, controlplane.ServiceAccountKey, controlplane.ServiceAccountPub,
		controlplane.RootCA, controlplane.ClientCABundle, controlplane.KubeletClientCert, controlplane.KubeletClientKey, controlplane.KubeletSignerCert} {
		p := "/opt/openshift/tls/" + f
		tls[f] = read(p)
		if strings.HasSuffix(f, ".key") {
			assert.Equal(t, 0o600, modes[p], "%s is a secret", p)
		}
	}
	etcdClient, err := pki.NewClient(in.PKI.CA, "etcd", nil)
	require.NoError(t, err)
	tls[controlplane.EtcdCABundle], tls[controlplane.EtcdClientCert], tls[controlplane.EtcdClientKey] = in.PKI.CA.CertPEM, etcdClient.CertPEM, etcdClient.KeyPEM
	assert.NoError(t, controlplane.CheckSecrets(controlplane.KubeAPIServer, func(name string) ([]byte, error) { return tls[name], nil }))
	for _, p := range []string{"/opt/openshift/tls/machine-config-server.key", "/opt/openshift/manifests/openshift-config-secret-pull-secret.yaml", "/opt/openshift/manifests/machine-config-server-tls-secret.yaml", wire.SSHHostKeyPath} {
		assert.Equal(t, 0o600, modes[p], "%s is a secret", p)
	}
	assert.Equal(t, in.PKI.CA.CertPEM, read("/opt/openshift/tls/root-ca.crt"))
	for _, s := range []string{"bootkube.sh", "release-image.sh", "bootstrap-service-record.sh", "bootstrap-verify-api-server-urls.sh"} {
		p := "/usr/local/bin/" + s
		assert.Equal(t, 0o555, modes[p], p)
		assert.True(t, strings.HasPrefix(string(read(p)), "#!/usr/bin/env bash\n"), p)
	}
	assert.Contains(t, string(read("/usr/local/bin/release-image.sh")), "RELEASE_IMAGE_DIGEST="+ReleaseFor("4.19.10").Image+"\n")
}

func TestReleaseFor(t *testing.T) {
	t.Parallel()
	r := ReleaseFor("4.19.10")
	assert.Equal(t, "1.32.13", r.KubernetesVersion)
	assert.Equal(t, "3.5.21", r.EtcdVersion, "the etcd bootlab builds for 4.19")
	assert.Equal(t, "3.5.26", r.EtcdShipped, "the etcd 4.19 ships")
	assert.Equal(t, r, ReleaseFor("4.19.10"), "stable")
	assert.NotEqual(t, r.Image, ReleaseFor("4.18.1").Image)
	assert.Regexp(t, `^quay\.io/openshift-release-dev/ocp-release@sha256:[0-9a-f]{64}$`, r.Image)
}

// A spec's openshift.serviceNetwork and clusterNetwork reach the
// rehearsal's install-config (kube-system/cluster-config-v1), its Network
// config (what the renders of stages 08 and 09 read), and the API's
// service-network certificate, which names the service network's first
// address (the kubernetes service's); unset, they are the installer's
// defaults.
func TestRehearsalAssetsTakeTheSpecsNetworks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                  string
		service               []string
		cluster               []spec.ClusterNetwork
		wantService, wantPods string
		wantHostPrefix        int
		wantIP                string
	}{
		{"unset", nil, nil, "172.30.0.0/16", "10.128.0.0/14", 23, "172.30.0.1"},
		{"the spec's", []string{"172.31.0.0/16"}, []spec.ClusterNetwork{{CIDR: "10.132.0.0/14", HostPrefix: 24}}, "172.31.0.0/16", "10.132.0.0/14", 24, "172.31.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := rehearsalInput(t)
			in.Assets.ServiceNetwork, in.Assets.ClusterNetwork = tc.service, tc.cluster
			files, err := RehearsalAssets(in, in.Assets)
			require.NoError(t, err)
			read := func(p string) []byte {
				for _, f := range files {
					if f.Path == p {
						return f.Data
					}
				}
				require.FailNow(t, "no "+p)
				return nil
			}
			var cm struct {
				Data map[string]string `json:"data"`
			}
			require.NoError(t, yaml.Unmarshal(read(wire.AssetDir+"/manifests/cluster-config.yaml"), &cm))
			var ic struct {
				Networking struct {
					ClusterNetwork []spec.ClusterNetwork `json:"clusterNetwork"`
					ServiceNetwork []string              `json:"serviceNetwork"`
				} `json:"networking"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(cm.Data["install-config"]), &ic))
			assert.Equal(t, []string{tc.wantService}, ic.Networking.ServiceNetwork, "install-config networking.serviceNetwork")
			assert.Equal(t, []spec.ClusterNetwork{{CIDR: tc.wantPods, HostPrefix: tc.wantHostPrefix}}, ic.Networking.ClusterNetwork, "install-config networking.clusterNetwork")

			n, err := controlplane.ParseNetwork(read(wire.AssetDir + "/" + controlplane.NetworkManifest))
			require.NoError(t, err)
			assert.Equal(t, controlplane.Network{ServiceCIDR: tc.wantService, ClusterCIDR: tc.wantPods}, n)

			b, _ := pem.Decode(read(wire.AssetDir + "/tls/" + controlplane.ServiceNetworkServerCert))
			require.NotNil(t, b)
			cert, err := x509.ParseCertificate(b.Bytes)
			require.NoError(t, err)
			require.Len(t, cert.IPAddresses, 1)
			assert.Equal(t, tc.wantIP, cert.IPAddresses[0].String())
		})
	}
}
