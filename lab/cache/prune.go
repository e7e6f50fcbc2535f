package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// PruneOptions say which probe images Prune may remove.
type PruneOptions struct {
	// Referenced are files labs use (their spec's image kernel and initrd):
	// the probe image holding one is kept.
	Referenced []string
	// OlderThan keeps images used more recently than this (0: any age).
	OlderThan time.Duration
	// DryRun lists what would go and removes nothing.
	DryRun bool
	// Now is time.Now when zero (tests fix it).
	Now time.Time
}

// Pruned is one probe image Prune removed (or would remove).
type Pruned struct {
	Path     string    `json:"path"`
	Hash     string    `json:"hash"`
	Size     int64     `json:"size"`
	LastUsed time.Time `json:"lastUsed"`
}

// Prune removes the probe images under root/probe that no lab references
// and that were last used longer than OlderThan ago.
func Prune(root string, opts PruneOptions) ([]Pruned, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	probeDir := filepath.Join(root, "probe")
	inUse := map[string]bool{}
	for _, p := range opts.Referenced {
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		if resolved, err := filepath.EvalSymlinks(abs); err == nil {
			abs = resolved
		}
		inUse[filepath.Dir(abs)] = true
	}
	dirs, err := os.ReadDir(probeDir)
	if os.IsNotExist(err) {
		return []Pruned{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list probe images in %s: %w", probeDir, err)
	}
	out := []Pruned{}
	for _, d := range dirs {
		// Only what the probe image builder makes: a directory named by
		// its hash, holding its image. Anything else someone keeps there
		// (or a cache root pointed at the wrong place) stays.
		if !d.IsDir() || !isProbeImageDir(filepath.Join(probeDir, d.Name())) {
			continue
		}
		dir := filepath.Join(probeDir, d.Name())
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		if resolved, err := filepath.EvalSymlinks(abs); err == nil {
			abs = resolved
		}
		if inUse[abs] {
			continue
		}
		size, last, err := dirUsage(dir)
		if err != nil {
			return nil, err
		}
		if opts.OlderThan > 0 && now.Sub(last) < opts.OlderThan {
			continue
		}
		out = append(out, Pruned{Path: dir, Hash: d.Name(), Size: size, LastUsed: last})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if opts.DryRun {
		return out, nil
	}
	for i, p := range out {
		if err := os.RemoveAll(p.Path); err != nil {
			return out[:i], fmt.Errorf("remove probe image %s: %w", p.Path, err)
		}
	}
	return out, nil
}

// dirUsage is the total size of dir's files and the newest mtime among them.
func dirUsage(dir string) (int64, time.Time, error) {
	var size int64
	var last time.Time
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			size += fi.Size()
		}
		if fi.ModTime().After(last) {
			last = fi.ModTime()
		}
		return nil
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read probe image %s: %w", dir, err)
	}
	return size, last, nil
}

// isProbeImageDir says whether dir is one the probe image builder made:
// named by 16 hex digits of its hash, holding its kernel and initramfs
// and nothing it does not write.
func isProbeImageDir(dir string) bool {
	name := filepath.Base(dir)
	if len(name) != 16 || strings.Trim(name, "0123456789abcdef") != "" {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	made := map[string]bool{"vmlinuz": true, "vmlinux-pvh": true, "initramfs.img": true, "base.qcow2": true}
	for _, e := range entries {
		if !made[e.Name()] && !strings.HasSuffix(e.Name(), ".tmp") {
			return false
		}
	}
	_, kerr := os.Stat(filepath.Join(dir, "vmlinuz"))
	return kerr == nil
}
