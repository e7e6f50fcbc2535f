package logbundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/atomicfile"
)

// Limits cap a bundle, so a runaway journal cannot fill the disk.
type Limits struct {
	// File is the most bytes kept of one file: a longer log keeps its
	// tail (where a bootstrap that stopped shows why), a longer other
	// file is left out.
	File int64
	// Total is the most bytes of all files together (uncompressed); a
	// file past it is left out.
	Total int64
}

// DefaultLimits keep what a diagnosis reads (lab diagnose keeps 48 MiB of
// one log) well inside a bundle the size of the installer's.
func DefaultLimits() Limits { return Limits{File: 32 << 20, Total: 512 << 20} }

// MissingFile is bootlab's list of what the bundle does not hold, and why.
const MissingFile = "bootlab/missing.json"

// Missing is one entry of MissingFile: a file or directory (its path
// below the bundle's top directory) the gather could not see or left out.
type Missing struct {
	File string `json:"file"`
	Why  string `json:"why"`
}

// Writer writes a log bundle: log-bundle-<id>.tar.gz, every entry under
// log-bundle-<id>/, as the installer's gather writes it. It is written to
// a temporary file that Commit renames into place, so a bundle that
// exists is whole.
type Writer struct {
	// Path is where Commit puts the bundle.
	Path string
	// ID is the gather id: the UTC time of the gather, YYYYMMDDhhmmss.
	ID string

	gate
	at   time.Time
	f    *atomicfile.File
	zw   *gzip.Writer
	tw   *tar.Writer
	dirs map[string]bool
}

// gate is what a bundle lets in, whether written (Writer) or held in
// memory (Memory): the filter, the limits, and the list of what it left
// out or could not see.
type gate struct {
	lim     Limits
	files   map[string]bool
	total   int64
	missing []Missing
}

func newGate(lim Limits) gate { return gate{lim: lim, files: map[string]bool{}} }

// Create starts the bundle of a gather at time at in directory dir. It
// refuses to replace a bundle of the same id.
func Create(dir string, at time.Time, lim Limits) (*Writer, error) {
	id := at.UTC().Format("20060102150405")
	w := &Writer{Path: filepath.Join(dir, "log-bundle-"+id+".tar.gz"), ID: id, gate: newGate(lim), at: at.UTC(),
		dirs: map[string]bool{}}
	if _, err := os.Lstat(w.Path); err == nil {
		return nil, fmt.Errorf("log bundle %s exists: gather again in a second, or move it away", w.Path)
	}
	f, err := atomicfile.Create(w.Path)
	if err != nil {
		return nil, err
	}
	w.f = f
	w.zw = gzip.NewWriter(f)
	w.tw = tar.NewWriter(w.zw)
	if err := w.header("", tar.TypeDir, 0); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// top is the bundle's top directory.
func (w *Writer) top() string { return "log-bundle-" + w.ID }

// header writes the tar header of rel (the top directory for "").
func (w *Writer) header(rel string, typ byte, size int64) error {
	name, mode := path.Join(w.top(), rel), int64(0o644)
	if typ == tar.TypeDir {
		name, mode = name+"/", 0o755
	}
	return w.tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Size: size, Mode: mode, ModTime: w.at, Format: tar.FormatPAX})
}

// Dir adds directory rel (and its parents): an empty one says the gather
// tried (the installer makes control-plane/<ip>/ before it logs in).
func (w *Writer) Dir(rel string) error {
	if !safe(rel) {
		return fmt.Errorf("bundle path %q climbs out of the bundle", rel)
	}
	var chain []string
	for d := rel; d != "." && !w.dirs[d]; d = path.Dir(d) {
		chain = append(chain, d)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if err := w.header(chain[i], tar.TypeDir, 0); err != nil {
			return err
		}
		w.dirs[chain[i]] = true
	}
	return nil
}

// safe is true for a clean relative slash path that stays inside.
func safe(rel string) bool {
	return rel != "" && rel != "." && !path.IsAbs(rel) && path.Clean(rel) == rel && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Add puts data in the bundle as the file at rel, through Filter and the
// limits. It returns what it wrote: 0 when the file was left out, which
// is then listed in MissingFile with why. Only a write error is an error.
func (w *Writer) Add(rel string, data []byte) (int64, error) {
	data, err := w.admit(rel, data)
	if data == nil || err != nil {
		return 0, err
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.Dir(dir); err != nil {
			return 0, err
		}
	}
	if err := w.header(rel, tar.TypeReg, int64(len(data))); err != nil {
		return 0, err
	}
	if _, err := w.tw.Write(data); err != nil {
		return 0, err
	}
	return int64(len(data)), nil
}

// admit is what of data goes in as the file at rel: through Filter and
// the limits, nil when it is left out (noted with why). A path that
// climbs out, or one added twice, is an error.
func (w *gate) admit(rel string, data []byte) ([]byte, error) {
	if !safe(rel) {
		return nil, fmt.Errorf("bundle path %q climbs out of the bundle", rel)
	}
	if w.files[rel] {
		return nil, fmt.Errorf("bundle file %s added twice", rel)
	}
	data, why := Filter(rel, data)
	if why != "" {
		w.Note(rel, "left out: "+why)
		return nil, nil
	}
	if int64(len(data)) > w.lim.File {
		if !isLog(rel) {
			w.Note(rel, fmt.Sprintf("left out: %s, more than the %s a bundle keeps of one file", size(int64(len(data))), size(w.lim.File)))
			return nil, nil
		}
		cut := tail(data, w.lim.File)
		w.Note(rel, fmt.Sprintf("only its last %s are kept (%s were cut from its head)", size(int64(len(cut))), size(int64(len(data)-len(cut)))))
		data = cut
	}
	if w.total+int64(len(data)) > w.lim.Total {
		w.Note(rel, fmt.Sprintf("left out: the bundle reached its limit of %s", size(w.lim.Total)))
		return nil, nil
	}
	w.files[rel] = true
	w.total += int64(len(data))
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// AddJSON adds v, indented, as the file at rel.
func (w *Writer) AddJSON(rel string, v any) (int64, error) { return addJSON(w.Add, rel, v) }

// addJSON adds v, indented, as the file at rel with add.
func addJSON(add func(string, []byte) (int64, error), rel string, v any) (int64, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return 0, fmt.Errorf("bundle file %s: %w", rel, err)
	}
	return add(rel, append(data, '\n'))
}

// Note lists rel in MissingFile with why.
func (w *gate) Note(rel, why string) {
	w.missing = append(w.missing, Missing{File: rel, Why: why})
}

// Missing is what the bundle lists in MissingFile so far.
func (w *gate) Missing() []Missing { return append([]Missing(nil), w.missing...) }

// Size is the bytes of all files so far, uncompressed.
func (w *gate) Size() int64 { return w.total }

// missingJSON is MissingFile's content: what was left out or not seen, by file.
func (w *gate) missingJSON() ([]byte, error) {
	ms := w.Missing()
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].File < ms[j].File })
	data, err := json.MarshalIndent(struct {
		Missing []Missing `json:"missing"`
	}{append([]Missing{}, ms...)}, "", "  ")
	return append(data, '\n'), err
}

// Commit writes MissingFile, closes the archive and renames it to Path.
func (w *Writer) Commit() error {
	data, err := w.missingJSON()
	if err == nil {
		err = w.Dir("bootlab")
	}
	if err == nil {
		// Written past the limits: it says what the limits left out.
		err = w.header(MissingFile, tar.TypeReg, int64(len(data)))
	}
	if err == nil {
		_, err = w.tw.Write(data)
	}
	err = errors.Join(err, w.tw.Close(), w.zw.Close())
	if err != nil {
		w.f.Abort()
		return fmt.Errorf("write log bundle %s: %w", w.Path, err)
	}
	if err := w.f.Commit(0o600, false); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("log bundle %s appeared while gathering: %w", w.Path, err)
		}
		return err
	}
	return nil
}

// Abort removes the temporary file: no bundle is left.
func (w *Writer) Abort() { w.f.Abort() }

// tail is data's last limit bytes, from a line start when one starts there.
func tail(data []byte, limit int64) []byte {
	cut := int64(len(data)) - limit
	if i := bytes.IndexByte(data[cut:], '\n'); i >= 0 && int64(i) < limit-1 {
		cut += int64(i) + 1
	}
	return data[cut:]
}

// size is n bytes in MiB, or KiB below one MiB.
func size(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// Wants is true: a bundle on disk keeps every file a gather collects.
func (w *Writer) Wants(string) bool { return true }
