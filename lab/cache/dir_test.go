package cache

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDirBootlabCacheFirst(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_CACHE, XDG_CACHE_HOME) changes the whole process's environment.
	t.Setenv("BOOTLAB_CACHE", "/srv/bootlab-cache")
	t.Setenv("XDG_CACHE_HOME", "/home/u/.cache")
	require.Equal(t, "/srv/bootlab-cache", Dir())
}

func TestDirWithoutBootlabCache(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_CACHE, XDG_CACHE_HOME) changes the whole process's environment.
	t.Setenv("BOOTLAB_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/home/u/.cache")
	want := filepath.Join("/home/u/.cache", "bootlab")
	if os.Geteuid() == 0 {
		// qemu cannot read images under /root: root's cache is system-wide.
		want = "/var/cache/bootlab"
	}
	require.Equal(t, want, Dir())
}
