package stages

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// payloadCommand, run by real bash on a release-image.sh written here,
// prints what the file names and nothing inherited, and leaves the shell
// that runs it as it was (a node's shell runs every command of a stage run).
func TestPayloadCommandWithRealBash(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "bash is needed")
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"tag and digest", "#!/usr/bin/env bash\nset -euo pipefail\nRELEASE_IMAGE=quay.io/example/release:4.19.10\nRELEASE_IMAGE_DIGEST=quay.io/example/release@sha256:0123\nimage_for() { echo x; }\n",
			[]string{"quay.io/example/release:4.19.10", "quay.io/example/release@sha256:0123"}},
		{"digest only", "set -euo pipefail\nRELEASE_IMAGE_DIGEST=quay.io/example/release@sha256:0123\n",
			[]string{"quay.io/example/release@sha256:0123"}},
		{"tag only", "RELEASE_IMAGE=quay.io/example/release:4.19.10\n",
			[]string{"quay.io/example/release:4.19.10"}},
		{"a file that fails before naming one", "set -euo pipefail\nfalse\nRELEASE_IMAGE=quay.io/example/release:4.19.10\n", nil},
		{"a file that exits", "exit 3\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "release-image.sh")
			require.NoError(t, os.WriteFile(path, []byte(tc.file), 0o755))
			cmd := strings.ReplaceAll(payloadCommand, NodeReleaseImage, path)
			require.NotEqual(t, payloadCommand, cmd, "the command names %s", NodeReleaseImage)
			// The caller's shell has both variables (inherited and its own)
			// and options of its own; none of them leaks in or is changed.
			script := "RELEASE_IMAGE=outer\n" + cmd + "\necho \"after: ${RELEASE_IMAGE} $-\"\n"
			c := exec.Command(bash, "-c", script)
			c.Env = append(os.Environ(), "RELEASE_IMAGE_DIGEST=inherited@sha256:ffff")
			out, err := c.Output()
			require.NoError(t, err)
			// A file that fails ends the subshell before its echo, as it
			// ended the bash the command once started: no payload.
			printed, after, ok := strings.Cut(string(out), "after: ")
			require.True(t, ok, "%s", out)
			assert.Equal(t, tc.want, nilIfEmpty(strings.Fields(printed)))
			assert.Equal(t, "outer hBc\n", after, "the caller's shell is as it was (no set -e or -u from the file)")
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
