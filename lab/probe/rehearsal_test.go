package probe

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/wire"
)

// A rehearsal bootstrap's config carries core's key the way the
// installer's bootstrap.ign does (passwd.users) and the lab's host key at
// sshd's path, 0600; the masters' served config is not a rehearsal one.
func TestGenerateRehearsalBootstrap(t *testing.T) {
	t.Parallel()
	in := testInput(t)
	in.Rehearsal = true
	_, err := Generate(in)
	require.Error(t, err, "keys are required")

	in.SSHAuthorizedKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm1dFvC5y2o9kS3B9lG4zS3VfN1nO0m6j3yWQf1m3Xh bootlab-t\n"
	in.SSHHostKeyPEM = []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n")
	cfgs, err := Generate(in)
	require.NoError(t, err)
	boot, err := ignition.Parse(cfgs.Bootstrap)
	require.NoError(t, err)
	require.Len(t, boot.Passwd.Users, 1)
	assert.Equal(t, "core", boot.Passwd.Users[0].Name)
	require.Len(t, boot.Passwd.Users[0].SSHAuthorizedKeys, 1)
	assert.Equal(t, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm1dFvC5y2o9kS3B9lG4zS3VfN1nO0m6j3yWQf1m3Xh bootlab-t", string(boot.Passwd.Users[0].SSHAuthorizedKeys[0]))
	key, ok, err := ignition.FileContents(boot, wire.SSHHostKeyPath)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, in.SSHHostKeyPEM, key)
	for _, f := range boot.Storage.Files {
		if f.Path == wire.SSHHostKeyPath {
			assert.Equal(t, 0o600, *f.Mode)
		}
	}
	pc := probeConfigOf(t, boot)
	assert.True(t, pc.Rehearsal)

	served, err := ignition.Parse(cfgs.MasterServed)
	require.NoError(t, err)
	assert.Empty(t, served.Passwd.Users)
	mc := probeConfigOf(t, served)
	assert.False(t, mc.Rehearsal)

	// The masters' config tells them where the bootstrap member is and
	// carries their etcd certificates, signed by the same etcd-signer as
	// the bootstrap's (which stage 07's render uses).
	require.NotNil(t, mc.Etcd)
	assert.Equal(t, wire.EtcdJoin{BootstrapIP: "192.168.126.10", Masters: 1}, *mc.Etcd)
	signerPEM, ok, err := ignition.FileContents(boot, wire.AssetDir+"/tls/etcd-signer.crt")
	require.NoError(t, err)
	require.True(t, ok)
	signer, err := x509.ParseCertificate(pemBlock(t, signerPEM))
	require.NoError(t, err)
	for _, name := range []string{"etcd-serving-master-0", "etcd-peer-master-0"} {
		crt, ok, err := ignition.FileContents(served, wire.EtcdAllCertsDir+"/"+name+".crt")
		require.NoError(t, err)
		require.True(t, ok, name)
		leaf, err := x509.ParseCertificate(pemBlock(t, crt))
		require.NoError(t, err)
		require.NoError(t, leaf.CheckSignatureFrom(signer), name+" is signed by the bootstrap's etcd-signer")
		assert.Contains(t, leaf.DNSNames, "master-0."+domain)
		assert.Equal(t, "192.168.126.11", leaf.IPAddresses[len(leaf.IPAddresses)-1].String())
	}
	for _, f := range served.Storage.Files {
		if strings.HasSuffix(f.Path, ".key") {
			assert.Equal(t, 0o600, *f.Mode, f.Path)
		}
	}
	_, ok, _ = ignition.FileContents(boot, wire.AssetDir+"/original_cvo_overrides.patch")
	assert.True(t, ok, "stage 14 patches the ClusterVersion with the overrides the installer set aside")

	in.Rehearsal = false
	plain, err := Generate(in)
	require.NoError(t, err)
	pm, err := ignition.Parse(plain.MasterServed)
	require.NoError(t, err)
	pmc := probeConfigOf(t, pm)
	assert.Nil(t, pmc.Etcd, "masters of a plain probe lab run no etcd")
	pb, err := ignition.Parse(plain.Bootstrap)
	require.NoError(t, err)
	_, ok, _ = ignition.FileContents(pb, wire.SSHHostKeyPath)
	assert.False(t, ok, "a plain probe bootstrap gets no host key")
}

func pemBlock(t *testing.T, data []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(data)
	require.NotNil(t, b)
	return b.Bytes
}

// A rehearsal master's served config carries the kubelet's bootstrap
// kubeconfig (api-int, the node-bootstrapper, 0600) and the release
// metadata, for its kubelet stand-in's join; a probe lab's does not.
func TestRehearsalMasterKubeletBootstrapFiles(t *testing.T) {
	in := rehearsalInput(t)
	served, kc, ok := servedMasterFile(t, in, wire.NodeBootstrapKubeconfigPath)
	require.True(t, ok)
	assert.Contains(t, string(kc), "server: https://api-int."+in.ClusterDomain+":6443")
	for _, f := range served.Storage.Files {
		if f.Path == wire.NodeBootstrapKubeconfigPath {
			assert.Equal(t, 0o600, *f.Mode)
		}
	}
	certPEM := kubeconfigField(t, kc, "client-certificate-data")
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper", cert.Subject.CommonName)
	rel, ok, err := ignition.FileContents(served, wire.ReleaseMetadataPath)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Contains(t, string(rel), `"kubernetesVersion"`)

	_, _, ok = servedMasterFile(t, testInput(t), wire.NodeBootstrapKubeconfigPath)
	assert.False(t, ok, "a probe lab's masters join nothing")
}

// servedMasterFile is a master's served config for in, and the file at
// path in it, if it is there.
func servedMasterFile(t *testing.T, in Input, path string) (served types.Config, data []byte, ok bool) {
	t.Helper()
	cfgs, err := Generate(in)
	require.NoError(t, err)
	served, err = ignition.Parse(cfgs.MasterServed)
	require.NoError(t, err)
	data, ok, err = ignition.FileContents(served, path)
	require.NoError(t, err)
	return served, data, ok
}

func kubeconfigField(t *testing.T, kc []byte, field string) []byte {
	t.Helper()
	for _, l := range strings.Split(string(kc), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+": "); ok {
			data, err := base64.StdEncoding.DecodeString(v)
			require.NoError(t, err)
			return data
		}
	}
	require.FailNow(t, "no "+field)
	return nil
}

// A rehearsal master's served config carries its kube-apiserver installer
// stand-in's kubeconfig (api-int, the operator's identity, 0600); a probe
// lab's does not.
func TestRehearsalMasterKASOperatorKubeconfig(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rehearsal bool
	}{{"rehearsal", true}, {"probe", false}} {
		in := testInput(t)
		if tc.rehearsal {
			in = rehearsalInput(t)
		}
		served, kc, ok := servedMasterFile(t, in, wire.KASOperatorKubeconfigPath)
		require.Equal(t, tc.rehearsal, ok, tc.name)
		if !ok {
			continue
		}
		assert.Contains(t, string(kc), "server: https://api-int."+in.ClusterDomain+":6443")
		for _, f := range served.Storage.Files {
			if f.Path == wire.KASOperatorKubeconfigPath {
				assert.Equal(t, 0o600, *f.Mode)
			}
		}
		cert, err := x509.ParseCertificate(pemBlock(t, kubeconfigField(t, kc, "client-certificate-data")))
		require.NoError(t, err)
		assert.Equal(t, "system:serviceaccount:openshift-kube-apiserver-operator:kube-apiserver-operator", cert.Subject.CommonName)
		// The controller manager's and scheduler's client pairs: their own
		// users, no group (the RBAC bootstrap roles bind the users), keys 0600.
		for _, c := range []string{"kube-controller-manager", "kube-scheduler"} {
			crt, ok, err := ignition.FileContents(served, wire.OperandClientCertPath(c))
			require.NoError(t, err)
			require.True(t, ok, c)
			cert, err := x509.ParseCertificate(pemBlock(t, crt))
			require.NoError(t, err)
			assert.Equal(t, "system:"+c, cert.Subject.CommonName)
			assert.Empty(t, cert.Subject.Organization, c)
			for _, f := range served.Storage.Files {
				if f.Path == wire.OperandClientKeyPath(c) {
					assert.Equal(t, 0o600, *f.Mode)
				}
			}
			_, ok, err = ignition.FileContents(served, wire.OperandClientKeyPath(c))
			require.NoError(t, err)
			assert.True(t, ok, c)
		}
	}
}

// probeConfigOf is the probe config (wire.ConfigPath) an Ignition config
// carries, as the agent reads it.
func probeConfigOf(t *testing.T, cfg types.Config) *wire.Config {
	t.Helper()
	data, ok, err := ignition.FileContents(cfg, wire.ConfigPath)
	require.NoError(t, err)
	require.True(t, ok, "no %s in the Ignition config", wire.ConfigPath)
	var c wire.Config
	require.NoError(t, json.Unmarshal(data, &c))
	return &c
}
