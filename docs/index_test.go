package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/README.md is the index: every page in docs/ is linked from it, and
// every link there leads to a page that exists.
func TestIndexListsEveryPage(t *testing.T) {
	t.Parallel()
	index, err := os.ReadFile("README.md")
	require.NoError(t, err)
	pages, err := filepath.Glob("*.md")
	require.NoError(t, err)
	require.Greater(t, len(pages), 5)
	for _, p := range append(pages, "stages/README.md") {
		if p == "README.md" {
			continue
		}
		assert.Contains(t, string(index), "]("+p+")", "docs/README.md does not link %s", p)
	}
	for _, part := range strings.Split(string(index), "](")[1:] {
		target, _, _ := strings.Cut(part, ")")
		assert.FileExists(t, target, "docs/README.md links %s", target)
	}
}
