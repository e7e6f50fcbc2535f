package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cache root gets a lab directory's rules, through its links too, and
// must be a directory; bootlab's own cache directory under its home, or
// any directory of its own, is fine, made or not.
func TestCheckCacheRoot(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_HOME) changes the whole process's environment.
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	dir := t.TempDir()
	t.Setenv("BOOTLAB_HOME", filepath.Join(dir, "home"))
	file := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	link := filepath.Join(dir, "etc-link")
	require.NoError(t, os.Symlink("/etc", link))
	const tail = ": bootlab lists and hashes everything under the cache root, and writes and removes files there; give it a directory of its own, or leave it unset for the default"
	for p, want := range map[string]string{
		"/etc":                              "--cache-dir: /etc is a top-level system directory" + tail,
		"/etc/../etc/":                      "--cache-dir: /etc is a top-level system directory" + tail,
		"/dev/null":                         "--cache-dir: /dev/null is inside /dev, which belongs to the operating system" + tail,
		"/var/cache":                        "--cache-dir: /var/cache is a system directory that holds other programs' files" + tail,
		home:                                "--cache-dir: " + home + " is your home directory" + tail,
		filepath.Join(dir, "home"):          "--cache-dir: " + filepath.Join(dir, "home") + " is bootlab's own directory, which holds other labs and the cache" + tail,
		filepath.Join(dir, "home", "labs"):  "--cache-dir: " + filepath.Join(dir, "home", "labs") + " is bootlab's own directory, which holds other labs and the cache" + tail,
		link:                                "--cache-dir: " + link + " (/etc) is a top-level system directory" + tail,
		file:                                "--cache-dir: " + file + " is not a directory" + tail,
		filepath.Join(dir, "home", "cache"): "",
		filepath.Join(dir, "new-cache"):     "",
		"/var/cache/bootlab":                "",
	} {
		err := CheckCacheRoot(p, "--cache-dir")
		if want == "" {
			assert.NoError(t, err, p)
			continue
		}
		var ie *InputError
		require.ErrorAs(t, err, &ie, p)
		assert.Equal(t, want, err.Error(), p)
	}

	t.Setenv("BOOTLAB_CACHE", "/etc")
	_, err = CacheRoot()
	assert.EqualError(t, err, "BOOTLAB_CACHE: /etc is a top-level system directory"+tail)
	t.Setenv("BOOTLAB_CACHE", filepath.Join(dir, "cache"))
	got, err := CacheRoot()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "cache"), got)
}
