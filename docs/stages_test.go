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
		"## What and why", "## Where it runs", "## The bootkube equivalent", "## Files that appear",
		"## Static pods that start", "## Expected output", "## Verify by hand",
		"## Common failures and their signs", "## Next",
	}
	for _, s := range stages.Default() {
		page, err := fs.ReadFile(Stages, "stages/"+s.DocFile())
		require.NoError(t, err, "docs/stages/%s", s.DocFile())
		text := string(page)
		assert.True(t, strings.HasPrefix(text, "# Stage "+s.ID()+": "), "%s starts with its title", s.DocFile())
		for _, sec := range sections {
			assert.Contains(t, text, sec, "%s", s.DocFile())
		}
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
