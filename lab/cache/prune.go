package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
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
	var held []func() // the saved-start locks of what out lists
	defer func() { releaseAll(held) }()
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
		release, busy := claimProbeImage(dir, now)
		if busy {
			continue
		}
		held = append(held, release)
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

// RestorePipeStale is the age from which a saved start's restore pipe
// (.restore-*, lab/internal/savedstart) was left by an interrupted up: one
// in use lives a second. Younger, it is a restore in progress, and prune
// keeps its probe image; older, the next up sweeps it.
const RestorePipeStale = time.Hour

// claimProbeImage takes the saved-start locks of the probe image dir, so
// no lab up starts making a saved-start image there while it is removed,
// and says it is busy (holding nothing) when one is being made now or a
// node is being restored from it. release lets the locks go.
func claimProbeImage(dir string, now time.Time) (release func(), busy bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return func() {}, true
	}
	var locks []*os.File
	release = func() {
		for _, f := range locks {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".restore-") {
			if fi, err := e.Info(); err != nil || now.Sub(fi.ModTime()) < RestorePipeStale {
				release()
				return func() {}, true
			}
			continue
		}
		if !strings.HasSuffix(name, ".lock") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, name))
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			// EWOULDBLOCK: a lab up is making the image now; anything
			// else: bootlab cannot tell, so the directory stays.
			release()
			return func() {}, true
		}
		locks = append(locks, f)
	}
	return release, false
}

func releaseAll(fs []func()) {
	for _, f := range fs {
		f()
	}
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

// probeImageFile matches what bootlab writes in a probe image's
// directory: the builder's kernel, initramfs and base disk, the rehearsal
// initrd (lab/probe), a saved start's image, its lock, its declined
// marker and the pipes that feed it to restores (lab/internal/savedstart).
var probeImageFile = regexp.MustCompile(`^(vmlinuz|vmlinux-pvh|initramfs\.img|base\.qcow2|` +
	`initramfs-rehearsal-[0-9a-f]{16}\.img|saved-start-[0-9a-f]{16}\.img(\.lock|\.none)?|` +
	`\.restore-[a-z0-9-]+-[0-9a-f]{12}\.fifo)$`)

// isProbeImageDir says whether dir is one bootlab made: named by 16 hex
// digits of its image's hash, holding its kernel and nothing bootlab does
// not write there (probeImageFile, and temporaries).
func isProbeImageDir(dir string) bool {
	name := filepath.Base(dir)
	if len(name) != 16 || strings.Trim(name, "0123456789abcdef") != "" {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !probeImageFile.MatchString(e.Name()) && !strings.HasSuffix(e.Name(), ".tmp") {
			return false
		}
	}
	_, kerr := os.Stat(filepath.Join(dir, "vmlinuz"))
	return kerr == nil
}
