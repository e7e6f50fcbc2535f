package stagecmd

import (
	"fmt"
	"strings"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/stages"
)

// releasesSection is the explain page's section on what changes by
// release and how each fact is known: read in that release's upstream
// source (verified) or inferred from pull requests. s nil: the overview.
func releasesSection(s *stages.Stage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Verified or inferred, by release\n\n")
	if s != nil {
		gates := append(append([]stages.Gate{}, s.Gates...), stages.CommonGates()...)
		if len(s.Gates) == 0 {
			fmt.Fprintf(&b, "This stage is the same in every modelled release, except what every stage shares:\n\n")
		}
		for _, g := range gates {
			fmt.Fprintf(&b, "- %s (%s: %s): %s\n", g.Releases(), g.Word(), g.Source, g.What)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Releases: %s.\n", stages.VerifiedReleases())
	for _, r := range stages.Releases() {
		if !r.Verified {
			fmt.Fprintf(&b, "- %s (inferred): %s\n", r.Version, r.Source)
		}
	}
	fmt.Fprintf(&b, "\nOn an inferred release the node's own /usr/local/bin/bootkube.sh is the authority: `bootlab stage diff NN` compares it with bootlab's script.\n")
	return b.String()
}

// releaseNote is one line on how release v is known, for the heads of
// `stage list`; empty for a verified release.
func releaseNote(v stages.Version) string {
	r, ok := stages.ReleaseOf(v)
	if !ok || r.Verified {
		return ""
	}
	return fmt.Sprintf("OpenShift %s is inferred, not read: %s. The node's own bootkube.sh is the authority.", v, r.Source)
}

// noteInferredRelease tells a learner running stages on a real node of an
// inferred release that the node's bootkube.sh, not bootlab's model of
// the release, is the authority. A rehearsal lab runs bootlab's scripts by
// design and gets no note.
func noteInferredRelease(f *cmdutil.Factory, v stages.Version, source string, rehearsal bool) {
	r, ok := stages.ReleaseOf(v)
	if rehearsal || !ok || r.Verified {
		return
	}
	if source == stages.SourceNode {
		f.Status.Infof("note: bootlab's model of OpenShift %s is inferred (%s); this run replays the node's own bootkube.sh, which is the authority", v, r.Source)
		return
	}
	f.Status.Infof("warning: bootlab's scripts for OpenShift %s are inferred, not read from its bootkube.sh (%s): the node's own /usr/local/bin/bootkube.sh is the authority; `bootlab stage diff NN` compares it, --source node replays it", v, r.Source)
}
