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
)

// ManifestName is the first entry of an exported cache: every file's path,
// size and sha256, which Import checks before it moves anything into place.
const ManifestName = "bootlab-cache-manifest.json"

// ManifestKind marks the manifest document.
const ManifestKind = "CacheManifest"

// Manifest lists the files of an exported cache.
type Manifest struct {
	SchemaVersion int            `json:"schemaVersion"`
	Kind          string         `json:"kind"`
	Files         []ManifestFile `json:"files"`
}

// ManifestFile is one file of an export.
type ManifestFile struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	SHA256     string `json:"sha256"`
	Executable bool   `json:"executable,omitempty"`
}

// ExportOptions say what Export must never include.
type ExportOptions struct {
	// LabDirs are the lab directories on this host (keys, pull secrets,
	// kubeconfigs): a cache that holds one of them is refused.
	LabDirs []string
}

// Export writes the cache under root to file as a tar (gzip-compressed
// when file ends in .gz or .tgz), the manifest first, every file 0644
// (0755 when executable). Nothing in a cache is secret, so a file that
// looks like it is (under a lab directory, beside a lab's state.json, or
// not readable by others) stops the export, named.
func Export(root, file string, opts ExportOptions) (*Manifest, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	absFile, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	if within(absFile, absRoot) {
		return nil, fmt.Errorf("export file %s is inside the cache %s: write it elsewhere", file, root)
	}
	if err := checkNoLabs(absRoot, opts.LabDirs); err != nil {
		return nil, err
	}
	entries, err := List(root)
	if err != nil {
		return nil, err
	}
	m := &Manifest{SchemaVersion: 1, Kind: ManifestKind, Files: []ManifestFile{}}
	for _, e := range entries {
		if err := checkNotSecret(absRoot, e.Path); err != nil {
			return nil, err
		}
		m.Files = append(m.Files, ManifestFile{Path: e.Path, Size: e.Size, SHA256: e.SHA256, Executable: e.Executable})
	}
	tmp := file + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create export %s: %w", file, err)
	}
	defer func() {
		out.Close()
		os.Remove(tmp) // a no-op after the rename
	}()
	bw := bufio.NewWriterSize(out, 1<<20)
	var w io.Writer = bw
	var zw *gzip.Writer
	if strings.HasSuffix(file, ".gz") || strings.HasSuffix(file, ".tgz") {
		zw = gzip.NewWriter(bw)
		w = zw
	}
	tw := tar.NewWriter(w)
	if err := writeManifest(tw, m); err != nil {
		return nil, err
	}
	for _, f := range m.Files {
		if err := addFile(tw, root, f); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("write export %s: %w", file, err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("write export %s: %w", file, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("write export %s: %w", file, err)
	}
	if err := out.Close(); err != nil {
		return nil, fmt.Errorf("write export %s: %w", file, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, file); err != nil {
		return nil, fmt.Errorf("move export into place: %w", err)
	}
	return m, nil
}

func writeManifest(tw *tar.Writer, m *Manifest) error {
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	body = append(body, '\n')
	if err := tw.WriteHeader(&tar.Header{Name: ManifestName, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = tw.Write(body)
	return err
}

func addFile(tw *tar.Writer, root string, f ManifestFile) error {
	p := filepath.Join(root, filepath.FromSlash(f.Path))
	in, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("export %s: %w", f.Path, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != f.Size {
		return fmt.Errorf("export %s: it changed while the cache was exported (a download running?): run the export again", f.Path)
	}
	mode := int64(0o644)
	if f.Executable {
		mode = 0o755
	}
	hdr := &tar.Header{Name: f.Path, Mode: mode, Size: f.Size, ModTime: fi.ModTime(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("export %s: %w", f.Path, err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(tw, h), in, f.Size); err != nil {
		return fmt.Errorf("export %s: %w", f.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return fmt.Errorf("export %s: it changed while the cache was exported (a download running?): run the export again", f.Path)
	}
	return nil
}

// within says whether p is dir or lies below it (both absolute).
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func checkNoLabs(root string, labDirs []string) error {
	for _, d := range labDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		if within(abs, root) || within(root, abs) {
			return fmt.Errorf("the cache %s and the lab directory %s overlap: lab directories hold keys and pull secrets, which never go into an export; set BOOTLAB_CACHE to a directory of its own", root, d)
		}
	}
	return nil
}

// checkNotSecret refuses a cache file that may be a lab's: one beside or
// below a lab's state.json, or one other users may not read (bootlab writes
// secrets 0600 and cached artifacts 0644).
func checkNotSecret(root, rel string) error {
	for dir := path.Dir(rel); ; dir = path.Dir(dir) {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir), "state.json")); err == nil {
			return fmt.Errorf("cache file %s is in a lab directory (%s holds a lab's state.json): lab files hold secrets and are never exported; move that lab out of the cache %s", rel, dir, root)
		}
		if dir == "." {
			break
		}
	}
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o004 == 0 {
		return fmt.Errorf("cache file %s is not readable by others (mode %04o), as secrets are: nothing secret belongs in the cache; remove it, or chmod 0644 it if it is not secret", rel, fi.Mode().Perm())
	}
	return nil
}

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
	return importArchive(root, file, freeBytes)
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

func importArchive(root, file string, free func(string) (uint64, error)) (*ImportResult, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("open cache archive: %w", err)
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
	want := map[string]ManifestFile{}
	for _, mf := range m.Files {
		want[mf.Path] = mf
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("create cache %s: %w", root, err)
	}
	if need := needed(root, m); need > 0 {
		if have, err := free(root); err == nil && have < need {
			return nil, fmt.Errorf("importing %s needs %s free in the cache %s (files are checked there before they move in), it has %s: free some space, or set BOOTLAB_CACHE to a larger disk", file, HumanSize(int64(need)), root, HumanSize(int64(have)))
		}
	}
	tmp, err := os.MkdirTemp(root, importPrefix)
	if err != nil {
		return nil, fmt.Errorf("create a temporary directory in the cache %s: %w", root, err)
	}
	defer os.RemoveAll(tmp)
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w: the archive is damaged; nothing was imported", file, err)
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		mf, ok := want[hdr.Name]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: %s is not in the manifest: the archive was changed; nothing was imported", file, hdr.Name)
		case seen[hdr.Name]:
			return nil, fmt.Errorf("%s: %s appears twice: the archive was changed; nothing was imported", file, hdr.Name)
		case hdr.Typeflag != tar.TypeReg:
			return nil, fmt.Errorf("%s: %s is not a regular file: the archive was changed; nothing was imported", file, hdr.Name)
		}
		seen[hdr.Name] = true
		if err := extract(tr, file, filepath.Join(tmp, filepath.FromSlash(mf.Path)), mf, hdr); err != nil {
			return nil, err
		}
	}
	var missing []string
	for _, mf := range m.Files {
		if !seen[mf.Path] {
			missing = append(missing, mf.Path)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s lacks %s, listed in its manifest: the archive is incomplete; nothing was imported", file, strings.Join(missing, ", "))
	}
	res := &ImportResult{Imported: []string{}, Skipped: []string{}}
	for _, mf := range m.Files {
		dest := filepath.Join(root, filepath.FromSlash(mf.Path))
		if sum, err := fileSHA256(dest); err == nil && sum == mf.SHA256 {
			res.Skipped = append(res.Skipped, mf.Path)
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

// HumanSize prints n bytes in binary units (512 B, 1.5 GiB).
func HumanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
