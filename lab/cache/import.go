package cache

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bootlab/bootlab/internal/userfile"
)

// ImportResult says what Import moved into the cache and what it already had.
type ImportResult struct {
	Imported []string `json:"imported"`
	Skipped  []string `json:"skipped"`
}

// ChecksumError is a file of an archive that does not match its manifest.
type ChecksumError struct {
	Archive, Path, Want, Got string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: %s has sha256 %s, the manifest says %s: the archive was changed or damaged in transit; nothing was imported, export it again", e.Archive, e.Path, e.Got, e.Want)
}

// Import unpacks an Export archive into the cache under root. Every file
// is extracted to a temporary directory inside root and checked against
// the manifest first; only when all match are they renamed into place, so a
// tampered, missing or extra file imports nothing. Files the cache already
// has with the same sha256 are skipped.
func Import(root, file string) (*ImportResult, error) {
	return importArchive(root, file, freeBytes, false)
}

// PlanImport is what Import would move into the cache, writing nothing:
// every file is read and checked against the manifest as Import checks it
// (failing with the same errors), then compared with the cache's copy.
func PlanImport(root, file string) (*ImportResult, error) {
	return importArchive(root, file, freeBytes, true)
}

// freeBytes is the space an unprivileged user may fill on dir's filesystem.
func freeBytes(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// needed is the space the files of m the cache lacks take (a file of
// another size is replaced; one of the same size may be too, but rarely).
func needed(root string, m *Manifest) uint64 {
	var n uint64
	for _, mf := range m.Files {
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(mf.Path))); err == nil && fi.Size() == mf.Size {
			continue
		}
		n += uint64(mf.Size)
	}
	return n
}

func importArchive(root, file string, free func(string) (uint64, error), dryRun bool) (*ImportResult, error) {
	f, _, err := userfile.Open(file)
	if err != nil {
		return nil, fmt.Errorf("cache archive: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var r io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	m, err := readManifest(tr, file)
	if err != nil {
		return nil, err
	}
	if !dryRun {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, fmt.Errorf("create cache %s: %w", root, err)
		}
	}
	if need := needed(root, m); need > 0 {
		if have, err := free(root); err == nil && have < need {
			return nil, fmt.Errorf("importing %s needs %s free in the cache %s (files are checked there before they move in), it has %s: free some space, or set BOOTLAB_CACHE to a larger disk", file, HumanSize(int64(need)), root, HumanSize(int64(have)))
		}
	}
	tmp := "" // a dry run checks each file without extracting it
	if !dryRun {
		if tmp, err = os.MkdirTemp(root, importPrefix); err != nil {
			return nil, fmt.Errorf("create a temporary directory in the cache %s: %w", root, err)
		}
		defer os.RemoveAll(tmp)
	}
	if err := extractAll(tr, file, tmp, m); err != nil {
		return nil, err
	}
	return moveIn(root, tmp, m)
}

// extractAll checks every file of the archive against manifest m (listed,
// once, a regular file, its size and sha256) and extracts it under tmp
// ("": a dry run, checked only); a file the manifest lists and the archive
// lacks is an error too.
func extractAll(tr *tar.Reader, file, tmp string, m *Manifest) error {
	want := map[string]ManifestFile{}
	for _, mf := range m.Files {
		want[mf.Path] = mf
	}
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w: the archive is damaged; nothing was imported", file, err)
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		mf, ok := want[hdr.Name]
		switch {
		case !ok:
			return fmt.Errorf("%s: %s is not in the manifest: the archive was changed; nothing was imported", file, hdr.Name)
		case seen[hdr.Name]:
			return fmt.Errorf("%s: %s appears twice: the archive was changed; nothing was imported", file, hdr.Name)
		case hdr.Typeflag != tar.TypeReg:
			return fmt.Errorf("%s: %s is not a regular file: the archive was changed; nothing was imported", file, hdr.Name)
		}
		seen[hdr.Name] = true
		dest := ""
		if tmp != "" {
			dest = filepath.Join(tmp, filepath.FromSlash(mf.Path))
		}
		if err := extract(tr, file, dest, mf, hdr); err != nil {
			return err
		}
	}
	var missing []string
	for _, mf := range m.Files {
		if !seen[mf.Path] {
			missing = append(missing, mf.Path)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s, listed in its manifest: the archive is incomplete; nothing was imported", file, strings.Join(missing, ", "))
	}
	return nil
}

// moveIn moves the checked files from tmp into the cache, skipping those it
// has with the same sha256; with tmp "" (a dry run) it only says which.
func moveIn(root, tmp string, m *Manifest) (*ImportResult, error) {
	res := &ImportResult{Imported: []string{}, Skipped: []string{}}
	for _, mf := range m.Files {
		dest := filepath.Join(root, filepath.FromSlash(mf.Path))
		if sum, err := fileSHA256(dest); err == nil && sum == mf.SHA256 {
			res.Skipped = append(res.Skipped, mf.Path)
			continue
		}
		if tmp == "" {
			res.Imported = append(res.Imported, mf.Path)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return res, fmt.Errorf("create %s: %w", filepath.Dir(dest), err)
		}
		if err := os.Rename(filepath.Join(tmp, filepath.FromSlash(mf.Path)), dest); err != nil {
			return res, fmt.Errorf("move %s into the cache: %w", mf.Path, err)
		}
		res.Imported = append(res.Imported, mf.Path)
	}
	return res, nil
}

func readManifest(tr *tar.Reader, file string) (*Manifest, error) {
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: not a bootlab cache export (tar with %s first)", file, err, ManifestName)
	}
	if hdr.Name != ManifestName {
		return nil, fmt.Errorf("%s: its first entry is %s, not %s: not a bootlab cache export (make one with `bootlab cache export FILE`)", file, hdr.Name, ManifestName)
	}
	var m Manifest
	if err := json.NewDecoder(io.LimitReader(tr, 64<<20)).Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", file, ManifestName, err)
	}
	if m.Kind != ManifestKind || m.SchemaVersion != 1 {
		return nil, fmt.Errorf("%s: %s has kind %q schemaVersion %d, want %s 1: not a bootlab cache export this version reads", file, ManifestName, m.Kind, m.SchemaVersion, ManifestKind)
	}
	seen := map[string]bool{}
	for i, mf := range m.Files {
		if err := checkManifestPath(mf.Path); err != nil {
			return nil, fmt.Errorf("%s: %s files[%d]: %w", file, ManifestName, i, err)
		}
		if seen[mf.Path] {
			return nil, fmt.Errorf("%s: %s files[%d]: %s is listed twice", file, ManifestName, i, mf.Path)
		}
		seen[mf.Path] = true
		if _, err := hex.DecodeString(mf.SHA256); err != nil || len(mf.SHA256) != 64 || mf.Size < 0 {
			return nil, fmt.Errorf("%s: %s files[%d] (%s): want a size >= 0 and a 64-hex-digit sha256", file, ManifestName, i, mf.Path)
		}
	}
	return &m, nil
}

// checkManifestPath keeps every imported file inside the cache and out of
// the places that are not artifacts.
func checkManifestPath(p string) error {
	switch {
	case p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "\\"):
		return fmt.Errorf("path %q is not a clean relative path inside the cache", p)
	case skip(p) || p == ManifestName:
		return fmt.Errorf("path %q is not a cache artifact (a temporary or partial file)", p)
	case path.Base(p) == "state.json" || strings.HasPrefix(p, "labs/"):
		return fmt.Errorf("path %q looks like a lab's file: lab files never go into the cache", p)
	}
	return nil
}

func extract(tr *tar.Reader, archive, dest string, mf ManifestFile, hdr *tar.Header) error {
	if hdr.Size != mf.Size {
		return fmt.Errorf("%s: %s is %d bytes, the manifest says %d: the archive was changed; nothing was imported", archive, mf.Path, hdr.Size, mf.Size)
	}
	if dest == "" {
		return checkOnly(tr, archive, mf)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if mf.Executable {
		mode = 0o755
	}
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return fmt.Errorf("extract %s: %w", mf.Path, err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), tr)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: extract %s: %w: nothing was imported", archive, mf.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != mf.SHA256 {
		return &ChecksumError{Archive: archive, Path: mf.Path, Want: mf.SHA256, Got: got}
	}
	if err := os.Chmod(dest, mode); err != nil {
		return err
	}
	if !hdr.ModTime.IsZero() {
		_ = os.Chtimes(dest, hdr.ModTime, hdr.ModTime)
	}
	return nil
}

// checkOnly reads one file of the archive and checks it against the
// manifest, keeping nothing (a dry run).
func checkOnly(r io.Reader, archive string, mf ManifestFile) error {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return fmt.Errorf("%s: read %s: %w: nothing was imported", archive, mf.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != mf.SHA256 {
		return &ChecksumError{Archive: archive, Path: mf.Path, Want: mf.SHA256, Got: got}
	}
	return nil
}
