package stages

import (
	"fmt"
	"strings"
)

// Evidence says how bootlab knows a release-specific fact: read in that
// release's upstream source (Verified), or inferred from pull requests
// without reading the release's bootkube.sh. A learner must be able to
// tell the two apart: on an inferred release the node's own script is the
// authority.
type Evidence struct {
	Verified bool   `json:"verified"`
	Source   string `json:"evidence"`
}

// Word is "verified" or "inferred".
func (e Evidence) Word() string {
	if e.Verified {
		return "verified"
	}
	return "inferred"
}

// Gate is one release-specific behaviour of a stage: what holds from Since
// on, through Until when a later release changed it again.
type Gate struct {
	Since Version
	// Until is the last release with the behaviour; zero: every newer one.
	Until Version
	What  string
	Evidence
}

// Releases is "4.18+", "4.16-4.17" or "4.18".
func (g Gate) Releases() string {
	switch {
	case g.Until.IsZero():
		return g.Since.String() + "+"
	case g.Until == g.Since:
		return g.Since.String()
	}
	return g.Since.String() + "-" + g.Until.String()
}

// In reports whether release v has the behaviour.
func (g Gate) In(v Version) bool {
	return !v.Less(g.Since) && (g.Until.IsZero() || !g.Until.Less(v))
}

// Release is one modelled release and how its bootkube.sh is known.
type Release struct {
	Version Version
	Evidence
}

// Where the verified facts were read. The installer's release-4.16 to
// release-4.19 bootkube.sh.template were audited for the shared reference
// notes; cluster-bootstrap's branches were read for the 13 and 15 facts.
const (
	auditedTemplate = "installer release-%s data/data/bootstrap/files/usr/local/bin/bootkube.sh.template, read"
	notRead         = "its bootkube.sh.template was not read"
)

// Releases lists every modelled release, oldest first.
func Releases() []Release {
	read := func(v string) Release {
		return Release{MustVersion(v), Evidence{Verified: true, Source: fmt.Sprintf(auditedTemplate, v)}}
	}
	return []Release{
		read("4.16"), read("4.17"), read("4.18"), read("4.19"),
		{Version{4, 20}, Evidence{Source: "modelled as 4.19: no installer PR is known to change bootkube.sh between the 4.19 and 4.20 branches; " + notRead}},
		{Version{4, 21}, Evidence{Source: "4.19 plus installer PR #10134 (image-references for the bootstrap MCC), the k8s-file log driver and azure's static pods (seen on installer main, PRs not identified); " + notRead}},
		{Version{4, 22}, Evidence{Source: "4.21 plus installer PRs #10344 (konnectivity) and #10295 (CVO --cluster-version-manifest-path); " + notRead}},
	}
}

// ReleaseOf is how release v is known; false outside Oldest..Newest.
func ReleaseOf(v Version) (Release, bool) {
	for _, r := range Releases() {
		if r.Version == v {
			return r, true
		}
	}
	return Release{}, false
}

// VerifiedReleases says which releases were read and which inferred, in
// one line: "verified 4.16, 4.17, 4.18, 4.19; inferred 4.20, 4.21, 4.22".
func VerifiedReleases() string {
	var read, inferred []string
	for _, r := range Releases() {
		if r.Verified {
			read = append(read, r.Version.String())
		} else {
			inferred = append(inferred, r.Version.String())
		}
	}
	return "verified " + strings.Join(read, ", ") + "; inferred " + strings.Join(inferred, ", ")
}

// GatesFor are the gates of s that release v has.
func (s *Stage) GatesFor(v Version) []Gate {
	var out []Gate
	for _, g := range s.Gates {
		if g.In(v) {
			out = append(out, g)
		}
	}
	return out
}
