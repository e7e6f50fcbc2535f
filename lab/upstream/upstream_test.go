package upstream

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/release"
)

// site is a local stand-in for dl.k8s.io/release and etcd's GitHub
// releases, in their layouts: /k8s/v<version>/bin/linux/amd64/<name> with
// <name>.sha256 beside, and /etcd/v<version>/etcd-v<version>-linux-amd64.tar.gz
// with SHA256SUMS beside.
type site struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
	// full counts the requests for a whole file (no Range: not a probe).
	full  map[string]int
	delay time.Duration
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{files: map[string][]byte{}, hits: map[string]int{}, full: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		body, ok := s.files[r.URL.Path]
		s.hits[r.URL.Path]++
		if r.Header.Get("Range") == "" {
			s.full[r.URL.Path]++
		}
		delay := s.delay
		s.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) sites() Sites { return Sites{Kubernetes: s.URL + "/k8s", Etcd: s.URL + "/etcd"} }

func (s *site) put(path string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = body
}

func (s *site) downloads(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.full[path]
}

func (s *site) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.hits {
		n += c
	}
	return n
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// publish puts 4.19's Kubernetes binaries and etcd tarball on the site
// and returns the release with the checksums the test computed pinned.
func publish(t *testing.T, s *site) release.Release {
	t.Helper()
	r, err := release.For("4.19")
	require.NoError(t, err)
	r.Checksums = map[string]string{}
	for _, a := range r.KubernetesArtefacts() {
		body := []byte("#!/bin/sh\necho " + a.Name() + " v" + r.Kubernetes + "\n")
		s.put("/k8s/"+a.Path, body)
		s.put("/k8s/"+a.Path+".sha256", []byte(sum(body)))
		r.Checksums[a.Key()] = sum(body)
	}
	a := r.EtcdArtefact()
	tgz := etcdTarball(t, r.Etcd.Shipped)
	s.put("/etcd/"+a.Path, tgz)
	s.put("/etcd/v"+r.Etcd.Shipped+"/SHA256SUMS", []byte(sum(tgz)+"  "+a.Name()+"\n"))
	r.Checksums[a.Key()] = sum(tgz)
	return r
}

// etcdTarball is shaped like etcd's: one top directory with the programs
// and the documentation.
func etcdTarball(t *testing.T, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	top := "etcd-v" + version + "-linux-amd64/"
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: top, Typeflag: tar.TypeDir, Mode: 0o755}))
	for _, f := range []struct{ name, body string }{
		{"README.md", "# etcd"}, {"etcd", "etcd " + version}, {"etcdctl", "etcdctl " + version},
		{"etcdutl", "etcdutl " + version}, {"Documentation/etcd", "not a program"},
	} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: top + f.name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(f.body))}))
		_, err := tw.Write([]byte(f.body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func opts(t *testing.T, s *site) Options {
	return Options{CacheDir: t.TempDir(), Sites: s.sites(), ProbeTimeout: 2 * time.Second}
}

// With the checksums pinned and the site answering, the default downloads
// the four Kubernetes binaries as the project publishes them, says so and
// why, and a second call finds them in the cache without asking the site.
func TestDownloadsPinnedKubernetesIntoTheCache(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	r := publish(t, s)
	o := opts(t, s)
	var bar bytes.Buffer
	o.Progress, o.TTY = &bar, true

	b, err := Get(context.Background(), Kubernetes(r), o)
	require.NoError(t, err)
	assert.Equal(t, Download, b.Source)
	assert.True(t, b.Fetched)
	assert.Equal(t, "1.32.13", b.Version)
	assert.Contains(t, b.Why, "checksums are pinned in lab/release/checksums.txt and 127.0.0.1:")
	require.Len(t, b.Files, 4)
	for i, name := range release.KubernetesBinaries() {
		f := b.Files[i]
		assert.Equal(t, []string{name}, f.Names)
		assert.Equal(t, filepath.Join(o.CacheDir, "official", "kubernetes", "1.32.13-"+b.Key, name), f.Path)
		fi, err := os.Stat(f.Path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), name)
	}
	assert.Contains(t, bar.String(), "kube-apiserver", "a progress bar per download")
	assert.NoDirExists(t, OfficialDir(o.CacheDir, Kubernetes(r))+".tmp", "the staging directory goes")

	cmd, err := b.Command(context.Background(), "kubectl", "version")
	require.NoError(t, err)
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "kubectl v1.32.13\n", string(out))

	before := s.requests()
	again, err := Get(context.Background(), Kubernetes(r), o)
	require.NoError(t, err)
	assert.False(t, again.Fetched)
	assert.Equal(t, b.Files, again.Files)
	assert.Contains(t, again.Why, "cached: the official release artefacts")
	assert.Equal(t, before, s.requests(), "a cached program asks nothing of the site")
}

// etcd comes as the release tarball of the version the release ships:
// the programs are taken out of it, the rest is left.
func TestDownloadsTheEtcdTarballOfTheShippedVersion(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	r := publish(t, s)
	o := opts(t, s)
	b, err := Get(context.Background(), Etcd(r), o)
	require.NoError(t, err)
	assert.Equal(t, "3.5.26", b.Version, "the shipped version, not the built 3.5.21")
	dir := OfficialDir(o.CacheDir, Etcd(r))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"etcd", "etcdctl", "etcdutl"}, names)
	data, err := os.ReadFile(filepath.Join(dir, "etcdctl"))
	require.NoError(t, err)
	assert.Equal(t, "etcdctl 3.5.26", string(data))
	assert.Equal(t, "official-"+b.Key, b.ID)
}

// A file whose bytes are not the pinned ones is refused, named with both
// checksums, removed, and nothing is cached; the default does not quietly
// build instead.
func TestATamperedFileIsRefused(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	r := publish(t, s)
	a := r.KubernetesArtefacts()[2]
	evil := []byte("#!/bin/sh\necho pwned\n")
	s.put("/k8s/"+a.Path, evil)
	o := opts(t, s)

	_, err := Get(context.Background(), Kubernetes(r), o)
	var tampered *TamperedError
	require.ErrorAs(t, err, &tampered)
	assert.Equal(t, "kube-scheduler", tampered.File)
	msg := err.Error()
	for _, want := range []string{"kube-scheduler (" + s.URL + "/k8s/" + a.Path + ")", sum(evil), a.SHA256, "lab/release/checksums.txt pins", "nothing was cached"} {
		assert.Contains(t, msg, want)
	}
	assert.Nil(t, Cached(o.CacheDir, Kubernetes(r)))
	assert.NoDirExists(t, OfficialDir(o.CacheDir, Kubernetes(r)))
	assert.NoFileExists(t, filepath.Join(OfficialDir(o.CacheDir, Kubernetes(r))+".tmp", "download", "kube-scheduler"))
	assert.NoFileExists(t, filepath.Join(OfficialDir(o.CacheDir, Kubernetes(r))+".tmp", "download", "kube-scheduler.partial"))

	// The site fixed: the next run downloads only what it lacks.
	s.put("/k8s/"+a.Path, []byte("#!/bin/sh\necho "+a.Name()+" v"+r.Kubernetes+"\n"))
	first := "/k8s/" + r.KubernetesArtefacts()[0].Path
	before := s.downloads(first)
	b, err := Get(context.Background(), Kubernetes(r), o)
	require.NoError(t, err)
	assert.Len(t, b.Files, 4)
	assert.Equal(t, before, s.downloads(first), "a file checked by the first run is not downloaded again")
	assert.Equal(t, 2, s.downloads("/k8s/"+a.Path))
}

// A tarball whose checksum matches but which lacks etcd is not used.
func TestAnEtcdTarballWithoutEtcdIsRefused(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	r := publish(t, s)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "etcdctl", Typeflag: tar.TypeReg, Mode: 0o755, Size: 1}))
	_, _ = tw.Write([]byte("x"))
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	a := r.EtcdArtefact()
	s.put("/etcd/"+a.Path, buf.Bytes())
	r.Checksums[a.Key()] = sum(buf.Bytes())
	o := opts(t, s)
	_, err := Get(context.Background(), Etcd(r), o)
	assert.ErrorContains(t, err, "etcd 3.5.26: etcd-v3.5.26-linux-amd64.tar.gz has no etcd in its top directory")
	assert.Nil(t, Cached(o.CacheDir, Etcd(r)))
}

// Without pinned checksums the default builds, naming what is missing and
// how to fill it, and asks nothing of the site; asked to download, it
// refuses to fetch what it cannot check.
func TestUnpinnedChecksumsBuild(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	r := publish(t, s)
	r.Checksums = nil
	o := opts(t, s)
	pl := NewPlan(context.Background(), Kubernetes(r), o)
	require.NoError(t, pl.Err)
	assert.Nil(t, pl.Cached)
	assert.Equal(t, Build, pl.Source)
	assert.Equal(t, "built from the Go module proxy: lab/release/checksums.txt pins no checksum for kubernetes 1.32.13's kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (`make pin-checksums` fills them where the site is reachable)", pl.Why)
	assert.Zero(t, s.requests())

	// Every pinned release's Kubernetes builds; one lab/gobuild does not
	// pin can be neither downloaded nor built.
	old := r
	old.Kubernetes = "1.28.15"
	pl = NewPlan(context.Background(), Kubernetes(old), o)
	assert.ErrorContains(t, pl.Err, "kubernetes 1.28.15 can be neither downloaded nor built. Not downloaded: lab/release/checksums.txt pins no checksum for kubernetes 1.28.15's kube-apiserver")
	assert.ErrorContains(t, pl.Err, "is reachable). Not built: Kubernetes 1.28.15 is not one bootlab pins")

	o.Source = Download
	_, err := Get(context.Background(), Etcd(r), o)
	var np *NotPinnedError
	require.ErrorAs(t, err, &np)
	assert.EqualError(t, err, "etcd 3.5.26 cannot be downloaded: lab/release/checksums.txt pins no checksum for etcd-v3.5.26-linux-amd64.tar.gz, and bootlab downloads nothing it cannot check; pin them (`make pin-checksums` in bootlab's source, on a host with internet) or build it from the Go module proxy")
	assert.Zero(t, s.requests())
}

// A site that does not answer within the probe's bound, or answers
// without the file, means a build, saying so.
func TestASiteThatDoesNotAnswerMeansABuild(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	r := publish(t, s)
	o := opts(t, s)
	o.ProbeTimeout = 200 * time.Millisecond
	s.mu.Lock()
	s.delay = 5 * time.Second
	s.mu.Unlock()
	start := time.Now()
	pl := NewPlan(context.Background(), Kubernetes(r), o)
	assert.Less(t, time.Since(start), 4*time.Second, "the probe is bounded")
	assert.Equal(t, Build, pl.Source)
	assert.Contains(t, pl.Why, "built from the Go module proxy: 127.0.0.1:")
	assert.Contains(t, pl.Why, "did not answer within 200ms (context deadline exceeded)")

	s.mu.Lock()
	s.delay = 0
	s.mu.Unlock()
	o.Sites.Kubernetes = s.URL + "/nothing-here"
	pl = NewPlan(context.Background(), Kubernetes(r), o)
	assert.Equal(t, Build, pl.Source)
	assert.Contains(t, pl.Why, "404 Not Found")
}

// The cache comes first: a cached build is used without go or the site,
// and asked for a build, the official artefacts in the cache are passed
// over.
func TestTheCacheComesFirst(t *testing.T) {
	s := newSite(t)
	r := publish(t, s)
	o := opts(t, s)
	p := Kubernetes(r)
	path, ok := p.build.CachedPath(o.CacheDir)
	require.False(t, ok)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\necho hyperkube \"$0\" \"$@\"\n"), 0o755))
	t.Setenv("PATH", t.TempDir()) // no go

	b, err := Get(context.Background(), p, o)
	require.NoError(t, err)
	assert.Equal(t, Build, b.Source)
	assert.Equal(t, "cached: built from the Go module proxy before", b.Why)
	assert.Zero(t, s.requests())
	assert.Equal(t, sum([]byte("#!/bin/sh\necho hyperkube \"$0\" \"$@\"\n")), b.ID, "a build is known by its sha256")
	require.Len(t, b.Files, 1)
	assert.Equal(t, []string{"hyperkube", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}, b.Files[0].Names)
	cmd, err := b.Command(context.Background(), "kube-scheduler", "--version")
	require.NoError(t, err)
	assert.Equal(t, path, cmd.Path)
	assert.Equal(t, []string{"kube-scheduler", "--version"}, cmd.Args, "called by the program's name")

	o.Source = Download
	d, err := Get(context.Background(), p, o)
	require.NoError(t, err)
	assert.Equal(t, Download, d.Source)
	o.Source = Auto
	a, err := Get(context.Background(), p, o)
	require.NoError(t, err)
	assert.Equal(t, Download, a.Source, "the official artefacts first when both are cached")
	o.Source = Build
	bb, err := Get(context.Background(), p, o)
	require.NoError(t, err)
	assert.Equal(t, Build, bb.Source)
}

// Labs started together download once: the second waits on the lock and
// finds the first one's files.
func TestConcurrentGetsDownloadOnce(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	r := publish(t, s)
	o := opts(t, s)
	var wg sync.WaitGroup
	res := make([]*Binaries, 3)
	errs := make([]error, 3)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = Get(context.Background(), Etcd(r), o)
		}()
	}
	wg.Wait()
	for i := range res {
		require.NoError(t, errs[i])
		assert.Equal(t, res[0].Files, res[i].Files)
	}
	assert.Equal(t, 1, s.downloads("/etcd/"+r.EtcdArtefact().Path), "one download")
}

func TestParseSource(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Source{"": Auto, "auto": Auto, "download": Download, "build": Build} {
		got, err := ParseSource(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseSource("fetch")
	assert.EqualError(t, err, `source "fetch": want auto, download or build`)
}

func TestDefaultSitesFollowTheEnvironment(t *testing.T) {
	t.Setenv(EnvKubernetesSite, "")
	t.Setenv(EnvEtcdSite, "")
	assert.Equal(t, Sites{OfficialKubernetesSite, OfficialEtcdSite}, DefaultSites())
	t.Setenv(EnvKubernetesSite, "http://mirror.class/k8s/")
	s := DefaultSites()
	assert.Equal(t, "http://mirror.class/k8s/v1.32.13/bin/linux/amd64/kubectl",
		s.URL(release.Artefact{Site: release.SiteKubernetes, Path: "v1.32.13/bin/linux/amd64/kubectl"}))
	assert.Equal(t, fmt.Sprintf("%s/v3.5.26/x.tar.gz", OfficialEtcdSite), s.URL(release.Artefact{Site: release.SiteEtcd, Path: "v3.5.26/x.tar.gz"}))
}
