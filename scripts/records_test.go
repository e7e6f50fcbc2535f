package scripts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordStep is one entry added to bootkube.json, with the path the
// library must take to write it.
type recordStep struct {
	name                                string
	stage, phase, result, line, message string
	byBash                              bool
}

// TestServiceRecordsBashIsJq holds the library's bash writer of service
// records to jq's bytes: every entry is added to one file by the library
// (bash where it can, else jq) and to another by the installer's jq
// filter alone, with the same timestamp, and the two files must be equal
// after every step. It also pins which entries bash writes: the plain
// ones a stage writes must not fall back to jq (0.5 s each on an
// emulated node), and anything bash cannot escape must.
func TestServiceRecordsBashIsJq(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "jq"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s is needed: apt-get install -y %s", tool, tool)
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "records.sh")
	require.NoError(t, os.WriteFile(lib, []byte(librarySection(t, "service records")), 0o600))
	driver := `set -euoE pipefail
. "$LIB"
if service_record_by_bash "$A" "$TS"; then echo bash; else service_record_by_jq "$A" "$TS"; echo jq; fi
mv "$A.tmp" "$A"
service_record_by_jq "$B" "$TS"
mv "$B.tmp" "$B"
`
	var printable strings.Builder
	for c := byte(' '); c <= '~'; c++ {
		printable.WriteByte(c)
	}
	steps := []recordStep{
		{name: "service start", phase: "service start", byBash: true},
		{name: "stage start", stage: "openshift-manifests", phase: "stage start", byBash: true},
		{name: "stage end", stage: "openshift-manifests", phase: "stage end", result: "success", byBash: true},
		{name: "failure with caller", stage: "etcd-bootstrap", phase: "stage end", result: "failure",
			line: "123 main /run/bootlab/stages/07-etcd-bootstrap.sh", message: "stage etcd-bootstrap failed", byBash: true},
		{name: "quotes and backslashes", phase: "service end", message: `say "hi" \n \\ \" / done`, byBash: true},
		{name: "every printable byte", phase: "service end", message: printable.String(), byBash: true},
		{name: "newline", phase: "service end", message: "line one\nline two"},
		{name: "tab", phase: "service end", message: "a\tb"},
		{name: "carriage return", phase: "service end", message: "a\rb"},
		{name: "control byte", phase: "service end", message: "a\x01b"},
		{name: "delete", phase: "service end", message: "a\x7fb"},
		{name: "UTF-8", phase: "service end", message: "étape réussie ✓"},
		{name: "invalid UTF-8", phase: "service end", message: "a\xffb"},
		{name: "plain after jq", stage: "cvo-bootstrap", phase: "stage start", byBash: true},
	}
	// Each file a step can start from: none, an empty array as the
	// installer's echo writes it, a compact array jq must read, and an
	// empty file (jq writes nothing from no input).
	starts := map[string]*string{
		"absent":  nil,
		"[]":      ptr("[]\n"),
		"compact": ptr(`[{"timestamp":"2026-01-01T00:00:00Z","phase":"service start"}]`),
		"empty":   ptr(""),
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := t.TempDir()
			a, b := filepath.Join(d, "library.json"), filepath.Join(d, "jq.json")
			if start != nil {
				require.NoError(t, os.WriteFile(a, []byte(*start), 0o600))
				require.NoError(t, os.WriteFile(b, []byte(*start), 0o600))
			}
			for i, s := range steps {
				cmd := exec.Command("bash", "-c", driver)
				// A UTF-8 locale must not change what bash escapes.
				cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LIB="+lib, "A="+a, "B="+b,
					"TS=2026-11-28T15:32:12Z", "STAGE_NAME="+s.stage, "PHASE="+s.phase,
					"RESULT="+s.result, "ERROR_LINE="+s.line, "ERROR_MESSAGE="+s.message)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				require.NoError(t, err, "step %d (%s): %s", i, s.name, stderr.String())
				got, err := os.ReadFile(a)
				require.NoError(t, err)
				want, err := os.ReadFile(b)
				require.NoError(t, err)
				require.Equal(t, string(want), string(got), "step %d (%s): the library's file is jq's, byte for byte", i, s.name)
				path := strings.TrimSpace(string(out))
				switch {
				case name == "empty":
					// jq writes nothing from no input, and the file stays empty.
					assert.Equal(t, "jq", path, "step %d (%s): an empty file is jq's to read", i, s.name)
					assert.Empty(t, got, "jq leaves an empty file empty")
				case name == "compact" && i == 0:
					assert.Equal(t, "jq", path, "a file not in jq's layout is jq's to read")
				case s.byBash:
					assert.Equal(t, "bash", path, "step %d (%s) is written by bash", i, s.name)
				default:
					assert.Equal(t, "jq", path, "step %d (%s) is written by jq", i, s.name)
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }
