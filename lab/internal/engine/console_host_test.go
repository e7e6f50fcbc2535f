package engine

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/sshc/sshctest"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/host"
)

// A console log on a remote hypervisor is read, and followed, through its
// Host (an in-process SSH server here).
func TestFollowHostFile(t *testing.T) {
	srv := sshctest.Start(t)
	ctx := context.Background()
	h, err := host.Open(ctx, srv.LibvirtURI(t, ""), host.Options{})
	require.NoError(t, err)
	defer h.Close()
	p := filepath.Join(t.TempDir(), "master-0.log")

	err = followHostFile(ctx, h, p, io.Discard, false)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	err = followHostFile(ctx, h, p, io.Discard, true)
	assert.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, os.WriteFile(p, []byte("first\n"), 0o644))
	var out strings.Builder
	require.NoError(t, followHostFile(ctx, h, p, &out, false))
	assert.Equal(t, "first\n", out.String())

	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got testutil.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- followHostFile(fctx, h, p, &got, true) }()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("second\n")
	require.NoError(t, err)
	f.Close()
	for i := 0; i < 100 && got.String() != "first\nsecond\n"; i++ {
		time.Sleep(50 * time.Millisecond) // polls the output; asserts the content
	}
	assert.Equal(t, "first\nsecond\n", got.String())
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}
