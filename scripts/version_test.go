package scripts

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// librarySection is the part of lib/bootkube.sh from the "# ---- name"
// line to the next section, cut out so a test can source it alone.
func librarySection(t *testing.T, name string) string {
	t.Helper()
	lib, err := FS.ReadFile("lib/bootkube.sh")
	require.NoError(t, err)
	text := string(lib)
	start := strings.Index(text, "# ---- "+name)
	require.GreaterOrEqual(t, start, 0, "lib/bootkube.sh has a %q section", name)
	rest := text[start:]
	end := strings.Index(rest[1:], "\n# ---- ")
	require.Greater(t, end, 0, "the %q section ends at the next section", name)
	return rest[:end+1]
}

// TestImagesFileVersionIsSed holds the library's bash reader of stage
// 02's VERSION to the sed it replaced: for every file below, the two give
// the same answer, byte for byte.
func TestImagesFileVersionIsSed(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "sed"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s is needed: apt-get install -y %s", tool, tool)
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "versions.sh")
	require.NoError(t, os.WriteFile(lib, []byte(librarySection(t, "versions")), 0o600))
	files := map[string]string{
		"as stage 02 writes it":     "VERSION=4.19.3\nKUBERNETES_VERSION=1.32.7\nRELEASE_IMAGE_DIGEST=quay.io/example/release@sha256:0123\n",
		"quoted by %q":              "VERSION='4.19.0-ec.2'\nKUBERNETES_VERSION=''\n",
		"double quotes":             "VERSION=\"4.20.1\"\n",
		"several quotes":            "VERSION='\"'4.21.0\"tail\n",
		"no VERSION":                "KUBERNETES_VERSION=1.32.7\n",
		"empty":                     "",
		"empty VERSION":             "VERSION=\nKUBERNETES_VERSION=1.32.7\n",
		"no final newline":          "KUBERNETES_VERSION=1.32.7\nVERSION=4.18.9",
		"two VERSION lines":         "VERSION=4.18.1\nVERSION=4.19.2\n",
		"an empty one last":         "VERSION=4.18.1\nVERSION=''\n",
		"an empty one first":        "VERSION=\nVERSION=4.19.2\n",
		"not at the start":          " VERSION=4.19.2\nXVERSION=4.20.0\n",
		"spaces and comment":        "VERSION=4.19.2 # from oc\n",
		"backslashes":               "VERSION=4.19\\.2\\\n",
		"only quotes":               "VERSION=''''\n",
		"CRLF":                      "VERSION=4.19.2\r\n",
		"blank lines":               "\n\nVERSION=4.16.0\n\n",
		"a later line wins nothing": "VERSION=4.16.0\nVERSION=4.16.0 again\n",
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "bootlab-images.env")
			require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
			script := `set -euoE pipefail
. "$LIB"
images_file_version "$F"
printf '[%s]' "$IMAGES_VERSION"
printf '[%s]' "$(sed -n "s/^VERSION=['\"]*\([^'\"]*\).*/\1/p" "$F")"
`
			// A reader that never ends its loop fails here, not the run.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", script)
			cmd.Env = append(os.Environ(), "LIB="+lib, "F="+file)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, stderr.String())
			bashSaid, sedSaid, ok := strings.Cut(strings.TrimPrefix(string(out), "["), "][")
			require.True(t, ok, "two answers: %q", out)
			sedSaid = strings.TrimSuffix(sedSaid, "]")
			assert.Equal(t, sedSaid, bashSaid, "file %s", fmt.Sprintf("%q", content))
		})
	}
}
