package images

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	labcache "github.com/bootlab/bootlab/lab/cache"
)

const imagePath = "/art/storage/prod/streams/rhel-9.6/builds/9.6.20250402-0/x86_64/rhcos-9.6.20250402-0-qemu.x86_64.qcow2.gz"

// fakeImage is a small "qcow2" and its gzip, with their sums.
type fakeImage struct {
	raw, gz             []byte
	sha, uncompressedSH string
}

func newFakeImage(t *testing.T) fakeImage {
	t.Helper()
	r := rand.New(rand.NewSource(1))
	raw := make([]byte, 256<<10)
	copy(raw, "QFI\xfb")
	r.Read(raw[4:])
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return fakeImage{raw: raw, gz: buf.Bytes(), sha: hexsum(buf.Bytes()), uncompressedSH: hexsum(raw)}
}

func hexsum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// mirror is a local stand-in of rhcos.mirror.openshift.com.
type mirror struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	// body is what the server serves; cut > 0 drops the connection after cut bytes.
	body     []byte
	cut      int
	noRanges bool
}

func newMirror(t *testing.T, body []byte) *mirror {
	m := &mirror{body: body}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.requests = append(m.requests, r.Clone(context.Background()))
		body, cut, noRanges := m.body, m.cut, m.noRanges
		m.cut = 0
		m.mu.Unlock()
		if r.URL.Path != imagePath {
			http.NotFound(w, r)
			return
		}
		if cut > 0 {
			w.Header().Set("Content-Length", "999999999")
			w.Write(body[:cut])
			w.(http.Flusher).Flush()
			hj, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				hj.Close()
			}
			return
		}
		if noRanges {
			r.Header.Del("Range")
		}
		http.ServeContent(w, r, "image.qcow2.gz", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mirror) lastRange() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1].Header.Get("Range")
}

func (m *mirror) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

func streamFixture(t *testing.T, img fakeImage) *Stream {
	data, err := os.ReadFile("../../testdata/openshift/stream.json")
	require.NoError(t, err)
	data = bytes.ReplaceAll(data, []byte("@SHA256@"), []byte(img.sha))
	data = bytes.ReplaceAll(data, []byte("@UNCOMPRESSED_SHA256@"), []byte(img.uncompressedSH))
	s, err := ParseStream(data)
	require.NoError(t, err)
	return s
}

func TestQEMUDisk(t *testing.T) {
	t.Parallel()
	img := newFakeImage(t)
	disk, err := streamFixture(t, img).QEMUDisk("x86_64")
	require.NoError(t, err)
	assert.Equal(t, "9.6.20250402-0", disk.Release)
	assert.Equal(t, "rhcos-4.19", disk.Stream)
	assert.Equal(t, img.sha, disk.SHA256)
	assert.Equal(t, img.uncompressedSH, disk.UncompressedSHA256)
	assert.Equal(t, "rhcos-9.6.20250402-0-qemu.x86_64.qcow2", disk.FileName())

	_, err = streamFixture(t, img).QEMUDisk("aarch64")
	assert.ErrorContains(t, err, "no architecture aarch64")
}

func TestWithMirror(t *testing.T) {
	t.Parallel()
	loc := "https://rhcos.mirror.openshift.com" + imagePath
	got, err := WithMirror(loc, "http://10.0.0.5:8080")
	require.NoError(t, err)
	assert.Equal(t, "http://10.0.0.5:8080"+imagePath, got)
	got, err = WithMirror(loc, "http://classroom/mirror/")
	require.NoError(t, err)
	assert.Equal(t, "http://classroom/mirror"+imagePath, got)
	got, err = WithMirror(loc, "")
	require.NoError(t, err)
	assert.Equal(t, loc, got)
	_, err = WithMirror(loc, "not a url")
	assert.ErrorContains(t, err, "openshift.mirrors.rhcos")
}

func ensure(t *testing.T, m *mirror, img fakeImage, cache string, progress io.Writer) (RHCOSResult, error) {
	disk, err := streamFixture(t, img).QEMUDisk("x86_64")
	require.NoError(t, err)
	d := &Downloader{Progress: progress, TTY: progress != nil}
	return EnsureRHCOS(context.Background(), d, cache, disk, m.URL)
}

func TestEnsureRHCOSDownloadsVerifiesAndCaches(t *testing.T) {
	t.Parallel()
	img := newFakeImage(t)
	m := newMirror(t, img.gz)
	cache := t.TempDir()
	var bar bytes.Buffer
	res, err := ensure(t, m, img, cache, &bar)
	require.NoError(t, err)
	assert.False(t, res.Cached)
	assert.Equal(t, filepath.Join(cache, "rhcos", "rhcos-9.6.20250402-0-qemu.x86_64.qcow2"), res.Path)
	assert.Equal(t, m.URL+imagePath, res.URL)
	got, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	assert.Equal(t, img.raw, got, "the cache holds the decompressed image")
	assert.NoFileExists(t, res.Path+".gz.partial")
	assert.NoFileExists(t, res.Path+".partial")
	assert.Contains(t, bar.String(), "100%", "a progress bar was drawn")

	// Cache hit: no request at all.
	n := m.count()
	res, err = ensure(t, m, img, cache, nil)
	require.NoError(t, err)
	assert.True(t, res.Cached)
	assert.Equal(t, n, m.count())
}

func TestEnsureRHCOSResumesWithRange(t *testing.T) {
	t.Parallel()
	img := newFakeImage(t)
	m := newMirror(t, img.gz)
	cache := t.TempDir()
	dest := filepath.Join(cache, "rhcos", "rhcos-9.6.20250402-0-qemu.x86_64.qcow2")
	require.NoError(t, os.MkdirAll(filepath.Dir(dest), 0o755))
	half := len(img.gz) / 2
	require.NoError(t, os.WriteFile(dest+".gz.partial", img.gz[:half], 0o644))

	res, err := ensure(t, m, img, cache, nil)
	require.NoError(t, err)
	assert.Equal(t, "bytes="+itoa(half)+"-", m.lastRange())
	got, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	assert.Equal(t, img.raw, got)
}

func TestEnsureRHCOSInterruptedKeepsPartialThenResumes(t *testing.T) {
	t.Parallel()
	img := newFakeImage(t)
	m := newMirror(t, img.gz)
	m.cut = len(img.gz) / 3
	cache := t.TempDir()
	dest := filepath.Join(cache, "rhcos", "rhcos-9.6.20250402-0-qemu.x86_64.qcow2")

	_, err := ensure(t, m, img, cache, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run the command again to resume")
	assert.NoFileExists(t, dest, "a partial download never enters the cache")
	assert.NoFileExists(t, dest+".partial")
	fi, err := os.Stat(dest + ".gz.partial")
	require.NoError(t, err, "the partial download is kept for a resume")
	assert.Equal(t, int64(len(img.gz)/3), fi.Size())

	res, err := ensure(t, m, img, cache, nil)
	require.NoError(t, err)
	assert.Equal(t, "bytes="+itoa(len(img.gz)/3)+"-", m.lastRange())
	got, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	assert.Equal(t, img.raw, got)
}

func TestEnsureRHCOSServerWithoutRangesStartsOver(t *testing.T) {
	t.Parallel()
	img := newFakeImage(t)
	m := newMirror(t, img.gz)
	m.noRanges = true
	cache := t.TempDir()
	dest := filepath.Join(cache, "rhcos", "rhcos-9.6.20250402-0-qemu.x86_64.qcow2")
	require.NoError(t, os.MkdirAll(filepath.Dir(dest), 0o755))
	require.NoError(t, os.WriteFile(dest+".gz.partial", []byte("stale bytes from another file"), 0o644))
	res, err := ensure(t, m, img, cache, nil)
	require.NoError(t, err)
	got, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	assert.Equal(t, img.raw, got)
}

func TestEnsureRHCOSCorruptDownloadNeverCached(t *testing.T) {
	t.Parallel()
	img := newFakeImage(t)
	bad := append([]byte(nil), img.gz...)
	bad[len(bad)/2] ^= 0xff
	m := newMirror(t, bad)
	cache := t.TempDir()
	dest := filepath.Join(cache, "rhcos", "rhcos-9.6.20250402-0-qemu.x86_64.qcow2")
	_, err := ensure(t, m, img, cache, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "download it again")
	assert.NoFileExists(t, dest)
	assert.NoFileExists(t, dest+".partial")
	assert.NoFileExists(t, dest+".gz.partial", "corrupt bytes are not kept for a resume")
	assert.NoFileExists(t, dest+".sha256")
}

func TestEnsureRHCOSWrongUncompressedSum(t *testing.T) {
	t.Parallel()
	img := newFakeImage(t)
	m := newMirror(t, img.gz)
	img2 := img
	img2.uncompressedSH = strings.Repeat("0", 64)
	cache := t.TempDir()
	_, err := ensure(t, m, img2, cache, nil)
	var ce *ChecksumError
	require.True(t, errors.As(err, &ce), "got %v", err)
	assert.Equal(t, "uncompressed sha256", ce.What)
	assert.Equal(t, img.uncompressedSH, ce.Got)
	entries, _ := os.ReadDir(filepath.Join(cache, "rhcos"))
	assert.Empty(t, entries, "nothing is left in the cache")
}

func TestEnsureRHCOSStaleCacheSumRedownloads(t *testing.T) {
	t.Parallel()
	img := newFakeImage(t)
	m := newMirror(t, img.gz)
	cache := t.TempDir()
	dest := filepath.Join(cache, "rhcos", "rhcos-9.6.20250402-0-qemu.x86_64.qcow2")
	require.NoError(t, os.MkdirAll(filepath.Dir(dest), 0o755))
	require.NoError(t, os.WriteFile(dest, []byte("older image"), 0o644))
	require.NoError(t, os.WriteFile(dest+".sha256", []byte(strings.Repeat("a", 64)), 0o644))
	res, err := ensure(t, m, img, cache, nil)
	require.NoError(t, err)
	assert.False(t, res.Cached)
	got, _ := os.ReadFile(dest)
	assert.Equal(t, img.raw, got)
}

func TestFetchVerifiesSHA256(t *testing.T) {
	t.Parallel()
	body := []byte("openshift-install tarball bytes")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "x", time.Time{}, bytes.NewReader(body))
	}))
	defer srv.Close()
	dir := t.TempDir()
	d := &Downloader{}
	dest := filepath.Join(dir, "x.tar.gz")
	require.NoError(t, d.Fetch(context.Background(), srv.URL+"/x", dest, hexsum(body)))
	got, _ := os.ReadFile(dest)
	assert.Equal(t, body, got)

	dest2 := filepath.Join(dir, "y.tar.gz")
	err := d.Fetch(context.Background(), srv.URL+"/x", dest2, strings.Repeat("0", 64))
	var ce *ChecksumError
	require.True(t, errors.As(err, &ce))
	assert.NoFileExists(t, dest2)
	assert.NoFileExists(t, dest2+".partial")
}

func TestFetchHTTPErrorNamesURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	err := (&Downloader{}).Fetch(context.Background(), srv.URL+"/missing", filepath.Join(t.TempDir(), "m"), strings.Repeat("0", 64))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/missing")
	assert.Contains(t, err.Error(), "404")
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestEnsureRHCOSFromFileMirror(t *testing.T) {
	t.Parallel()
	img := newFakeImage(t)
	root := t.TempDir()
	p := filepath.Join(root, filepath.FromSlash(imagePath))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, img.gz, 0o644))
	disk, err := streamFixture(t, img).QEMUDisk("x86_64")
	require.NoError(t, err)
	var bar bytes.Buffer
	res, err := EnsureRHCOS(context.Background(), &Downloader{Progress: &bar, TTY: true}, t.TempDir(), disk, "file://"+root)
	require.NoError(t, err)
	assert.Contains(t, bar.String(), "100%", "the size is known for file:// too")
	assert.Equal(t, "file://"+root+imagePath, res.URL)
	got, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	assert.Equal(t, img.raw, got)
}

func TestProgressNothingWhenNotATerminal(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := newProgress(&b, false, "img.qcow2.gz", 1000)
	p.resume(100)
	for range 9 {
		p.add(100)
	}
	p.finish()
	assert.Empty(t, b.String())
}

// fakeClock advances only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// frames splits what a terminal receives into the lines it shows in turn.
func frames(t *testing.T, out string) []string {
	t.Helper()
	require.True(t, strings.HasPrefix(out, "\r"), "%q", out)
	assert.NotContains(t, out, "\x1b", "no escape codes: TERM=dumb shows it too")
	assert.Equal(t, 1, strings.Count(out, "\n"), "one line, ended once: %q", out)
	require.True(t, strings.HasSuffix(out, "\n"), "%q", out)
	var lines []string
	for _, f := range strings.Split(strings.TrimSuffix(out, "\n"), "\r")[1:] {
		lines = append(lines, strings.TrimRight(f, " "))
	}
	return lines
}

func TestProgressLineOnATerminal(t *testing.T) {
	t.Parallel()
	const MiB = 1 << 20
	var b bytes.Buffer
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	p := newProgressClock(&b, true, "rhcos-4.19.10-x86_64-qemu.x86_64.qcow2.gz", 1000*MiB, clk.now)
	p.resume(200 * MiB) // on disk from an earlier run: in the size, not the rate
	for range 19 {
		clk.t = clk.t.Add(100 * time.Millisecond)
		p.add(1 * MiB) // 10 MiB/s
	}
	clk.t = clk.t.Add(28100 * time.Millisecond)
	p.add(281 * MiB)
	p.finish()

	lines := frames(t, b.String())
	require.Len(t, lines, 12, "redrawn at most every %s: %q", redrawEvery, lines)
	assert.Equal(t, []string{
		"   rhcos-4.1....qcow2.gz [===>            ] 201.0 MiB / 1000.0 MiB  20%",
		"   rhcos-4.1....qcow2.gz [===>            ] 211.0 MiB / 1000.0 MiB  21%  10.0 MiB/s  ETA 1:19",
		"   rhcos-4.1....qcow2.gz [===>            ] 219.0 MiB / 1000.0 MiB  21%  10.0 MiB/s  ETA 1:18",
		"   rhcos-4.1....qcow2.gz [========>       ] 500.0 MiB / 1000.0 MiB  50%  10.0 MiB/s  ETA 0:50",
		"   rhcos-4.1....qcow2.gz [========>       ] 500.0 MiB / 1000.0 MiB  50%  10.0 MiB/s  in 0:30",
	}, []string{lines[0], lines[5], lines[9], lines[10], lines[11]})
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), lineWidth, l)
	}
}

func TestProgressUnknownSizeAndLongNames(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	p := newProgressClock(&b, true, strings.Repeat("very-long-name-", 10)+"image.raw.gz", -1, clk.now)
	clk.t = clk.t.Add(time.Hour)
	p.add(1 << 30)
	clk.t = clk.t.Add(time.Hour + 3*time.Second)
	p.add(1 << 30)
	p.finish()
	lines := frames(t, b.String())
	require.Len(t, lines, 3)
	// 2 GiB in 2:00:03 is 291.1 KiB/s; no ETA without a size.
	assert.Regexp(t, `^   very-long-name-very-.*\.\.\..*-name-image\.raw\.gz 2\.0 GiB  291\.1 KiB/s  in 2:00:03$`, lines[2])
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), lineWidth, l)
	}
}

// A resumed download counts the bytes on disk once: the bar ends at 100%
// of the file, not above it.
func TestProgressResumedDownloadEndsAtHundred(t *testing.T) {
	t.Parallel()
	img := newFakeImage(t)
	m := newMirror(t, img.gz)
	cache := t.TempDir()
	dest := filepath.Join(cache, "rhcos", "rhcos-9.6.20250402-0-qemu.x86_64.qcow2")
	require.NoError(t, os.MkdirAll(filepath.Dir(dest), 0o755))
	require.NoError(t, os.WriteFile(dest+".gz.partial", img.gz[:len(img.gz)/2], 0o644))
	var bar bytes.Buffer
	_, err := ensure(t, m, img, cache, &bar)
	require.NoError(t, err)
	lines := frames(t, bar.String())
	last := lines[len(lines)-1]
	assert.Contains(t, last, labcache.HumanSize(int64(len(img.gz)))+" / "+labcache.HumanSize(int64(len(img.gz)))+" 100%")
	assert.NotRegexp(t, `\b1[0-9][0-9]%`, strings.ReplaceAll(bar.String(), "100%", ""), "never above 100%%")
}

func TestShorten(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "short.gz", shorten("short.gz", 12))
	assert.Equal(t, "abcd...wxyz", shorten("abcdefghijklmnopqrstuvwxyz", 11))
	assert.Equal(t, "0:00", clock(0))
	assert.Equal(t, "1:01:01", clock(time.Hour+time.Minute+time.Second))
}

func TestDefaultCacheDirIsTheSharedRoot(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_CACHE) changes the whole process's environment.
	t.Setenv("BOOTLAB_CACHE", t.TempDir())
	require.Equal(t, os.Getenv("BOOTLAB_CACHE"), DefaultCacheDir())
}
