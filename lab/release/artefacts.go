package release

import (
	_ "embed"
	"fmt"
	"strings"
)

// checksums is the pinned sha256 of every official artefact the table's
// versions download: data beside the table, so a maintainer with internet
// fills it (`make pin-checksums`) without touching code.
//
//go:embed checksums.txt
var checksums string

// ChecksumsFile is the table's path in the source tree, for messages.
const ChecksumsFile = "lab/release/checksums.txt"

// Arch is the platform of the artefacts: the lab's nodes are amd64.
const Arch = "amd64"

// The download sites, by the first element of an artefact's path.
const (
	SiteKubernetes = "kubernetes"
	SiteEtcd       = "etcd"
)

// Artefact is one official release file: where it is under its project's
// download site and the sha256 it must have.
type Artefact struct {
	// Site is SiteKubernetes or SiteEtcd.
	Site string
	// Path is under the site's base URL:
	// "v1.32.13/bin/linux/amd64/kube-apiserver".
	Path string
	// SHA256 is the pinned checksum, "" while not pinned.
	SHA256 string
}

// Key is the artefact's line in the checksums table:
// "kubernetes/v1.32.13/bin/linux/amd64/kube-apiserver".
func (a Artefact) Key() string { return a.Site + "/" + a.Path }

// Name is the artefact's file name.
func (a Artefact) Name() string { return a.Path[strings.LastIndex(a.Path, "/")+1:] }

// KubernetesBinaries are the programs Kubernetes publishes one file each
// that a rehearsal lab runs.
func KubernetesBinaries() []string {
	return []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}
}

// KubernetesArtefacts are the release's Kubernetes server binaries and
// kubectl as the project publishes them (dl.k8s.io/release/v<version>/
// bin/linux/<arch>/<name>), with their pinned checksums.
func (r Release) KubernetesArtefacts() []Artefact {
	var out []Artefact
	for _, name := range KubernetesBinaries() {
		out = append(out, r.artefact(SiteKubernetes, fmt.Sprintf("v%s/bin/linux/%s/%s", r.Kubernetes, Arch, name)))
	}
	return out
}

// EtcdArtefact is the etcd release tarball of the version the release
// ships (etcd, etcdctl and etcdutl under etcd-v<version>-linux-<arch>/).
func (r Release) EtcdArtefact() Artefact {
	v := r.Etcd.Shipped
	return r.artefact(SiteEtcd, fmt.Sprintf("v%s/etcd-v%s-linux-%s.tar.gz", v, v, Arch))
}

func (r Release) artefact(site, path string) Artefact {
	a := Artefact{Site: site, Path: path}
	a.SHA256 = r.Checksums[a.Key()]
	return a
}

// Unpinned returns the names of the artefacts with no pinned checksum.
func Unpinned(as []Artefact) []string {
	var out []string
	for _, a := range as {
		if a.SHA256 == "" {
			out = append(out, a.Name())
		}
	}
	return out
}

// Wanted are the keys of every artefact the table's versions download,
// once each: Kubernetes's then etcd's, in table order. They are the lines
// the checksums table must have.
func Wanted(table []Release) []string {
	var kube, etcd []string
	seen := map[string]bool{}
	add := func(to *[]string, a Artefact) {
		if !seen[a.Key()] {
			seen[a.Key()] = true
			*to = append(*to, a.Key())
		}
	}
	for _, r := range table {
		for _, a := range r.KubernetesArtefacts() {
			add(&kube, a)
		}
		add(&etcd, r.EtcdArtefact())
	}
	return append(kube, etcd...)
}

// ParseChecksums reads a checksums table: "<sha256>  <key>" lines, "-"
// for a checksum not pinned yet, # comments and blank lines. The map has
// the pinned ones.
func ParseChecksums(text string) (map[string]string, error) {
	out := map[string]string{}
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, key, ok := strings.Cut(line, "  ")
		key = strings.TrimSpace(key)
		site, _, _ := strings.Cut(key, "/")
		switch {
		case !ok || key == "" || strings.ContainsAny(key, " \t"):
			return nil, fmt.Errorf("line %d: want <sha256>, two spaces and the artefact's path, got %q", i+1, line)
		case site != SiteKubernetes && site != SiteEtcd:
			return nil, fmt.Errorf("line %d: %s: the path starts with %s/ or %s/", i+1, key, SiteKubernetes, SiteEtcd)
		case seen[key]:
			return nil, fmt.Errorf("line %d: %s is listed twice", i+1, key)
		case sum != "-" && !isSHA256(sum):
			return nil, fmt.Errorf("line %d: %s: checksum %q is not 64 lowercase hex digits (or - while not pinned)", i+1, key, sum)
		}
		seen[key] = true
		if sum != "-" {
			out[key] = sum
		}
	}
	return out, nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// pinnedChecksums is the embedded table; the tests hold it to the format,
// so a malformed one never ships.
func pinnedChecksums() map[string]string {
	sums, err := ParseChecksums(checksums)
	if err != nil {
		panic(fmt.Sprintf("%s: %v", ChecksumsFile, err))
	}
	return sums
}
