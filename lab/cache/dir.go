package cache

import (
	"os"
	"path/filepath"
)

// Dir is the one cache root every download and built image lives under:
// $BOOTLAB_CACHE, else /var/cache/bootlab for root (qemu, running as its
// own user, cannot read images under /root), else $XDG_CACHE_HOME/bootlab
// (~/.cache/bootlab).
func Dir() string {
	if d := os.Getenv("BOOTLAB_CACHE"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/cache/bootlab"
	}
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "bootlab")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "bootlab")
	}
	return filepath.Join(os.TempDir(), "bootlab-cache")
}
