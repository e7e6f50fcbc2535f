//go:build integration

package libvirt

import (
	"context"
	"sync"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Against the host's own daemon: long calls past one connection's slots
// go over a second, real connection (each answers an RPC while all are
// held), and Close disconnects it. The test driver gets no lanes, so this
// needs qemu:///system.
func TestIntegrationLongCallsSpreadOverConnections(t *testing.T) {
	c, err := Connect(context.Background(), "qemu:///system", nil)
	require.NoError(t, err)
	const calls = laneCalls + 2
	var arrived sync.WaitGroup
	arrived.Add(calls)
	var mu sync.Mutex
	used := map[*golibvirt.Libvirt]int{}
	var done sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		done.Add(1)
		go func() {
			defer done.Done()
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
	done.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	require.Equal(t, 2, c.lanes.count())
	require.Len(t, used, 2)
	assert.Equal(t, laneCalls, used[c.l], "the connection's own slots are used first")
	extra := c.lanes.conns[1].l
	assert.True(t, extra.IsConnected())
	require.NoError(t, c.Close())
	assert.False(t, extra.IsConnected(), "Close disconnects the extra lanes")
}

// test:///default gets no lanes: a test:///file URI is a new, empty driver
// on every connection, and the test driver answers at once.
func TestIntegrationTestDriverHasOneConnection(t *testing.T) {
	c, err := Connect(context.Background(), "test:///default", nil)
	require.NoError(t, err)
	defer c.Close()
	for range 2 * laneCalls {
		assert.Same(t, c.l, c.lanes.acquire().l)
	}
	assert.Equal(t, 1, c.lanes.count())
}
