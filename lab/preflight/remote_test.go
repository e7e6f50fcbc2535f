package preflight

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/sshc/sshctest"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/spec"
)

// Preflight of a qemu+ssh lab reads the remote machine through its Host:
// here an in-process SSH server on this machine, so the facts are real.
func TestPreflightReadsTheRemoteMachineThroughItsHost(t *testing.T) {
	t.Parallel()
	srv := sshctest.Start(t)
	ctx := context.Background()
	h, err := host.Open(ctx, srv.LibvirtURI(t, ""), host.Options{})
	require.NoError(t, err)
	defer h.Close()
	s := preflightSpec(t, func(s *spec.Spec) {
		s.Libvirt.URI = "qemu+ssh://root@" + srv.Addr + "/system"
		s.Profile = spec.ProfileProbe
		s.Network.CIDR = "10.213.77.0/24"
		s.Storage.PoolDir = filepath.Join(t.TempDir(), "pool")
	})
	r, err := Run(ctx, s, kvmHost(), Options{Machine: h})
	require.NoError(t, err)
	names := map[string]bool{}
	for _, c := range r.Checks {
		names[c.Name] = true
		assert.Equal(t, "root@"+srv.Addr, c.Host, c.Name)
	}
	for _, n := range []string{CheckHAProxy, CheckQEMUImg, CheckNetwork, CheckLB, CheckMemory, CheckDisk, CheckPoolAccess} {
		assert.True(t, names[n], "check %s ran", n)
	}
	assert.True(t, checkOf(t, r, CheckMemory).Passed(), checkOf(t, r, CheckMemory).Detail)
	assert.Contains(t, checkOf(t, r, CheckMemory).Detail, "available")
	assert.True(t, checkOf(t, r, CheckDisk).Passed(), checkOf(t, r, CheckDisk).Detail)
	assert.Contains(t, checkOf(t, r, CheckNetwork).Detail, "overlaps no host route")
	assert.NotEmpty(t, srv.Commands(), "the facts were read over SSH")
}

func TestParseRemoteFacts(t *testing.T) {
	t.Parallel()
	u, err := parseIDOutput("libvirt-qemu", "64055\n64055 108 36\n")
	require.NoError(t, err)
	assert.Equal(t, &HostUser{Name: "libvirt-qemu", UID: 64055, GIDs: []int{64055, 108, 36}}, u)
	_, err = parseIDOutput("x", "nope")
	assert.Error(t, err)

	fo, err := parseStatOutput("/var/lib", "755 0 0 directory\n")
	require.NoError(t, err)
	assert.Equal(t, &FileOwner{Mode: fs.ModeDir | 0o755}, fo)
	fo, err = parseStatOutput("/dev/kvm", "660 0 108 character special file\n")
	require.NoError(t, err)
	assert.Equal(t, &FileOwner{Mode: 0o660, GID: 108}, fo)
	_, err = parseStatOutput("/x", "garbage")
	assert.Error(t, err)
}

// qemu+tcp reaches libvirt but nothing else on that machine: preflight
// fails, saying to use qemu+ssh.
func TestPreflightRefusesALibvirtOnlyTransport(t *testing.T) {
	t.Parallel()
	s := preflightSpec(t, func(s *spec.Spec) { s.Libvirt.URI = "qemu+tcp://server/system" })
	r, err := Run(context.Background(), s, kvmHost(), Options{Machine: host.LibvirtOnly{URI: s.Libvirt.URI}})
	require.NoError(t, err)
	assert.False(t, r.OK())
	assert.Contains(t, checkOf(t, r, CheckMemory).Fix, "qemu+ssh://user@host/system")
}
