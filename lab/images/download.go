package images

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Downloader fetches files over HTTP(S), resuming partial downloads and
// verifying sha256 sums while the bytes stream.
type Downloader struct {
	// Client defaults to a client that honours HTTP(S)_PROXY.
	Client *http.Client
	Log    *slog.Logger
	// Progress receives a progress bar (stderr); nil prints none.
	Progress io.Writer
	// TTY is true when Progress is a terminal; otherwise no bar is drawn.
	TTY bool
}

// ChecksumError is a download whose bytes did not match the published sum.
// The bad file has been removed.
type ChecksumError struct {
	URL, What, Want, Got string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s of %s is %s, want %s: the download was removed; run the command again to download it again, or check the mirror (openshift.mirrors)", e.What, e.URL, e.Got, e.Want)
}

// HTTPClient is d.Client, or a client that honours HTTP(S)_PROXY and reads
// file:// URLs (a mirror on a local disk or a mounted share).
func (d *Downloader) HTTPClient() *http.Client {
	if d.Client != nil {
		return d.Client
	}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment}
	tr.RegisterProtocol("file", http.NewFileTransport(http.Dir("/")))
	return &http.Client{Transport: tr}
}

func (d *Downloader) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Fetch downloads url to dest, verifying its sha256. The bytes go to
// dest+".partial" first (resumed on the next call after an interruption)
// and dest appears only once the sum matched.
func (d *Downloader) Fetch(ctx context.Context, url, dest, wantSHA256 string) error {
	partial := dest + ".partial"
	src, done, err := d.open(ctx, url, partial)
	if err != nil {
		return err
	}
	defer done()
	h := sha256.New()
	if _, err := io.Copy(h, src); err != nil {
		return fmt.Errorf("download %s: %w (the partial download is kept in %s; run the command again to resume)", url, err, partial)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != wantSHA256 {
		os.Remove(partial)
		return &ChecksumError{URL: url, What: "sha256", Want: wantSHA256, Got: got}
	}
	if err := os.Rename(partial, dest); err != nil {
		return fmt.Errorf("move download into place: %w", err)
	}
	return nil
}

// FetchGunzip downloads the gzip file at url and writes it decompressed to
// dest. The compressed sha256 and the uncompressed sha256 are both computed
// in the same pass as the decompression; dest appears only when both match.
// The compressed bytes are kept in dest+".gz.partial" until then, so an
// interrupted download resumes.
func (d *Downloader) FetchGunzip(ctx context.Context, url, dest, wantSHA256, wantUncompressedSHA256 string) error {
	partial := dest + ".gz.partial"
	src, done, err := d.open(ctx, url, partial)
	if err != nil {
		return err
	}
	defer done()
	hc, hu := sha256.New(), sha256.New()
	tee := io.TeeReader(src, hc)
	outPartial := dest + ".partial"
	out, err := os.OpenFile(outPartial, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", outPartial, err)
	}
	defer func() {
		out.Close()
		os.Remove(outPartial) // a no-op after the rename
	}()
	corrupt := func(what string, e error) error {
		// Bytes that do not gunzip are as bad as a wrong sum: start over.
		os.Remove(partial)
		return fmt.Errorf("%s %s: %w: the download was removed; run the command again to download it again", what, url, e)
	}
	zr, err := gzip.NewReader(tee)
	if err != nil {
		if isStreamError(err) {
			return fmt.Errorf("download %s: %w (kept %s; run the command again to resume)", url, err, partial)
		}
		return corrupt("decompress", err)
	}
	if _, err := io.Copy(io.MultiWriter(out, hu), zr); err != nil {
		if isStreamError(err) {
			return fmt.Errorf("download %s: %w (kept %s; run the command again to resume)", url, err, partial)
		}
		return corrupt("decompress", err)
	}
	// Trailing bytes after the gzip member still count for the sum.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return fmt.Errorf("download %s: %w (kept %s; run the command again to resume)", url, err, partial)
	}
	if got := sum(hc); got != wantSHA256 {
		os.Remove(partial)
		return &ChecksumError{URL: url, What: "sha256", Want: wantSHA256, Got: got}
	}
	if got := sum(hu); got != wantUncompressedSHA256 {
		os.Remove(partial)
		return &ChecksumError{URL: url, What: "uncompressed sha256", Want: wantUncompressedSHA256, Got: got}
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("write %s: %w", outPartial, err)
	}
	if err := os.Rename(outPartial, dest); err != nil {
		return fmt.Errorf("move image into place: %w", err)
	}
	os.Remove(partial)
	return nil
}

func sum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// streamError marks a failure to read the network or the partial file, as
// opposed to bad content: the partial download stays for a resume.
type streamError struct{ err error }

func (e *streamError) Error() string { return e.err.Error() }
func (e *streamError) Unwrap() error { return e.err }

func isStreamError(err error) bool {
	var se *streamError
	return errors.As(err, &se)
}

type markReader struct{ r io.Reader }

func (m markReader) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if err != nil && err != io.EOF {
		err = &streamError{err}
	}
	return n, err
}

// open returns a reader of the whole file: the bytes already in partial,
// then the rest from the server (appended to partial as they arrive).
func (d *Downloader) open(ctx context.Context, url, partial string) (io.Reader, func(), error) {
	f, have, err := openPartial(partial)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("download %s: %w", url, err)
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := d.HTTPClient().Do(req)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("download %s: %w (check the network, HTTPS_PROXY or openshift.mirrors)", url, err)
	}
	var total int64 = -1
	var body io.Reader = resp.Body
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		start, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			// Not the range we asked for: start over.
			resp.Body.Close()
			f.Close()
			os.Remove(partial)
			return d.open(ctx, url, partial)
		}
		total = size
		d.log().Info("resuming download", "url", url, "have", have)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		// The partial file already holds every byte: verify it as is.
		resp.Body.Close()
		body = strings.NewReader("")
		total = have
	case resp.StatusCode == http.StatusOK:
		if have > 0 {
			d.log().Info("server does not resume downloads; starting over", "url", url)
		}
		if err := f.Truncate(0); err != nil {
			resp.Body.Close()
			f.Close()
			return nil, nil, err
		}
		have = 0
		total = resp.ContentLength
		if total < 0 {
			// The file:// transport sets the header but not the field.
			if n, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64); err == nil {
				total = n
			}
		}
	default:
		resp.Body.Close()
		f.Close()
		return nil, nil, fmt.Errorf("download %s: HTTP %s (check the version and openshift.mirrors)", url, resp.Status)
	}
	if _, err := f.Seek(have, io.SeekStart); err != nil {
		resp.Body.Close()
		f.Close()
		return nil, nil, err
	}
	bar := newProgress(d.Progress, d.TTY, filepath.Base(url), total)
	bar.resume(have)
	// Only the bytes from the server are counted: the partial file is
	// re-read for the checksum but was downloaded before.
	src := io.MultiReader(io.NewSectionReader(f, 0, have), &countReader{r: io.TeeReader(body, f), bar: bar})
	done := func() {
		bar.finish()
		resp.Body.Close()
		f.Close()
	}
	return markReader{src}, done, nil
}

// openPartial opens (or creates) the partial download and says how many
// bytes it holds.
func openPartial(partial string) (*os.File, int64, error) {
	if err := os.MkdirAll(filepath.Dir(partial), 0o755); err != nil {
		return nil, 0, fmt.Errorf("create cache directory: %w", err)
	}
	f, err := os.OpenFile(partial, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", partial, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// parseContentRange reads "bytes start-end/size".
func parseContentRange(v string) (start, size int64, ok bool) {
	v, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, false
	}
	s, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	size = -1
	if sz != "*" {
		if size, err = strconv.ParseInt(sz, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, size, true
}

type countReader struct {
	r   io.Reader
	bar *progress
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.bar.add(int64(n))
	return n, err
}
