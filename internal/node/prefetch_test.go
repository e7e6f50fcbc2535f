package node_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/node"
)

// bashNode runs commands with the real bash on this machine and counts
// them: each would be an SSH session on a lab node.
type bashNode struct {
	mu   sync.Mutex
	cmds []string
}

func (b *bashNode) run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	b.mu.Lock()
	b.cmds = append(b.cmds, cmd)
	b.mu.Unlock()
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

func (b *bashNode) count() int { b.mu.Lock(); defer b.mu.Unlock(); return len(b.cmds) }

func TestPrefetchAnswersFromOneCommand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	files := map[string]string{
		"script.sh": "#!/bin/bash\necho hi\n",
		"no-eol":    "VERSION=4.18.0",
		"empty":     "",
		"binary":    "a\x00b\n\n@@bootlab-prefetch content\n@@bootlab-prefetch end\n",
	}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o640))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o750))
	b := &bashNode{}
	n := node.Command("bash", b.run)
	paths := []string{filepath.Join(dir, "missing")}
	for name := range files {
		paths = append(paths, filepath.Join(dir, name))
	}
	paths = append(paths, filepath.Join(dir, "sub"))

	p, err := node.Prefetch(ctx, n, paths...)
	require.NoError(t, err)
	require.Equal(t, 1, b.count(), "one command reads them all")

	for name, data := range files {
		got, err := p.ReadFile(ctx, filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, data, string(got), name)
		fi, err := p.Stat(ctx, filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, node.FileInfo{Mode: 0o640, Size: int64(len(data))}, fi, name)
	}
	_, err = p.ReadFile(ctx, filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = p.Stat(ctx, filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	fi, err := p.Stat(ctx, filepath.Join(dir, "sub"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir)
	assert.Equal(t, 1, b.count(), "every answer above came from the prefetch")

	// A path it did not read goes to the node, and what it read is not
	// refreshed: the caller uses it only while nothing changes.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "later"), []byte("x"), 0o600))
	got, err := p.ReadFile(ctx, filepath.Join(dir, "later"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(got))
	assert.Equal(t, 2, b.count())
}

func TestPrefetchFallsBackToTheNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(f, []byte("content\n"), 0o600))
	tests := []struct {
		name string
		run  node.RunFunc
	}{
		{"a file it could not describe", func(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
			if strings.Contains(cmd, "prefetch") {
				_, err := io.WriteString(stdout, "@@bootlab-prefetch exists "+f+"\n@@bootlab-prefetch content\n\n@@bootlab-prefetch end\n")
				return 0, err
			}
			return (&bashNode{}).run(ctx, cmd, stdin, stdout, stderr)
		}},
		{"no stat on the node", func(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
			if strings.Contains(cmd, "prefetch") {
				return 127, nil
			}
			return (&bashNode{}).run(ctx, cmd, stdin, stdout, stderr)
		}},
		{"output cut short", func(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
			if strings.Contains(cmd, "prefetch") {
				_, err := io.WriteString(stdout, "@@bootlab-prefetch exists "+f+"\n"+f+"\t600 8 regular file\n@@bootlab-prefetch content\ncont")
				return 0, err
			}
			return (&bashNode{}).run(ctx, cmd, stdin, stdout, stderr)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := node.Prefetch(ctx, node.Command("n", tt.run), f)
			require.NoError(t, err)
			got, err := p.ReadFile(ctx, f)
			require.NoError(t, err)
			assert.Equal(t, "content\n", string(got), "read from the node itself")
		})
	}
}

func TestPrefetchUnreachableNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	down := errors.New("ssh: connection refused")
	_, err := node.Prefetch(ctx, node.Command("n", func(context.Context, string, io.Reader, io.Writer, io.Writer) (int, error) {
		return -1, down
	}), "/etc/hostname")
	assert.ErrorIs(t, err, down)
}
