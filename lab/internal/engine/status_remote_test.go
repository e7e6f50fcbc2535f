package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/sshc/sshctest"
	"github.com/bootlab/bootlab/lab/host"
)

// A remote system daemon's domain start time is its qemu pid file's
// mtime, read on that machine.
func TestDomainSinceOnARemoteHost(t *testing.T) {
	// Not parallel: it points the package variable qemuRunDir elsewhere.
	srv := sshctest.Start(t)
	ctx := context.Background()
	h, err := host.Open(ctx, srv.LibvirtURI(t, ""), host.Options{})
	require.NoError(t, err)
	defer h.Close()
	old := qemuRunDir
	qemuRunDir = t.TempDir()
	t.Cleanup(func() { qemuRunDir = old })
	at := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	p := filepath.Join(qemuRunDir, "bootlab-x-master-0.pid")
	require.NoError(t, os.WriteFile(p, []byte("1\n"), 0o644))
	require.NoError(t, os.Chtimes(p, at, at))
	uri := "qemu+ssh://root@" + srv.Addr + "/system"
	assert.True(t, at.Equal(domainSince(ctx, h, uri, "bootlab-x-master-0")))
	assert.True(t, domainSince(ctx, h, uri, "bootlab-x-absent").IsZero())
}
