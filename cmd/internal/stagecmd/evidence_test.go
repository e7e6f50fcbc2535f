package stagecmd

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/stages"
)

// `stage explain` says, for the stage's release-specific behaviour, what
// was read and what is inferred, and that 4.20 is not read.
func TestExplainShowsEvidenceByRelease(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, execute(NewCmdExplain(e.f, nil), "13"))
	page := e.out.String()
	assert.Contains(t, page, "## Verified or inferred, by release")
	assert.Contains(t, page, "- 4.16-4.17 (verified: cluster-bootstrap release-4.16 27bfb59fd0")
	assert.Contains(t, page, "- 4.19+ (verified: cluster-bootstrap release-4.19")
	assert.Contains(t, page, "Releases: verified 4.16, 4.17, 4.18, 4.19; inferred 4.20, 4.21, 4.22.")
	assert.Contains(t, page, "- 4.20 (inferred): modelled as 4.19")
	assert.Less(t, strings.Index(page, "## Verified or inferred"), strings.Index(page, "## On a rehearsal lab"), "evidence before the rehearsal section")

	e.out.Reset()
	require.NoError(t, execute(NewCmdExplain(e.f, nil), "04"))
	assert.Contains(t, e.out.String(), "- 4.19+ (verified: installer 9d0ac1673b")

	e.out.Reset()
	require.NoError(t, execute(NewCmdExplain(e.f, nil), "08"))
	assert.Contains(t, e.out.String(), "- 4.22+ (inferred: installer PR #10344")

	e.out.Reset()
	require.NoError(t, execute(NewCmdExplain(e.f, nil)))
	assert.Contains(t, e.out.String(), "Releases: verified 4.16, 4.17, 4.18, 4.19; inferred", "the overview names the verified releases")
}

// `stage list` heads the table with how the release is known; JSON carries
// it and the stage's gates.
func TestListShowsWhetherTheReleaseIsVerified(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec, "--openshift-version", "4.20"))
	out := e.out.String()
	for _, l := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, len([]rune(l)), 100, "fits 100 columns: %q", l)
	}
	out = strings.ReplaceAll(out, "\n", " ")
	assert.Contains(t, out, "OpenShift 4.20 is inferred, not read: modelled as 4.19")
	assert.Contains(t, out, "The node's own bootkube.sh is the authority.")
	assert.Contains(t, out, "Releases: verified 4.16, 4.17, 4.18, 4.19; inferred 4.20, 4.21, 4.22")

	e.out.Reset()
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec, "--openshift-version", "4.18"))
	assert.Contains(t, e.out.String(), "Releases: verified 4.16, 4.17, 4.18, 4.19;")
	assert.NotContains(t, e.out.String(), "is inferred, not read", "4.18 was read")

	e.out.Reset()
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec, "-o", "json", "--openshift-version", "4.17"))
	var doc stageListDoc
	require.NoError(t, json.Unmarshal(e.out.Bytes(), &doc))
	require.NotNil(t, doc.Release)
	assert.True(t, doc.Release.Verified)
	require.Len(t, doc.Stages[12].Gates, 1, "one cluster-bootstrap behaviour in 4.17")
	assert.Equal(t, "4.16-4.17", doc.Stages[12].Gates[0].Releases)
	assert.Contains(t, doc.Stages[12].Gates[0].What, "2 master Nodes")

	e.out.Reset()
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec, "-o", "json", "--openshift-version", "4.21"))
	require.NoError(t, json.Unmarshal(e.out.Bytes(), &doc))
	assert.False(t, doc.Release.Verified)
	assert.Contains(t, doc.Release.Source, "#10134")
}

// On a real node of an inferred release, `stage run` says that the node's
// own bootkube.sh is the authority; on a verified release it says nothing.
func TestRunOnAnInferredReleaseNamesTheNodeScriptTheAuthority(t *testing.T) {
	for _, tc := range []struct {
		release, source, want string
	}{
		{"4.20", "bootlab", "warning: bootlab's scripts for OpenShift 4.20 are inferred, not read from its bootkube.sh"},
		{"4.22", "node", "note: bootlab's model of OpenShift 4.22 is inferred"},
		{"4.19", "bootlab", ""},
	} {
		t.Run(tc.release+"-"+tc.source, func(t *testing.T) {
			e := newEnv(t)
			e.f.Status = status.New(e.err, false)
			node := bootstrapNode(t, "4.22", tc.release+".1")
			node.Script = func(script string, stdout io.Writer) int { return 0 }
			require.NoError(t, node.FinishBefore(stages.Default(), 7))
			var cmd *cobra.Command
			cmd = NewCmdRun(e.f, func(o *RunOptions) error { o.Target.Node = node; return runRun(cmd, e.f, o) })
			require.NoError(t, execute(cmd, "-f", e.spec, "07", "--openshift-version", tc.release, "--source", tc.source))
			if tc.want == "" {
				assert.NotContains(t, e.err.String(), "inferred", "a verified release needs no note")
				return
			}
			assert.Contains(t, e.err.String(), tc.want)
			assert.Contains(t, e.err.String(), "authority")
		})
	}
	_, ok := stages.ReleaseOf(stages.MustVersion("4.20"))
	assert.True(t, ok)
}

// `stage explain 13` on a rehearsal lab does not credit cluster-bootstrap
// with kube-system/bootstrap: report-progress.sh writes it after
// .bootkube.done, upstream and in the lab; 14 and 15 say when the bootstrap
// member goes.
func TestRehearsalNoteOf13NamesWhoWritesTheBootstrapConfigMap(t *testing.T) {
	note := rehearsalSection(13)
	assert.Contains(t, note, "It does not write ConfigMap kube-system/bootstrap: progress.service does, after stage 15.")
	assert.Contains(t, note, "any answer from https://localhost:6443/readyz ends its API wait")
	assert.Contains(t, rehearsalSection(14), "It returns with etcd-bootstrap still a member")
	assert.Contains(t, rehearsalSection(15), "removes etcd-bootstrap (4 -> 3)")
	assert.Contains(t, note, "their etcd members join once this API answers, as upstream's join once the etcd operator runs in the cluster", "when the masters' etcd members join, upstream and here")
}
