package upstream

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/gobuild"
	"github.com/bootlab/bootlab/lab/release"
)

// Source is where a program's files come from.
type Source string

const (
	// Auto takes what the cache has; else downloads the official
	// artefacts when their checksums are pinned and the site answers the
	// probe; else builds.
	Auto Source = ""
	// Download takes the official artefacts only (an error when their
	// checksums are not pinned or the download fails).
	Download Source = "download"
	// Build builds from the Go module proxy only.
	Build Source = "build"
)

// ParseSource reads "", "auto", "download" or "build".
func ParseSource(s string) (Source, error) {
	switch s {
	case "", "auto":
		return Auto, nil
	case string(Download), string(Build):
		return Source(s), nil
	}
	return Auto, fmt.Errorf("source %q: want auto, download or build", s)
}

// Sites are the base URLs of the projects' download sites: an artefact's
// URL is its site's base, "/" and release.Artefact.Path.
type Sites struct {
	Kubernetes string
	Etcd       string
}

// The projects' own sites (docs/cache.md).
const (
	OfficialKubernetesSite = "https://dl.k8s.io/release"
	OfficialEtcdSite       = "https://github.com/etcd-io/etcd/releases/download"
)

// The environment variables that point the downloads at a mirror in the
// same layout (a classroom's, or a local disk as file:///...).
const (
	EnvKubernetesSite = "BOOTLAB_KUBERNETES_RELEASES_URL"
	EnvEtcdSite       = "BOOTLAB_ETCD_RELEASES_URL"
)

// DefaultSites are the mirrors the environment names, else the projects'
// own sites.
func DefaultSites() Sites {
	s := Sites{Kubernetes: OfficialKubernetesSite, Etcd: OfficialEtcdSite}
	if v := os.Getenv(EnvKubernetesSite); v != "" {
		s.Kubernetes = v
	}
	if v := os.Getenv(EnvEtcdSite); v != "" {
		s.Etcd = v
	}
	return s
}

func (s Sites) base(site string) string {
	if site == release.SiteEtcd {
		return strings.TrimSuffix(s.Etcd, "/")
	}
	return strings.TrimSuffix(s.Kubernetes, "/")
}

// URL is where an artefact is downloaded from.
func (s Sites) URL(a release.Artefact) string { return s.base(a.Site) + "/" + a.Path }

// DefaultProbeTimeout bounds the probe that decides whether a site
// answers: a host without it (an offline classroom) builds after this
// long instead of waiting on a connection.
const DefaultProbeTimeout = 3 * time.Second

// Options say where the cache is and how to fill it.
type Options struct {
	// CacheDir is the cache root.
	CacheDir string
	// Source is Auto, Download or Build.
	Source Source
	// Sites default to DefaultSites().
	Sites Sites
	// ProbeTimeout defaults to DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Client defaults to one that honours HTTP(S)_PROXY and reads file://.
	Client *http.Client
	Log    *slog.Logger
	// Progress receives a download's progress bar (stderr); TTY redraws
	// it in place (none is drawn otherwise).
	Progress io.Writer
	TTY      bool
}

func (o Options) withDefaults() Options {
	if o.Sites.Kubernetes == "" && o.Sites.Etcd == "" {
		o.Sites = DefaultSites()
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Program is one release's program as bootlab can get it: its official
// artefacts and, apart, how to build it.
type Program struct {
	// Name is "kubernetes" or "etcd".
	Name string
	// OpenShift is the release's minor.
	OpenShift string
	// Version is the official release's version: for etcd the version
	// the release ships, which the build may not match (BuildVersion).
	Version string
	// Artefacts are what is downloaded, with their pinned checksums.
	Artefacts []release.Artefact
	// Programs are the files the artefacts give, in order: each
	// Kubernetes binary, or the programs in etcd's tarball (etcdutl is
	// taken when the tarball has it).
	Programs []string
	// tarball says the one artefact is a .tar.gz holding Programs.
	tarball bool
	// build is the component lab/gobuild builds, or buildErr why not.
	build    gobuild.Component
	buildErr error
}

// Names are the programs ProgramFor knows.
func Names() []string { return []string{"kubernetes", "etcd"} }

// ProgramFor is the program name (kubernetes or etcd) of release r.
func ProgramFor(name string, r release.Release) (Program, bool) {
	switch name {
	case "kubernetes":
		return Kubernetes(r), true
	case "etcd":
		return Etcd(r), true
	}
	return Program{}, false
}

// Kubernetes is the release's control plane and kubectl: four binaries as
// the project publishes them, or one hyperkube built.
func Kubernetes(r release.Release) Program {
	c, err := gobuild.Kubernetes(r.Kubernetes)
	return Program{Name: "kubernetes", OpenShift: r.OpenShift, Version: r.Kubernetes,
		Artefacts: r.KubernetesArtefacts(), Programs: release.KubernetesBinaries(), build: c, buildErr: err}
}

// Etcd is the release's etcd: the project's release tarball of the
// version the release ships, or the nearest version the module proxy
// serves, built.
func Etcd(r release.Release) Program {
	c, err := gobuild.Etcd(r.Etcd.Module)
	return Program{Name: "etcd", OpenShift: r.OpenShift, Version: r.Etcd.Shipped,
		Artefacts: []release.Artefact{r.EtcdArtefact()}, Programs: []string{"etcd", "etcdctl", "etcdutl"},
		tarball: true, build: c, buildErr: err}
}

// BuildVersion is the version a build makes ("" when it cannot be built).
func (p Program) BuildVersion() string {
	if p.buildErr != nil {
		return ""
	}
	return p.build.Version
}

// Binaries are a program's files in the cache.
type Binaries struct {
	// Name is the program, Version the version its files are.
	Name, Version string
	// Source is Download (the official artefacts) or Build.
	Source Source
	// Why says which it is and why, for the user.
	Why string
	// Files are the files and the names each answers to.
	Files []File
	// Key names the files' directory: the build's recipe hash, or the
	// hash of the pinned checksums (16 hex digits).
	Key string
	// ID identifies the files' content for what is made from them (the
	// Kubernetes volume, the rehearsal tools): the built binary's sha256,
	// or "official-" and the hash of the pinned checksums.
	ID string
	// Fetched is true when this call downloaded or built them; Took is
	// how long that took.
	Fetched bool
	Took    time.Duration
}

// File is one file of a program and the names it answers to (by the name
// it is called by, argv[0]); the first is its file name.
type File struct {
	Path  string
	Names []string
}

// Lookup returns the file that is program.
func (b *Binaries) Lookup(program string) (File, bool) {
	for _, f := range b.Files {
		if slices.Contains(f.Names, program) {
			return f, true
		}
	}
	return File{}, false
}

// Command runs program with args: its own file, or the multi-call binary
// that answers to its name, called by that name.
func (b *Binaries) Command(ctx context.Context, program string, args ...string) (*exec.Cmd, error) {
	f, ok := b.Lookup(program)
	if !ok {
		return nil, fmt.Errorf("%s %s has no program %s", b.Name, b.Version, program)
	}
	cmd := exec.CommandContext(ctx, f.Path)
	cmd.Args = append([]string{program}, args...)
	return cmd, nil
}

// Paths are the files' paths.
func (b *Binaries) Paths() []string {
	var out []string
	for _, f := range b.Files {
		out = append(out, f.Path)
	}
	return out
}
