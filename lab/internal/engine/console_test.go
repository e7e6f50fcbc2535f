package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
)

func TestFollowFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.log")
	require.NoError(t, os.WriteFile(p, []byte("boot\n"), 0o644))
	var out bytes.Buffer
	require.NoError(t, followFile(context.Background(), p, &out, false, time.Millisecond))
	assert.Equal(t, "boot\n", out.String())

	// Follow: lines appended later arrive; cancelling ends the follow.
	ctx, cancel := context.WithCancel(context.Background())
	pr := &testutil.SyncBuffer{}
	done := make(chan error, 1)
	go func() { done <- followFile(ctx, p, pr, true, time.Millisecond) }()
	fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fh.WriteString("login:\n")
	require.NoError(t, err)
	require.NoError(t, fh.Close())
	for !strings.Contains(pr.String(), "login:") {
		time.Sleep(time.Millisecond)
	}
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, "boot\nlogin:\n", pr.String())
}
