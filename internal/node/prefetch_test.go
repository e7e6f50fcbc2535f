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
	"syscall"
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

	p, err := node.Prefetch(ctx, n, node.Paths{Files: paths})
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
			p, err := node.Prefetch(ctx, node.Command("n", tt.run), node.Paths{Files: []string{f}, Dirs: []string{dir}})
			require.NoError(t, err)
			got, err := p.ReadFile(ctx, f)
			require.NoError(t, err)
			assert.Equal(t, "content\n", string(got), "read from the node itself")
			names, err := node.List(ctx, p, dir)
			require.NoError(t, err)
			assert.Equal(t, []string{"f"}, names, "listed by the node itself")
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
	}), node.Paths{Files: []string{"/etc/hostname"}})
	assert.ErrorIs(t, err, down)
}

// Directories are listed in the same command, dot files too and none of
// . and ..; a missing one is known to be missing; anything else (not a
// directory, not asked) goes to the node, as `ls -A1` would list it.
func TestPrefetchListsDirectories(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	full, empty := filepath.Join(dir, "full"), filepath.Join(dir, "empty")
	require.NoError(t, os.Mkdir(full, 0o755))
	require.NoError(t, os.Mkdir(empty, 0o755))
	for _, name := range []string{"a.done", ".bootkube.done", "with space", "*", "sub"} {
		require.NoError(t, os.WriteFile(filepath.Join(full, name), nil, 0o600))
	}
	require.NoError(t, os.Symlink("nowhere", filepath.Join(full, "dangling")))
	records := filepath.Join(dir, "records.json")
	require.NoError(t, os.WriteFile(records, []byte("[]\n"), 0o600))
	missing, file := filepath.Join(dir, "missing"), records
	b := &bashNode{}
	n := node.Command("bash", b.run)

	p, err := node.Prefetch(ctx, n, node.Paths{Files: []string{records}, Dirs: []string{full, empty, missing, file}})
	require.NoError(t, err)
	require.Equal(t, 1, b.count())
	names, err := node.List(ctx, p, full)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"*", ".bootkube.done", "a.done", "dangling", "sub", "with space"}, names)
	names, err = node.List(ctx, p, empty)
	require.NoError(t, err)
	assert.Empty(t, names)
	_, err = node.List(ctx, p, missing)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	data, err := p.ReadFile(ctx, records)
	require.NoError(t, err)
	assert.Equal(t, "[]\n", string(data))
	assert.Equal(t, 1, b.count(), "the listings and the file came from the prefetch")

	_, err = node.List(ctx, p, file)
	assert.ErrorIs(t, err, syscall.ENOTDIR)

	// ls's answers, for what the prefetch did not list.
	names, err = node.List(ctx, n, full)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"*", ".bootkube.done", "a.done", "dangling", "sub", "with space"}, names, "the same names as ls -A")
	assert.Equal(t, 2, b.count())

	// What it read already is not read again.
	again, err := node.Prefetch(ctx, p, node.Paths{Files: []string{records}, Dirs: []string{full}})
	require.NoError(t, err)
	assert.Same(t, p, again)
	assert.Equal(t, 2, b.count())
	_, err = node.Prefetch(ctx, p, node.Paths{Files: []string{filepath.Join(dir, "other")}, Dirs: []string{full}})
	require.NoError(t, err)
	assert.Equal(t, 3, b.count(), "a path it did not read is a new prefetch")

	// Before bash 5.2 (RHCOS 9 has 5.1) .* matches . and .. too.
	old := node.Command("bash 5.1", func(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
		return b.run(ctx, "shopt -u globskipdots\n"+cmd, stdin, stdout, stderr)
	})
	p, err = node.Prefetch(ctx, old, node.Paths{Dirs: []string{empty, full}})
	require.NoError(t, err)
	names, err = node.List(ctx, p, empty)
	require.NoError(t, err)
	assert.Empty(t, names)
	names, err = node.List(ctx, p, full)
	require.NoError(t, err)
	assert.Len(t, names, 6)
	assert.Equal(t, 4, b.count())
}
