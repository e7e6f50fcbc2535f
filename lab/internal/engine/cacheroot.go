package engine

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/spec"
)

// CheckCacheRoot refuses a cache root that a lab directory could not be
// (spec.CacheRootProblem, the path and where its links lead) and one that
// is a file: bootlab lists and hashes everything under the cache root and
// writes and removes files there, so BOOTLAB_CACHE=/etc must not list
// /etc, nor BOOTLAB_CACHE=/dev/null stand for a cache. source is where dir
// came from, as the user set it (--cache-dir, BOOTLAB_CACHE). A missing
// directory is fine: the first writer makes it.
func CheckCacheRoot(dir, source string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	p := filepath.Clean(abs)
	why := spec.CacheRootProblem(p)
	if real, err := filepath.EvalSymlinks(p); why == "" && err == nil && real != p {
		if why = spec.CacheRootProblem(real); why != "" {
			p += " (" + real + ")"
		}
	}
	if fi, err := os.Stat(p); why == "" && err == nil && !fi.IsDir() {
		why = "is not a directory"
	}
	if why == "" {
		return nil
	}
	return &InputError{Err: fmt.Errorf("%s: %s %s: bootlab lists and hashes everything under the cache root, and writes and removes files there; give it a directory of its own, or leave it unset for the default", source, p, why)}
}

// CacheRoot is the cache root ($BOOTLAB_CACHE, else the default:
// cache.Dir()) once CheckCacheRoot passed it.
func CacheRoot() (string, error) {
	dir, source := cache.Dir(), "the cache root"
	if os.Getenv("BOOTLAB_CACHE") != "" {
		source = "BOOTLAB_CACHE"
	}
	return dir, CheckCacheRoot(dir, source)
}
