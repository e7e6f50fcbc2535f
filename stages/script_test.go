package stages_test

import (
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/scripts"
	"github.com/bootlab/bootlab/stages"
)

// inlinedPlaceholder stands in the goldens for a file the rendered script
// inlines (the library, the stage's own script). TestDryRunGolden checks
// each against its source in scripts/, so the goldens hold only what
// rendering adds: the header and the resolved settings.
func inlinedPlaceholder(file string) string {
	return "# (scripts/" + file + ", inlined: checked against the source by TestDryRunGolden)\n"
}

// splitInlined returns the rendered script with the inlined library and
// stage script replaced by placeholders, and the two inlined texts.
func splitInlined(t *testing.T, script []byte, stageFile string) (skeleton, lib, body string) {
	t.Helper()
	const libStart = "\n# ---- scripts/lib/bootkube.sh ----\n"
	bodyStart := "\n# ---- scripts/" + stageFile + " ----\n"
	s := string(script)
	i, j := strings.Index(s, libStart), strings.Index(s, bodyStart)
	require.True(t, i >= 0 && j > i, "the rendered script inlines the library between %q and %q", libStart, bodyStart)
	skeleton = s[:i+len(libStart)] + inlinedPlaceholder("lib/bootkube.sh") + bodyStart + inlinedPlaceholder(stageFile)
	return skeleton, s[i+len(libStart) : j], s[j+len(bodyStart):]
}

// source reads scripts/name without its #! line.
func source(t *testing.T, name string) string {
	t.Helper()
	data, err := fs.ReadFile(scripts.FS, name)
	require.NoError(t, err)
	text := string(data)
	if strings.HasPrefix(text, "#!") {
		text = text[strings.Index(text, "\n")+1:]
	}
	return text
}

// TestDryRunGolden: the script each stage sends is the golden file (header
// and every setting filled in) with the library inlined verbatim and the
// stage script inlined without the one line that sources the library
// (go test ./stages -run Golden -update).
func TestDryRunGolden(t *testing.T) {
	t.Parallel()
	wantLib := source(t, "lib/bootkube.sh")
	for _, s := range stages.Default() {
		t.Run(s.Label(), func(t *testing.T) {
			t.Parallel()
			rendered, err := stages.RenderScript(scripts.FS, s, testVars("4.19"))
			require.NoError(t, err)
			skeleton, gotLib, gotBody := splitInlined(t, rendered, s.ScriptFile())
			assert.Equal(t, strings.TrimRight(wantLib, "\n"), strings.TrimRight(gotLib, "\n"), "the library is inlined verbatim")
			var wantBody []string
			sourcing := 0
			for _, line := range strings.SplitAfter(source(t, s.ScriptFile()), "\n") {
				if strings.Contains(line, "# bootlab: library") {
					sourcing++
					continue
				}
				wantBody = append(wantBody, line)
			}
			assert.Equal(t, 1, sourcing, "%s sources the library on exactly one line", s.ScriptFile())
			assert.Equal(t, strings.Join(wantBody, ""), gotBody, "the stage script is inlined without its library line")
			got := []byte(skeleton)
			testutil.Golden(t, filepath.Join("..", "testdata", "stages", "golden", s.ScriptFile()), got)
		})
	}
}

func TestRenderedScriptsAreValidBash(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "bash is needed: apt-get install bash")
	for _, s := range stages.Default() {
		for _, v := range []string{"4.16", "4.20", "4.22"} {
			got, err := stages.RenderScript(scripts.FS, s, testVars(v))
			require.NoError(t, err)
			cmd := exec.Command(bash, "-n")
			cmd.Stdin = bytesReader(got)
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "%s on %s: %s", s.Label(), v, out)
			assert.NotContains(t, string(got), "# bootlab: library", "the library line is replaced by the library")
			assert.Contains(t, string(got), "\nOPENSHIFT_VERSION="+v+"\n")
		}
	}
}

func TestRenderQuotesValues(t *testing.T) {
	t.Parallel()
	s, err := stages.Default().Lookup("06")
	require.NoError(t, err)
	v := testVars("4.19")
	v.ClusterProfile = "it's odd"
	got, err := stages.RenderScript(scripts.FS, s, v)
	require.NoError(t, err)
	assert.Contains(t, string(got), `CLUSTER_PROFILE='it'\''s odd'`)
}
