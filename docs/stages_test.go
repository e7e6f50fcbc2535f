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
		for _, m := range s.Markers() {
			assert.Contains(t, text, strings.TrimPrefix(m, "."), "%s names marker %s", s.DocFile(), m)
		}
	}
	readme, err := fs.ReadFile(Stages, "stages/README.md")
	require.NoError(t, err)
	for _, s := range stages.Default() {
		assert.Contains(t, string(readme), "| "+s.ID()+" | "+s.Slug+" | "+s.Script+" |")
	}
}
