package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/gobuild"
	"github.com/bootlab/bootlab/lab/release"
)

// Cached returns the program's files when the cache has them (the
// official artefacts first, then a build), or nil: no network, no go,
// nothing read but directory entries (so a build's ID is not set; Get
// sets it).
func Cached(cacheDir string, p Program) *Binaries {
	if b := cachedOfficial(cacheDir, p); b != nil {
		return b
	}
	return cachedBuild(cacheDir, p)
}

func cachedBuild(cacheDir string, p Program) *Binaries {
	if p.buildErr != nil {
		return nil
	}
	path, ok := p.build.CachedPath(cacheDir)
	if !ok {
		return nil
	}
	return builtBinaries(p, &gobuild.Binary{Component: p.build, Path: path}, "cached: built from the Go module proxy before")
}

func builtBinaries(p Program, b *gobuild.Binary, why string) *Binaries {
	return &Binaries{Name: p.Name, Version: b.Component.Version, Source: Build, Why: why,
		Files: []File{{Path: b.Path, Names: b.Component.Programs}},
		Key:   b.Component.Recipe()[:16], ID: b.SHA256, Fetched: b.Built, Took: b.Took}
}

// Plan is what Get does for a program: take it from the cache, download
// it or build it, and why. Making one may probe the download site.
type Plan struct {
	Program Program
	// Cached is the cache's copy, when there is one (nothing to do).
	Cached *Binaries
	// Source is Download or Build when Cached is nil.
	Source Source
	// Why says why that source.
	Why string
	// Err is why neither can be done (Run returns it).
	Err error

	opts Options
}

// NewPlan decides how to get p: the cache's copy; else in Auto the
// official artefacts when their checksums are pinned and the site answers
// within o.ProbeTimeout, else a build; else the source o asks for.
func NewPlan(ctx context.Context, p Program, o Options) *Plan {
	o = o.withDefaults()
	pl := &Plan{Program: p, opts: o}
	switch o.Source {
	case Download:
		pl.Cached = cachedOfficial(o.CacheDir, p)
	case Build:
		pl.Cached = cachedBuild(o.CacheDir, p)
	default:
		pl.Cached = Cached(o.CacheDir, p)
	}
	if pl.Cached != nil {
		pl.Why = pl.Cached.Why
		return pl
	}
	switch o.Source {
	case Download:
		pl.Source, pl.Why = Download, "the official release artefacts, as asked"
		if missing := release.Unpinned(p.Artefacts); len(missing) > 0 {
			pl.Err = &NotPinnedError{Program: p.Name, Version: p.Version, Missing: missing}
		}
	case Build:
		pl.Source, pl.Why = Build, "built from the Go module proxy, as asked"
		pl.Err = p.buildErr
	default:
		var notDownloaded string
		pl.Source, notDownloaded = pl.auto(ctx)
		if pl.Source == Download {
			break
		}
		pl.Why = "built from the Go module proxy: " + notDownloaded
		if p.buildErr != nil {
			pl.Err = fmt.Errorf("%s %s can be neither downloaded nor built. Not downloaded: %s. Not built: %w", p.Name, p.Version, notDownloaded, p.buildErr)
		}
	}
	return pl
}

// auto is the default order: download when the checksums are pinned and
// the site answers quickly (setting Why), else build, saying why not the
// download.
func (pl *Plan) auto(ctx context.Context) (Source, string) {
	p, o := pl.Program, pl.opts
	if missing := release.Unpinned(p.Artefacts); len(missing) > 0 {
		return Build, fmt.Sprintf("%s pins no checksum for %s %s's %s (`make pin-checksums` fills them where the site is reachable)",
			release.ChecksumsFile, p.Name, p.Version, strings.Join(missing, ", "))
	}
	u := o.Sites.URL(p.Artefacts[0])
	took, err := probe(ctx, o.client(), u, o.ProbeTimeout)
	if err != nil {
		return Build, fmt.Sprintf("%s did not answer within %s (%v)", host(u), o.ProbeTimeout, err)
	}
	pl.Why = fmt.Sprintf("the official release artefacts: their checksums are pinned in %s and %s answered in %s",
		release.ChecksumsFile, host(u), took.Round(time.Millisecond))
	return Download, ""
}

// Run carries the plan out.
func (pl *Plan) Run(ctx context.Context) (*Binaries, error) {
	if pl.Cached != nil && pl.Cached.Source == Build {
		// Ensure finds it without go and reads its sha256 (the ID).
		b, err := gobuild.Ensure(ctx, pl.opts.CacheDir, pl.Program.build, pl.opts.Log)
		if err != nil {
			return nil, err
		}
		return builtBinaries(pl.Program, b, pl.Cached.Why), nil
	}
	if pl.Cached != nil {
		return pl.Cached, nil
	}
	if pl.Err != nil {
		return nil, pl.Err
	}
	p, o := pl.Program, pl.opts
	if pl.Source == Download {
		o.Log.Info("downloading the official release artefacts (once; cached)", "program", p.Name, "version", p.Version, "why", pl.Why)
		b, err := download(ctx, p, o)
		if err != nil {
			return nil, err
		}
		b.Why = pl.Why
		return b, nil
	}
	o.Log.Info("building from the Go module proxy", "program", p.Name, "version", p.build.Version, "why", pl.Why)
	b, err := gobuild.Ensure(ctx, o.CacheDir, p.build, o.Log)
	if err != nil {
		return nil, err
	}
	return builtBinaries(p, b, pl.Why), nil
}

// Get returns the program's files, from the cache, a download or a build
// (NewPlan says which).
func Get(ctx context.Context, p Program, o Options) (*Binaries, error) {
	return NewPlan(ctx, p, o).Run(ctx)
}

// NotPinnedError is a download asked of a version whose checksums are not
// pinned: bootlab downloads nothing it cannot check.
type NotPinnedError struct {
	Program, Version string
	Missing          []string
}

func (e *NotPinnedError) Error() string {
	return fmt.Sprintf("%s %s cannot be downloaded: %s pins no checksum for %s, and bootlab downloads nothing it cannot check; pin them (`make pin-checksums` in bootlab's source, on a host with internet) or build it from the Go module proxy",
		e.Program, e.Version, release.ChecksumsFile, strings.Join(e.Missing, ", "))
}

func (o Options) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return o.downloader().HTTPClient()
}

// probe asks for the first byte of u, within timeout: GET with a range,
// not HEAD, because GitHub's release downloads redirect to storage URLs
// signed for GET only.
func probe(ctx context.Context, c *http.Client, u string, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Range", "bytes=0-0")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return 0, fmt.Errorf("%s: HTTP %s", u, resp.Status)
	}
	return time.Since(start), nil
}

// host is u's host, for messages ("dl.k8s.io"), or u itself.
func host(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}
