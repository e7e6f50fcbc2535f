package stages_test

import (
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/scripts"
	"github.com/bootlab/bootlab/stages"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/stages/golden")

// libraryPlaceholder stands in the goldens for the inlined library, which
// TestDryRunGolden checks against scripts/lib/bootkube.sh itself: fifteen
// copies of it in testdata would say nothing more.
const libraryPlaceholder = "# (scripts/lib/bootkube.sh, inlined verbatim without its #! line: checked by TestDryRunGolden)\n"

// splitLibrary returns the rendered script with its inlined library replaced
// by libraryPlaceholder, and the library text.
func splitLibrary(t *testing.T, script []byte, stageFile string) (string, string) {
	t.Helper()
	const libStart = "\n# ---- scripts/lib/bootkube.sh ----\n"
	libEnd := "\n# ---- scripts/" + stageFile + " ----\n"
	s := string(script)
	i, j := strings.Index(s, libStart), strings.Index(s, libEnd)
	require.True(t, i >= 0 && j > i, "the rendered script inlines the library between %q and %q", libStart, libEnd)
	return s[:i+len(libStart)] + libraryPlaceholder + s[j:], s[i+len(libStart) : j]
}

// TestDryRunGolden: the script each stage sends, with every setting filled
// in, is exactly the golden file plus the library, inlined verbatim
// (go test ./stages -run Golden -update).
func TestDryRunGolden(t *testing.T) {
	lib, err := fs.ReadFile(scripts.FS, "lib/bootkube.sh")
	require.NoError(t, err)
	wantLib := string(lib)
	if strings.HasPrefix(wantLib, "#!") {
		wantLib = wantLib[strings.Index(wantLib, "\n")+1:]
	}
	for _, s := range stages.Default() {
		t.Run(s.Label(), func(t *testing.T) {
			rendered, err := stages.RenderScript(scripts.FS, s, testVars("4.19"))
			require.NoError(t, err)
			body, gotLib := splitLibrary(t, rendered, s.ScriptFile())
			assert.Equal(t, strings.TrimRight(wantLib, "\n"), strings.TrimRight(gotLib, "\n"), "the library is inlined verbatim")
			got := []byte(body)
			golden := filepath.Join("..", "testdata", "stages", "golden", s.ScriptFile())
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "golden missing: run go test ./stages -run Golden -update")
			assert.Equal(t, string(want), string(got))
		})
	}
}

func TestRenderedScriptsAreValidBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "bash is needed: apt-get install bash")
	for _, s := range stages.Default() {
		for _, v := range []string{"4.16", "4.20"} {
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
	s, err := stages.Default().Lookup("06")
	require.NoError(t, err)
	v := testVars("4.19")
	v.ClusterProfile = "it's odd"
	got, err := stages.RenderScript(scripts.FS, s, v)
	require.NoError(t, err)
	assert.Contains(t, string(got), `CLUSTER_PROFILE='it'\''s odd'`)
}
