package cache

import (
	"archive/tar"
	"bufio"
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

	"github.com/bootlab/bootlab/internal/userfile"
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

// ExportOptions say what Export must never include, and whether it may
// replace a file.
type ExportOptions struct {
	// LabDirs are the lab directories on this host (keys, pull secrets,
	// kubeconfigs): a cache that holds one of them is refused.
	LabDirs []string
	// Replace lets the export replace a regular file at its path
	// (--force); without it an existing file is kept and the export
	// refused. A special file (a FIFO, a device) is never replaced.
	Replace bool
}

// Export writes the cache under root to file as a tar (gzip-compressed
// when file ends in .gz or .tgz), the manifest first, every file 0644
// (0755 when executable). Nothing in a cache is secret, so a file that
// looks like it is (under a lab directory, beside a lab's state.json, or
// not readable by others) stops the export, named. The tar is written to
// a temporary file beside file and renamed to it once complete: file is
// a whole export or what it was before, never half of one. An existing
// file is refused (a userfile.Error) unless opts.Replace, before anything
// is read or written.
func Export(root, file string, opts ExportOptions) (*Manifest, error) {
	// Checked before the cache is read and hashed (WriteNew checks again).
	if err := userfile.CheckOutput(file, opts.Replace); err != nil {
		return nil, fmt.Errorf("export file %w", err)
	}
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
	err = userfile.WriteNew(file, 0o644, opts.Replace, func(w io.Writer) error { return writeExport(w, root, file, m) })
	var fe *userfile.Error
	if errors.As(err, &fe) {
		return nil, fmt.Errorf("export file %w", err)
	}
	if err != nil {
		return nil, err // each says which file, the export's or the cache's
	}
	return m, nil
}

// writeExport writes the tar of m's files under root to out.
func writeExport(out io.Writer, root, file string, m *Manifest) error {
	bw := bufio.NewWriterSize(out, 1<<20)
	var w io.Writer = bw
	var zw *gzip.Writer
	if strings.HasSuffix(file, ".gz") || strings.HasSuffix(file, ".tgz") {
		zw = gzip.NewWriter(bw)
		w = zw
	}
	tw := tar.NewWriter(w)
	if err := writeManifest(tw, m); err != nil {
		return err
	}
	for _, f := range m.Files {
		if err := addFile(tw, root, f); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write export %s: %w", file, err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return fmt.Errorf("write export %s: %w", file, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write export %s: %w", file, err)
	}
	return nil
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
