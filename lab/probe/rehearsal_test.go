package probe

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/ignition"
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
	key, ok, err := ignition.FileContents(boot, SSHHostKeyPath)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, in.SSHHostKeyPEM, key)
	for _, f := range boot.Storage.Files {
		if f.Path == SSHHostKeyPath {
			assert.Equal(t, 0o600, *f.Mode)
		}
	}
	pc, err := ParseProbeConfig(boot)
	require.NoError(t, err)
	assert.True(t, pc.Rehearsal)

	served, err := ignition.Parse(cfgs.MasterServed)
	require.NoError(t, err)
	assert.Empty(t, served.Passwd.Users)
	mc, err := ParseProbeConfig(served)
	require.NoError(t, err)
	assert.False(t, mc.Rehearsal)

	// The masters' config tells them where the bootstrap member is and
	// carries their etcd certificates, signed by the same etcd-signer as
	// the bootstrap's (which stage 07's render uses).
	require.NotNil(t, mc.Etcd)
	assert.Equal(t, EtcdJoin{BootstrapIP: "192.168.126.10", Masters: 1}, *mc.Etcd)
	signerPEM, ok, err := ignition.FileContents(boot, AssetDir+"/tls/etcd-signer.crt")
	require.NoError(t, err)
	require.True(t, ok)
	signer, err := x509.ParseCertificate(pemBlock(t, signerPEM))
	require.NoError(t, err)
	for _, name := range []string{"etcd-serving-master-0", "etcd-peer-master-0"} {
		crt, ok, err := ignition.FileContents(served, EtcdAllCertsDir+"/"+name+".crt")
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
	_, ok, _ = ignition.FileContents(boot, AssetDir+"/original_cvo_overrides.patch")
	assert.True(t, ok, "stage 14 patches the ClusterVersion with the overrides the installer set aside")

	in.Rehearsal = false
	plain, err := Generate(in)
	require.NoError(t, err)
	pm, err := ignition.Parse(plain.MasterServed)
	require.NoError(t, err)
	pmc, err := ParseProbeConfig(pm)
	require.NoError(t, err)
	assert.Nil(t, pmc.Etcd, "masters of a plain probe lab run no etcd")
	pb, err := ignition.Parse(plain.Bootstrap)
	require.NoError(t, err)
	_, ok, _ = ignition.FileContents(pb, SSHHostKeyPath)
	assert.False(t, ok, "a plain probe bootstrap gets no host key")
}

func pemBlock(t *testing.T, data []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(data)
	require.NotNil(t, b)
	return b.Bytes
}
