package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bootlab/bootlab/lab/cache"
)

// DefaultCacheDir is where downloads are kept across labs: cache.Dir(),
// the one root shared with the probe images.
func DefaultCacheDir() string { return cache.Dir() }

// RHCOSResult says where the image is and whether it was already cached.
type RHCOSResult struct {
	Path   string
	Cached bool
	URL    string
}

// EnsureRHCOS returns the cached, decompressed qcow2 of disk, downloading
// it first when the cache lacks it. mirror (openshift.mirrors.rhcos)
// replaces the scheme and host of the artifact location. The cache entry is
// <cacheDir>/rhcos/<file> beside <file>.sha256, which holds the verified
// uncompressed sum: an entry counts only when both agree with disk.
func EnsureRHCOS(ctx context.Context, d *Downloader, cacheDir string, disk QEMUDisk, mirror string) (RHCOSResult, error) {
	url, err := WithMirror(disk.Location, mirror)
	if err != nil {
		return RHCOSResult{}, err
	}
	dest := filepath.Join(cacheDir, "rhcos", disk.FileName())
	res := RHCOSResult{Path: dest, URL: url}
	if cachedSum(dest) == disk.UncompressedSHA256 {
		if _, err := os.Stat(dest); err == nil {
			res.Cached = true
			return res, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return res, fmt.Errorf("create image cache %s: %w", filepath.Dir(dest), err)
	}
	os.Remove(dest + ".sha256")
	d.log().Info("downloading RHCOS", "release", disk.Release, "url", url)
	if err := d.FetchGunzip(ctx, url, dest, disk.SHA256, disk.UncompressedSHA256); err != nil {
		return res, err
	}
	if err := os.WriteFile(dest+".sha256", []byte(disk.UncompressedSHA256+"\n"), 0o644); err != nil {
		return res, fmt.Errorf("record image checksum: %w", err)
	}
	return res, nil
}

func cachedSum(dest string) string {
	b, err := os.ReadFile(dest + ".sha256")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
