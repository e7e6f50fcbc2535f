package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The diagnosis troubleshooting.md shows is the one lab diagnose prints
// of that bundle today (testdata/bundles/etcd-unhealthy.txt, which
// lab/diagnose's tests keep), up to its table of checks.
func TestTroubleshootingShowsTodaysDiagnosis(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("troubleshooting.md")
	require.NoError(t, err)
	golden, err := os.ReadFile(filepath.Join("..", "testdata", "bundles", "etcd-unhealthy.txt"))
	require.NoError(t, err)
	head, _, ok := strings.Cut(string(golden), "\n\nSTEP ")
	require.True(t, ok)
	assert.Contains(t, string(page), "```text\n"+head+"\n```", "troubleshooting.md's example: copy it from testdata/bundles/etcd-unhealthy.txt")
}

// The practice table says where each bundle of testdata/bundles stops,
// as its diagnosis does.
func TestTroubleshootingPracticeTable(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("troubleshooting.md")
	require.NoError(t, err)
	rows := 0
	for _, line := range strings.Split(string(page), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasSuffix(strings.TrimSpace(cells[1]), ".tar.gz`") {
			continue
		}
		rows++
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		golden, err := os.ReadFile(filepath.Join("..", "testdata", "bundles", strings.TrimSuffix(name, ".tar.gz")+".txt"))
		require.NoError(t, err, name)
		verdict := strings.Split(string(golden), "\n")[3]
		first := strings.TrimSpace(cells[3])
		if strings.HasPrefix(first, "none") {
			assert.Contains(t, verdict, "✓ healthy", name)
			continue
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(first, "`"), "`")
		assert.Contains(t, verdict, "FAILED AT "+id+" ", name)
	}
	assert.Equal(t, 8, rows, "the practice table's rows")
}
