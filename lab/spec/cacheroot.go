package spec

import "path/filepath"

// CacheRootProblem says why p (clean and absolute) may not be the root of
// the download cache ($BOOTLAB_CACHE, --cache-dir), or "" when it may.
// The cache's commands list and hash everything under it, and lab up,
// import and prune write and remove files there, so it gets a lab
// directory's rules (SystemDirProblem); of bootlab's own directories it
// may be the cache one under the bootlab home, never the home or the
// directories of labs and classes.
func CacheRootProblem(p string) string {
	if p == filepath.Join(filepath.Clean(DefaultHome()), "cache") {
		return ""
	}
	return SystemDirProblem(p, true)
}
