//go:build integration

package libvirt

import (
	"context"
	"fmt"
	"sync"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/sshc/sshctest"
)

// Against the host's own daemon, locally and through bootlab's SSH client
// (a real sshd on this machine): long calls past one connection's slots go
// over a second, real connection (each answers an RPC while all are held),
// and Close disconnects it. The test driver gets no lanes, so this needs
// qemu:///system.
func TestIntegrationLongCallsSpreadOverConnections(t *testing.T) {
	port, key := sshctest.OpenSSHD(t)
	uris := map[string]string{
		"local": "qemu:///system",
		"ssh": fmt.Sprintf("qemu+ssh://root@127.0.0.1:%d/system?keyfile=%s&known_hosts=%s",
			port, key, sshctest.KnownHosts(t)),
	}
	for name, uri := range uris {
		t.Run(name, func(t *testing.T) {
			c, err := Connect(context.Background(), uri, nil)
			require.NoError(t, err)
			used := holdLongCalls(t, c, laneCalls+2)
			require.Equal(t, 2, c.lanes.count())
			require.Len(t, used, 2)
			assert.Equal(t, laneCalls, used[c.l], "the connection's own slots are used first")
			extra := c.lanes.conns[1].l
			assert.True(t, extra.IsConnected())
			require.NoError(t, c.Close())
			assert.False(t, extra.IsConnected(), "Close disconnects the extra lanes")
		})
	}
}

// holdLongCalls makes n long calls on c that all hold their lane at once,
// each asking its connection for the daemon's version, and says how many
// ran on each connection.
func holdLongCalls(t *testing.T, c *Conn, n int) map[*golibvirt.Libvirt]int {
	t.Helper()
	var arrived sync.WaitGroup
	arrived.Add(n)
	var mu sync.Mutex
	used := map[*golibvirt.Libvirt]int{}
	errs := make(chan error, n)
	for range n {
		go func() {
			errs <- c.long(context.Background(), func(l *golibvirt.Libvirt) error {
				arrived.Done()
				arrived.Wait() // every call holds its lane at once
				mu.Lock()
				used[l]++
				mu.Unlock()
				_, err := l.ConnectGetLibVersion()
				return err
			})
		}()
	}
	for range n {
		assert.NoError(t, <-errs)
	}
	return used
}

// The test driver gets no lanes, locally or over SSH: a test:///file URI
// is a new, empty driver on every connection, and it answers at once.
func TestIntegrationTestDriverHasOneConnection(t *testing.T) {
	port, key := sshctest.OpenSSHD(t)
	for _, uri := range []string{"test:///default", fmt.Sprintf("test+ssh://root@127.0.0.1:%d/default?keyfile=%s&known_hosts=%s",
		port, key, sshctest.KnownHosts(t))} {
		c, err := Connect(context.Background(), uri, nil)
		require.NoError(t, err)
		used := holdLongCalls(t, c, 2*laneCalls)
		assert.Equal(t, map[*golibvirt.Libvirt]int{c.l: 2 * laneCalls}, used, uri)
		assert.Equal(t, 1, c.lanes.count(), uri)
		require.NoError(t, c.Close())
	}
}
