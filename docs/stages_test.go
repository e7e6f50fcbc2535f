package docs

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/stages"
)

// Every stage has its page, and every page has the sections a learner
// relies on.
func TestEveryStageHasItsPage(t *testing.T) {
	t.Parallel()
	sections := []string{
		"## What and why", "## Prerequisites", "## What is running after it", "## Where it runs",
		"## The bootkube equivalent", "## Files that appear", "## Static pods that start",
		"## Expected output", "## Hand checks", "## Common failures and their signs",
		"## Break it and see", "## How long it takes", "## Next",
	}
	for _, s := range stages.Default() {
		page, err := fs.ReadFile(Stages, "stages/"+s.DocFile())
		require.NoError(t, err, "docs/stages/%s", s.DocFile())
		text := string(page)
		assert.True(t, strings.HasPrefix(text, "# Stage "+s.ID()+": "), "%s starts with its title", s.DocFile())
		at := -1
		for _, sec := range sections {
			i := strings.Index(text, "\n"+sec+"\n")
			assert.Greater(t, i, at, "%s: %q in its place", s.DocFile(), sec)
			at = max(at, i)
		}
		// A break-it exercise says how `stage reset` goes back (or why not),
		// and the timings say whether they are measured or estimated.
		brk := text[strings.Index(text, "\n## Break it and see\n"):]
		assert.Contains(t, brk, "bootlab stage reset ", "%s: the exercise names its reset", s.DocFile())
		assert.Regexp(t, `(?s)## How long it takes.*(measured|estimated)`, text, "%s says how it knows", s.DocFile())
		checkHandChecks(t, s.DocFile(), text)
		for _, m := range s.Markers() {
			assert.Contains(t, text, strings.TrimPrefix(m, "."), "%s names marker %s", s.DocFile(), m)
		}
	}
	readme, err := fs.ReadFile(Stages, "stages/README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), "4.20 to 4.22\nare **inferred**", "the overview says which releases were read")
	require.NoError(t, err)
	for _, s := range stages.Default() {
		assert.Contains(t, string(readme), "| "+s.ID()+" | "+s.Slug+" | "+s.Script+" |")
	}
}

// refused are what the rehearsal lab's stand-ins do not play: a hand check
// that needs them is marked real node only, in prose, never in a fence a
// learner pastes into a rehearsal bootstrap.
var refused = []string{"crictl logs", "journalctl", "oc get", "oc --kubeconfig", "sudo oc "}

// checkHandChecks holds the fenced commands of a page's hand checks to what
// works on a rehearsal lab as written.
func checkHandChecks(t *testing.T, page, text string) {
	t.Helper()
	start := strings.Index(text, "\n## Hand checks\n")
	end := strings.Index(text, "\n## Common failures and their signs\n")
	require.True(t, start >= 0 && end > start, "%s: hand checks before common failures", page)
	inFence, cont := false, ""
	for _, line := range strings.Split(text[start:end], "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			continue
		}
		// A command continued with a backslash is checked whole.
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\")
			continue
		}
		line, cont = cont+line, ""
		for _, r := range refused {
			assert.NotContains(t, line, r, "%s: a pasted hand check the rehearsal refuses", page)
		}
		for _, root := range []string{"/opt/openshift/tls", "/opt/openshift/auth", "/etc/kubernetes/bootstrap-configs", "/var/log/openshift"} {
			if strings.Contains(line, root) && !strings.HasPrefix(line, "bootlab ") {
				assert.Contains(t, line, "sudo ", "%s: %q reads root's files", page, line)
			}
		}
	}
}
