package images

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// Stream is the part of the CoreOS stream metadata
// (`openshift-install coreos print-stream-json`) that bootlab reads.
type Stream struct {
	Stream        string                  `json:"stream"`
	Architectures map[string]Architecture `json:"architectures"`
}

// Architecture lists the artifacts of one CPU architecture by platform.
type Architecture struct {
	Artifacts map[string]PlatformArtifacts `json:"artifacts"`
}

// PlatformArtifacts are the artifacts of one platform (qemu, metal, ...),
// by format ("qcow2.gz") and then by kind ("disk").
type PlatformArtifacts struct {
	Release string                         `json:"release"`
	Formats map[string]map[string]Artifact `json:"formats"`
}

// Artifact is one downloadable file.
type Artifact struct {
	Location           string `json:"location"`
	Signature          string `json:"signature,omitempty"`
	SHA256             string `json:"sha256"`
	UncompressedSHA256 string `json:"uncompressed-sha256,omitempty"`
}

// QEMUDisk is the qemu qcow2.gz disk of an architecture with its release.
type QEMUDisk struct {
	Stream  string
	Release string
	Artifact
}

// ParseStream decodes stream metadata JSON.
func ParseStream(data []byte) (*Stream, error) {
	var s Stream
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parse CoreOS stream metadata: %w", err)
	}
	return &s, nil
}

// QEMUDisk returns architectures.<arch>.artifacts.qemu.formats["qcow2.gz"].disk.
func (s *Stream) QEMUDisk(arch string) (QEMUDisk, error) {
	a, ok := s.Architectures[arch]
	if !ok {
		return QEMUDisk{}, fmt.Errorf("stream metadata %q has no architecture %s", s.Stream, arch)
	}
	q, ok := a.Artifacts["qemu"]
	if !ok {
		return QEMUDisk{}, fmt.Errorf("stream metadata %q has no qemu artifacts for %s", s.Stream, arch)
	}
	d, ok := q.Formats["qcow2.gz"]["disk"]
	if !ok {
		return QEMUDisk{}, fmt.Errorf("stream metadata %q has no qemu qcow2.gz disk for %s", s.Stream, arch)
	}
	if d.Location == "" || !isSHA256(d.SHA256) || !isSHA256(d.UncompressedSHA256) {
		return QEMUDisk{}, fmt.Errorf("stream metadata %q: qemu qcow2.gz disk for %s lacks location, sha256 or uncompressed-sha256", s.Stream, arch)
	}
	return QEMUDisk{Stream: s.Stream, Release: q.Release, Artifact: d}, nil
}

// FileName is the name of the decompressed image: the location's base name
// without ".gz".
func (d QEMUDisk) FileName() string {
	base := path.Base(d.Location)
	if u, err := url.Parse(d.Location); err == nil {
		base = path.Base(u.Path)
	}
	return strings.TrimSuffix(base, ".gz")
}

// WithMirror returns location with its scheme and host replaced by mirror's
// (and mirror's path, if any, put in front of location's path), so an
// offline classroom can serve the same tree from a local web server.
func WithMirror(location, mirror string) (string, error) {
	if mirror == "" {
		return location, nil
	}
	m, err := url.Parse(mirror)
	if err != nil || m.Scheme == "" || (m.Host == "" && m.Scheme != "file") {
		return "", fmt.Errorf("openshift.mirrors.rhcos %q is not an absolute http(s) or file URL", mirror)
	}
	l, err := url.Parse(location)
	if err != nil {
		return "", fmt.Errorf("artifact location %q: %w", location, err)
	}
	l.Scheme, l.Host, l.User = m.Scheme, m.Host, m.User
	if p := strings.TrimSuffix(m.Path, "/"); p != "" {
		l.Path = p + "/" + strings.TrimPrefix(l.Path, "/")
		l.RawPath = ""
	}
	return l.String(), nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
