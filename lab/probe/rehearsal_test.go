package probe

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/ignition"
)

// A rehearsal bootstrap's config carries core's key the way the
// installer's bootstrap.ign does (passwd.users) and the lab's host key at
// sshd's path, 0600; the masters' served config is not a rehearsal one.
func TestGenerateRehearsalBootstrap(t *testing.T) {
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

	in.Rehearsal = false
	plain, err := Generate(in)
	require.NoError(t, err)
	pb, err := ignition.Parse(plain.Bootstrap)
	require.NoError(t, err)
	_, ok, _ = ignition.FileContents(pb, SSHHostKeyPath)
	assert.False(t, ok, "a plain probe bootstrap gets no host key")
}
