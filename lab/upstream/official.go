package upstream

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/bootlab/bootlab/lab/gobuild"
	"github.com/bootlab/bootlab/lab/images"
	"github.com/bootlab/bootlab/lab/release"
)

// The official artefacts' files live in the cache under
// official/<name>/<version>-<key>/, key hashing the pinned checksums: the
// directory appears whole (renamed into place) once every artefact
// matched its checksum, so its presence is the proof. Downloads in
// progress are in <that>.tmp/ (partial files resumed by the next run).
const officialDir = "official"

// maxProgramBytes bounds a program read from a tarball: etcd's are tens
// of MB; a tarball claiming more is not etcd's.
const maxProgramBytes = 512 << 20

// officialKey hashes the pinned checksums, "" when one is missing.
func officialKey(p Program) string {
	if len(release.Unpinned(p.Artefacts)) > 0 || len(p.Artefacts) == 0 {
		return ""
	}
	h := sha256.New()
	for _, a := range p.Artefacts {
		fmt.Fprintf(h, "%s  %s\n", a.SHA256, a.Key())
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// OfficialDir is where p's official files are (or would be) in cacheDir,
// "" when its checksums are not pinned.
func OfficialDir(cacheDir string, p Program) string {
	key := officialKey(p)
	if key == "" {
		return ""
	}
	return filepath.Join(cacheDir, officialDir, p.Name, p.Version+"-"+key)
}

func cachedOfficial(cacheDir string, p Program) *Binaries {
	dir := OfficialDir(cacheDir, p)
	if dir == "" {
		return nil
	}
	b := officialBinaries(p, dir)
	if len(b.Files) == 0 {
		return nil
	}
	b.Why = "cached: the official release artefacts, downloaded and checked before"
	return b
}

func officialBinaries(p Program, dir string) *Binaries {
	key := officialKey(p)
	b := &Binaries{Name: p.Name, Version: p.Version, Source: Download, Key: key, ID: "official-" + key}
	for _, name := range p.Programs {
		f := filepath.Join(dir, name)
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			b.Files = append(b.Files, File{Path: f, Names: []string{name}})
		}
	}
	return b
}

// TamperedError is a downloaded artefact whose bytes are not the ones the
// project published: its checksum is not the pinned one. It was removed.
type TamperedError struct {
	Program, File, URL string
	Want, Got          string
}

func (e *TamperedError) Error() string {
	return fmt.Sprintf("%s (%s) is not the file %s published: its sha256 is %s, %s pins %s; it was removed and nothing was cached. A mirror or proxy on the way may have changed it: run again to download it again, or build %s from the Go module proxy instead",
		e.File, e.URL, e.Program, e.Got, release.ChecksumsFile, e.Want, e.Program)
}

func (o Options) downloader() *images.Downloader {
	return &images.Downloader{Client: o.Client, Log: o.Log, Progress: o.Progress, TTY: o.TTY}
}

// download fetches p's artefacts, checks each against its pinned
// checksum and moves the programs into the cache, under a lock so that
// labs started together download once.
func download(ctx context.Context, p Program, o Options) (*Binaries, error) {
	dir := OfficialDir(o.CacheDir, p)
	if dir == "" {
		return nil, &NotPinnedError{Program: p.Name, Version: p.Version, Missing: release.Unpinned(p.Artefacts)}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("cache for %s: %w", p.Name, err)
	}
	unlock, err := gobuild.Lock(ctx, dir+".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if b := cachedOfficial(o.CacheDir, p); b != nil { // downloaded while we waited
		return b, nil
	}
	start := time.Now()
	staging := dir + ".tmp"
	got := filepath.Join(staging, "download")
	for _, a := range p.Artefacts {
		if err := fetch(ctx, o, p, a, filepath.Join(got, a.Name())); err != nil {
			return nil, err
		}
	}
	files := got
	if p.tarball {
		files = filepath.Join(staging, "files")
		if err := extractPrograms(filepath.Join(got, p.Artefacts[0].Name()), files, p.Programs); err != nil {
			return nil, fmt.Errorf("%s %s: %w", p.Name, p.Version, err)
		}
	} else if err := chmodAll(files, p.Programs); err != nil {
		return nil, err
	}
	if err := os.Rename(files, dir); err != nil {
		return nil, fmt.Errorf("move %s %s into the cache: %w", p.Name, p.Version, err)
	}
	_ = os.RemoveAll(staging)
	b := officialBinaries(p, dir)
	b.Fetched, b.Took = true, time.Since(start)
	return b, nil
}

// fetch downloads one artefact to dest unless a checked copy is there
// (an earlier run stopped after it), resuming a partial one.
func fetch(ctx context.Context, o Options, p Program, a release.Artefact, dest string) error {
	if sum, err := fileSHA256(dest); err == nil && sum == a.SHA256 {
		return nil
	}
	url := o.Sites.URL(a)
	err := o.downloader().Fetch(ctx, url, dest, a.SHA256)
	var bad *images.ChecksumError
	if errors.As(err, &bad) {
		return &TamperedError{Program: p.Name, File: a.Name(), URL: url, Want: a.SHA256, Got: bad.Got}
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", p.Name, p.Version, err)
	}
	return nil
}

func chmodAll(dir string, names []string) error {
	for _, n := range names {
		if err := os.Chmod(filepath.Join(dir, n), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// extractPrograms writes the programs named in the top directory of the
// tarball (etcd-v<version>-linux-<arch>/etcd, ...) into dir, and nothing
// else; the first two are required.
func extractPrograms(tarball, dir string, programs []string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(tarball), err)
	}
	tr := tar.NewReader(zr)
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(tarball), err)
		}
		name := path.Base(hdr.Name)
		top := path.Dir(path.Clean(hdr.Name))
		if hdr.Typeflag != tar.TypeReg || !slices.Contains(programs, name) || top == "." || path.Dir(top) != "." {
			continue
		}
		if seen[name] || hdr.Size > maxProgramBytes {
			return fmt.Errorf("%s: %s is there twice or larger than %d MiB: not the project's tarball", filepath.Base(tarball), hdr.Name, maxProgramBytes>>20)
		}
		seen[name] = true
		if err := writeProgram(filepath.Join(dir, name), tr, hdr.Size); err != nil {
			return err
		}
	}
	for _, need := range programs[:2] {
		if !seen[need] {
			return fmt.Errorf("%s has no %s in its top directory", filepath.Base(tarball), need)
		}
	}
	return nil
}

func writeProgram(dest string, r io.Reader, size int64) error {
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(out, r, size); err != nil {
		out.Close()
		return fmt.Errorf("extract %s: %w", filepath.Base(dest), err)
	}
	return out.Close()
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
