package diagnose

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/bootlab/bootlab/internal/userfile"
)

// Bundle is what a diagnosis reads: the files of a log bundle, by their
// path below the bundle's top directory ("bootstrap/journals/bootkube.log",
// "control-plane/10.0.0.11/journals/kubelet.log", "resources/csr.json"),
// and the directories it holds. Only the files a check reads are kept
// (journals, container logs, service records, a few API objects, the
// certificates of the rendered assets, bootlab's own files): nothing else
// of the archive (rendered manifests, secrets' names, inspect output) is
// ever held or printed.
type Bundle struct {
	// Source names where the bundle came from: the archive's path, or
	// "lab NAME" for a live collection.
	Source string
	// ID is the gather id of a log-bundle-<id> top directory ("" when
	// the bundle has none): the time it was gathered, for the installer.
	ID string
	// Live is true for a live lab's collection (lab diagnose without
	// --bundle): Source is then the lab's name.
	Live bool

	files map[string]*File
	dirs  map[string]bool
	// full are the directories that hold a regular file, read or not.
	full map[string]bool
	// notes say what of the bundle was not read, and why.
	notes []string
}

// File is one file of a bundle.
type File struct {
	// Name is the file's path as the bundle holds it, top directory
	// included: what a person finds after tar xzf, and what evidence names.
	Name string
	// text is the content, held once (a string: its lines share it).
	text string
	// skipped counts the lines cut from the head of a log longer than the
	// limit (only its tail is kept): line numbers stay those of the file.
	skipped int
	lines   []Line
}

// NewBundle is an empty bundle; a collector Adds files to it.
func NewBundle(source string) *Bundle {
	return &Bundle{Source: source, files: map[string]*File{}, dirs: map[string]bool{}, full: map[string]bool{}}
}

// Add keeps data as the file at rel (a clean slash path below the bundle's
// top directory); name is how evidence names it ("" for rel). A path that
// climbs out of the bundle (.., absolute) is refused.
func (b *Bundle) Add(rel, name string, data []byte) error {
	if !safeRel(rel) {
		return fmt.Errorf("bundle %s: path %q climbs out of the bundle", b.Source, rel)
	}
	if name == "" {
		name = rel
	}
	b.files[rel] = &File{Name: name, text: string(data)}
	b.addDir(path.Dir(rel))
	b.full[path.Dir(rel)] = true
	return nil
}

// AddDir records directory rel and its parents: an empty node directory
// says the collection tried that node.
func (b *Bundle) AddDir(rel string) {
	if safeRel(rel) {
		b.addDir(rel)
	}
}

// Reads is true for the files of a bundle a diagnosis reads (kindOf): a
// live collection gathers only those.
func Reads(rel string) bool { return kindOf(rel) != skip }

// LiveReads is what a live collection gathers: what Reads accepts but the
// last `lab verify`'s record (bootlab/verify.json), which may be older
// than the lab as it stands; the live tries (bootlab/live.json) stand in.
func LiveReads(rel string) bool { return Reads(rel) && rel != "bootlab/verify.json" }

// addDir records dir and its parents.
func (b *Bundle) addDir(dir string) {
	for dir != "." && dir != "/" && dir != "" && !b.dirs[dir] {
		b.dirs[dir] = true
		dir = path.Dir(dir)
	}
}

// safeRel is true for a clean, relative slash path that stays inside.
func safeRel(rel string) bool {
	return rel != "" && !path.IsAbs(rel) && path.Clean(rel) == rel && rel != ".." && !strings.HasPrefix(rel, "../")
}

// File is the file at rel, nil when the bundle has none.
func (b *Bundle) File(rel string) *File { return b.files[rel] }

// Glob is the files whose rel path matches pattern (path.Match), by path.
func (b *Bundle) Glob(pattern string) []*File {
	var keys []string
	for rel := range b.files {
		if ok, _ := path.Match(pattern, rel); ok {
			keys = append(keys, rel)
		}
	}
	sort.Strings(keys)
	out := make([]*File, 0, len(keys))
	for _, k := range keys {
		out = append(out, b.files[k])
	}
	return out
}

// Dirs is the directories directly below dir, by name.
func (b *Bundle) Dirs(dir string) []string {
	var out []string
	for d := range b.dirs {
		if path.Dir(d) == dir {
			out = append(out, path.Base(d))
		}
	}
	sort.Strings(out)
	return out
}

// Notes say what of the bundle was not read, and why.
func (b *Bundle) Notes() []string { return b.notes }

// Limits bound what ReadBundle reads of an archive, so a huge or hostile
// file costs bounded time and memory.
type Limits struct {
	// Archive is the most bytes streamed through (uncompressed), in all.
	Archive int64
	// File is the most bytes kept of one file: a longer log keeps its
	// tail, where a bootstrap that stopped shows why; a longer JSON file
	// is not read.
	File int64
	// Kept is the most bytes kept of all files together.
	Kept int64
	// Entries is the most archive entries read.
	Entries int
	// Certs is the most certificates read.
	Certs int
}

// DefaultLimits fit a real bundle: a 45-minute bootstrap's kubelet
// journal is tens of MiB; a bundle is a few hundred MiB unpacked.
func DefaultLimits() Limits {
	return Limits{Archive: 8 << 30, File: 48 << 20, Kept: 768 << 20, Entries: 1 << 20, Certs: 2000}
}

// BundleError is a file that cannot be read as a log bundle. It names the
// file and what a bundle is, never quoting the file's content.
type BundleError struct {
	Path string
	Msg  string
}

func (e *BundleError) Error() string { return e.Path + ": " + e.Msg }

// what a bundle is, for the errors.
const bundleIs = "a log bundle is the log-bundle-<id>.tar.gz that `bootlab lab gather` or `openshift-install gather bootstrap` writes"

// ReadBundle reads the log bundle at file (a .tar.gz, or a plain .tar) with
// the default limits. The file must be a regular file (see
// internal/userfile); a file that is no bundle is a *BundleError naming it.
func ReadBundle(ctx context.Context, file string) (*Bundle, error) {
	f, _, err := userfile.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadBundleFrom(ctx, f, file, DefaultLimits())
}

// ReadBundleFrom reads a bundle archive from r; source names it in errors.
func ReadBundleFrom(ctx context.Context, r io.Reader, source string, lim Limits) (*Bundle, error) {
	tr, err := openArchive(r, source, lim)
	if err != nil {
		return nil, err
	}
	rd := &reader{b: NewBundle(source), lim: lim}
	for n := 0; ; n++ {
		if n%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if n >= lim.Entries {
			return nil, &BundleError{Path: source, Msg: fmt.Sprintf("has more than %d entries: %s", lim.Entries, bundleIs)}
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, archiveError(source, err)
		}
		if err := rd.entry(h, tr); err != nil {
			return nil, err
		}
	}
	if !rd.isBundle() {
		return nil, &BundleError{Path: source, Msg: "is an archive but no log bundle: it has no bootstrap/, control-plane/ or resources/ directory (" + bundleIs + ")"}
	}
	return rd.b, nil
}

// openArchive returns the tar reader of a gzip'd or plain tar, refusing
// anything else before reading further.
func openArchive(r io.Reader, source string, lim Limits) (*tar.Reader, error) {
	br := bufio.NewReaderSize(r, 4096)
	head, _ := br.Peek(512)
	var body io.Reader = br
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &BundleError{Path: source, Msg: "is not a readable gzip file: " + bundleIs}
		}
		zr.Multistream(true)
		inner := bufio.NewReaderSize(&capped{r: zr, left: lim.Archive, source: source}, 4096)
		if h, _ := inner.Peek(512); !isTar(h) {
			return nil, &BundleError{Path: source, Msg: "is gzip'd but holds no tar archive: " + bundleIs}
		}
		return tar.NewReader(inner), nil
	}
	if !isTar(head) {
		return nil, &BundleError{Path: source, Msg: "is neither a .tar.gz nor a .tar (its content is not shown): " + bundleIs}
	}
	return tar.NewReader(&capped{r: body, left: lim.Archive, source: source}), nil
}

// isTar is true for a ustar (POSIX or GNU) header block.
func isTar(h []byte) bool {
	return len(h) >= 263 && bytes.Equal(h[257:262], []byte("ustar"))
}

// capped fails a read past left bytes: a gzip bomb stops there.
type capped struct {
	r      io.Reader
	left   int64
	source string
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, &BundleError{Path: c.source, Msg: "unpacks to more than the limit of a log bundle (is it one?): " + bundleIs}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// archiveError turns a tar or gzip error into a BundleError, keeping a
// BundleError (the size cap) as it is.
func archiveError(source string, err error) error {
	var be *BundleError
	if errors.As(err, &be) {
		return be
	}
	return &BundleError{Path: source, Msg: "is cut short or damaged (" + err.Error() + "): gather it again, or check the copy"}
}

// reader fills a bundle from archive entries.
type reader struct {
	b     *Bundle
	lim   Limits
	kept  int64
	certs int
	// roots counts entries under a bundle directory: none means the
	// archive is no bundle.
	roots int
}

// topDirs are the first components of a bundle's paths: the installer's
// and bootlab's.
var topDirs = map[string]bool{
	"bootstrap": true, "control-plane": true, "resources": true, "rendered-assets": true,
	"bootlab": true, "unit-status": true, "failed-units.txt": true,
}

// bundleDir matches the installer's top directory, log-bundle-<id>.
var bundleDir = regexp.MustCompile(`^log-bundle-([0-9A-Za-z_-]{1,40})$`)

// relName splits an archive entry's name into the path below the bundle's
// top directory, which may be up to two directories deep (the installer's
// log-bundle-<id>/, and log-bundle-bootstrap/ inside it for a
// bootstrap-in-place bundle). ok is false for an entry outside any bundle
// directory.
func relName(name string) (rel, id string, ok bool) {
	comps := strings.Split(strings.TrimSuffix(name, "/"), "/")
	for i := 0; i < len(comps) && i <= 2; i++ {
		if topDirs[comps[i]] {
			if i > 0 {
				if m := bundleDir.FindStringSubmatch(comps[0]); m != nil {
					id = m[1]
				}
			}
			return strings.Join(comps[i:], "/"), id, true
		}
	}
	return "", "", false
}

// entry reads one archive entry.
func (rd *reader) entry(h *tar.Header, r io.Reader) error {
	name := strings.TrimPrefix(h.Name, "./")
	clean := path.Clean(strings.TrimSuffix(name, "/"))
	if name == "" || clean == "." {
		return nil
	}
	if path.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, "\x00") {
		return &BundleError{Path: rd.b.Source, Msg: fmt.Sprintf("has an entry whose path climbs out of the archive (%.80q): no bundle bootlab or the installer writes has one; it is not read", name)}
	}
	rel, id, ok := relName(clean)
	if !ok {
		return nil
	}
	rd.roots++
	if rd.b.ID == "" {
		rd.b.ID = id
	}
	switch h.Typeflag {
	case tar.TypeDir:
		rd.b.addDir(rel)
		return nil
	case tar.TypeReg:
	default:
		return nil // links, devices, FIFOs: never followed or read
	}
	rd.b.addDir(path.Dir(rel))
	rd.b.full[path.Dir(rel)] = true
	k := kindOf(rel)
	if k == skip {
		return nil
	}
	return rd.keep(rel, clean, k, h.Size, r)
}

// isBundle is true when some entry was under a bundle directory.
func (rd *reader) isBundle() bool {
	return rd.b.dirs["bootstrap"] || rd.b.dirs["control-plane"] || rd.b.dirs["resources"]
}

// kind is how a file of the bundle is read.
type kind int

const (
	skip kind = iota
	logFile
	jsonFile
	certFile
)

// kindOf says whether and how the file at rel is read: the logs and
// records the checks read, a few API objects, the rendered assets'
// certificates (never their other files), bootlab's own files.
func kindOf(rel string) kind {
	dir, base := path.Split(rel)
	switch {
	case strings.HasPrefix(rel, "rendered-assets/"):
		if strings.HasSuffix(base, ".crt") {
			return certFile
		}
		return skip
	case strings.HasPrefix(rel, "bootlab/") && strings.HasSuffix(base, ".json") && strings.Count(rel, "/") == 1:
		return jsonFile
	case dir == "bootstrap/services/" && strings.HasSuffix(base, ".json"):
		return jsonFile
	case dir == "resources/":
		switch base {
		case "nodes.json", "csr.json", "configmaps.json", "clusteroperators.json":
			return jsonFile
		case "masters.list", "nodes.list":
			return logFile
		}
		return skip
	}
	_, sub, ok := nodeDir(rel)
	if !ok {
		return skip
	}
	switch {
	case strings.HasPrefix(sub, "journals/") && strings.HasSuffix(sub, ".log"),
		strings.HasPrefix(sub, "containers/") && strings.HasSuffix(sub, ".log"),
		strings.HasPrefix(sub, "pods/") && strings.HasSuffix(sub, ".log"),
		sub == "failed-units.txt", sub == "network/ip-addr.txt", sub == "network/hostname.txt":
		return logFile
	}
	return skip
}

// nodeDir splits rel into the node directory it is under ("bootstrap",
// "control-plane/<ip>") and the rest. The bootstrap's failed units are at
// the top of the installer's bundle.
func nodeDir(rel string) (node, sub string, ok bool) {
	switch {
	case rel == "failed-units.txt":
		return "bootstrap", rel, true
	case strings.HasPrefix(rel, "bootstrap/"):
		return "bootstrap", strings.TrimPrefix(rel, "bootstrap/"), true
	case strings.HasPrefix(rel, "control-plane/"):
		addr, rest, ok := strings.Cut(strings.TrimPrefix(rel, "control-plane/"), "/")
		if !ok || addr == "" {
			return "", "", false
		}
		return "control-plane/" + addr, rest, true
	}
	return "", "", false
}

// keep reads a wanted file within the limits.
func (rd *reader) keep(rel, name string, k kind, size int64, r io.Reader) error {
	limit := rd.lim.File
	if k == certFile {
		if rd.certs >= rd.lim.Certs {
			rd.note(name, fmt.Sprintf("more than %d certificates: the rest were not read", rd.lim.Certs))
			return nil
		}
		rd.certs++
		limit = min(limit, 1<<20)
	}
	if rd.kept >= rd.lim.Kept {
		rd.note(name, "not read: the bundle's files together pass the limit of what one diagnosis reads")
		return nil
	}
	limit = min(limit, rd.lim.Kept-rd.kept)
	if k != logFile && size > limit {
		rd.note(name, fmt.Sprintf("not read: %s, larger than the %s a diagnosis reads of one file", sizeOf(size), sizeOf(limit)))
		return nil
	}
	data, skipped, err := readTail(r, size, limit)
	if err != nil {
		return archiveError(rd.b.Source, err)
	}
	if skipped > 0 {
		rd.note(name, fmt.Sprintf("only its last %s were read (%d lines before them were not)", sizeOf(limit), skipped))
	}
	rd.kept += int64(len(data))
	rd.b.files[rel] = &File{Name: name, text: string(data), skipped: skipped}
	return nil
}

// sizeOf is n bytes in MiB, or KiB below one MiB.
func sizeOf(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

func (rd *reader) note(name, why string) {
	rd.b.notes = append(rd.b.notes, name+": "+why)
}

// readTail reads r (size bytes, as its header says) to its end and keeps
// its last limit bytes, from a line start; skipped counts the lines before
// them. A file within the limit is read in one piece.
func readTail(r io.Reader, size, limit int64) (data []byte, skipped int, err error) {
	if size >= 0 && size <= limit {
		data = make([]byte, size)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, 0, err
		}
		return data, 0, nil
	}
	buf := make([]byte, 0, min(limit, 64<<10))
	chunk := make([]byte, 64<<10)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if int64(len(buf)) > 2*limit {
			var s int
			buf, s = cutHead(buf, limit)
			skipped += s
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if int64(len(buf)) > limit {
		var s int
		buf, s = cutHead(buf, limit)
		skipped += s
	}
	return buf, skipped, nil
}

// cutHead drops buf's head so that at most limit bytes are left, from the
// start of a line when one starts there, and counts the lines dropped.
func cutHead(buf []byte, limit int64) ([]byte, int) {
	cut := int64(len(buf)) - limit
	if i := bytes.IndexByte(buf[cut:], '\n'); i >= 0 {
		cut += int64(i) + 1
	}
	n := bytes.Count(buf[:cut], []byte{'\n'})
	return append([]byte(nil), buf[cut:]...), n
}
