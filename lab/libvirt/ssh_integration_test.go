//go:build integration

package libvirt_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/hypervisor"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/internal/sshc/sshctest"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/libvirt"
	"github.com/bootlab/bootlab/lab/spec"
)

// A qemu+ssh-style URI reaches the daemon through one SSH connection of
// bootlab's own client: the host key is trusted on first use (recorded in
// the URI's known_hosts file), and the same connection runs commands on
// the host.
func TestIntegrationRemoteURIThroughSSH(t *testing.T) {
	// Not parallel: its test+ssh:// connection reaches the daemon's test:///default, whose one in-memory state every connection open at the same time shares.
	port, key := sshctest.OpenSSHD(t)
	ctx := context.Background()
	kh := sshctest.KnownHosts(t)
	uri := fmt.Sprintf("test+ssh://root@127.0.0.1:%d/default?keyfile=%s&known_hosts=%s", port, key, kh)
	c, err := libvirt.Connect(ctx, uri, nil)
	require.NoError(t, err)
	defer c.Close()

	v, err := c.LibvirtVersion(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, v)
	recorded, err := os.ReadFile(kh)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(recorded), "\n"), "the host key is recorded once")
	assert.True(t, c.Host().Remote())
	assert.Equal(t, fmt.Sprintf("root@127.0.0.1:%d", port), c.Host().Name())
	out, err := host.Output(ctx, c.Host(), "echo $SSH_CONNECTION")
	require.NoError(t, err)
	assert.Contains(t, out, fmt.Sprintf("127.0.0.1 %d", port), "the command ran through the sshd")

	dir := t.TempDir()
	hostDir := filepath.Join(dir, "on-the-hypervisor")
	s := &spec.Spec{Name: "remote", Libvirt: spec.Libvirt{URI: uri, HostDir: hostDir}, LabDir: filepath.Join(dir, "lab"),
		Topology: spec.Topology{Masters: 1}, Network: spec.Network{CIDR: "10.125.0.0/24"},
		Storage: spec.Storage{PoolDir: filepath.Join(dir, "pool")}}
	s.Defaults()
	// Not a test:// URI, so the load balancer would run: skip it.
	res, err := lab.Up(ctx, c, s, lab.UpOptions{Accelerator: spec.AccelTCG, SkipLoadBalancer: true})
	require.NoError(t, err)
	assert.True(t, res.Changed)
	d, err := c.LookupDomain(ctx, s.DomainName(s.Nodes[1]))
	require.NoError(t, err)
	assert.True(t, d.Active)
	assert.Contains(t, d.XML, filepath.Join(hostDir, "console", "master-0.log"), "the console log is on the hypervisor's machine")
	_, err = os.Stat(filepath.Join(hostDir, "console"))
	assert.NoError(t, err, "up made the console directory there, over SSH")

	_, err = lab.Down(ctx, c, s, lab.DownOptions{})
	require.NoError(t, err)
	_, err = os.Stat(hostDir)
	assert.True(t, os.IsNotExist(err), "down removes the lab's files on the hypervisor's machine")
	_, err = c.LookupNetwork(ctx, s.NetworkName())
	assert.ErrorIs(t, err, hypervisor.ErrNotFound)

	// A second connection checks the recorded key and records nothing new.
	c2, err := libvirt.Connect(ctx, uri, nil)
	require.NoError(t, err)
	require.NoError(t, c2.Close())
	again, err := os.ReadFile(kh)
	require.NoError(t, err)
	assert.Equal(t, string(recorded), string(again))
}

// A host key that differs from the recorded one stops the connection
// before libvirt is spoken to, and the error says how to forget the key.
func TestIntegrationRemoteURIRefusesAChangedHostKey(t *testing.T) {
	// Not parallel: its test+ssh:// connection reaches the daemon's test:///default, whose one in-memory state every connection open at the same time shares.
	port, key := sshctest.OpenSSHD(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	other, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	otherKey, err := ssh.NewPublicKey(other)
	require.NoError(t, err)
	line := knownhosts.Line([]string{knownhosts.Normalize(fmt.Sprintf("127.0.0.1:%d", port))}, otherKey)
	require.NoError(t, os.WriteFile(kh, []byte(line+"\n"), 0o600))
	uri := fmt.Sprintf("qemu+ssh://root@127.0.0.1:%d/system?keyfile=%s&known_hosts=%s", port, key, kh)
	_, err = libvirt.Connect(context.Background(), uri, nil)
	var mm *sshc.HostKeyMismatchError
	require.ErrorAs(t, err, &mm)
	assert.Contains(t, err.Error(), "ssh-keygen -R")
}

// libvirt, commands and files on the host share one SSH connection: the
// daemon's socket is a stream-local channel of it.
func TestIntegrationOneSSHConnectionServesLibvirtAndTheHost(t *testing.T) {
	// Not parallel: its test+ssh:// connection reaches the daemon's test:///default, whose one in-memory state every connection open at the same time shares.
	srv := sshctest.Start(t)
	ctx := context.Background()
	uri := fmt.Sprintf("test+ssh://root@%s/default?keyfile=%s&known_hosts=%s", srv.Addr, srv.KeyFile, sshctest.KnownHosts(t))
	h, err := host.Open(ctx, uri, host.Options{})
	require.NoError(t, err)
	defer h.Close()
	c, err := libvirt.ConnectHost(ctx, uri, h, nil)
	require.NoError(t, err)
	_, err = c.LibvirtVersion(ctx)
	require.NoError(t, err)
	_, err = host.Output(ctx, c.Host(), "true")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	assert.Equal(t, 1, srv.Conns())
	assert.Equal(t, []string{"unix /var/run/libvirt/libvirt-sock"}, srv.Dials())
	// The Conn did not own the host: it still runs commands.
	_, err = host.Output(ctx, h, "true")
	assert.NoError(t, err)
}
