package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGo is a `go` for dev/fuzz.sh: each call takes the next line of its
// plan ("pass", "fail", or "crash": fail and write a failing input, as go
// test does for a real finding) and records its arguments.
const fakeGo = `#!/bin/bash
n=$(( $(wc -l < "$DIR/calls" 2>/dev/null || echo 0) + 1 ))
echo "$*" >> "$DIR/calls"
pkg=${!#}
target=$(sed -n 's/.*-fuzz \^\([A-Za-z]*\)\$.*/\1/p' <<<"$*")
case "$(sed -n "${n}p" "$DIR/plan")" in
pass) exit 0 ;;
crash) mkdir -p "$pkg/testdata/fuzz/$target"; echo input > "$pkg/testdata/fuzz/$target/$n"; echo "--- FAIL: $target"; exit 1 ;;
*) echo "--- FAIL: $target"; echo "    context deadline exceeded"; exit 1 ;;
esac
`

func runFuzzScript(t *testing.T, plan ...string) (calls []string, out string, err error) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), []byte(fakeGo), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plan"), []byte(strings.Join(plan, "\n")+"\n"), 0o644))
	for _, p := range []string{"a", "b"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, p, "testdata", "fuzz", "FuzzA"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p, "testdata", "fuzz", "FuzzA", "seed"), []byte("seed"), 0o644))
	}
	script, err := filepath.Abs(filepath.Join("dev", "fuzz.sh"))
	require.NoError(t, err)
	cmd := exec.Command(script, "3s", "1000x", "FuzzA:./a", "FuzzB:./b")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO="+filepath.Join(dir, "go"), "DIR="+dir)
	b, err := cmd.CombinedOutput()
	data, _ := os.ReadFile(filepath.Join(dir, "calls"))
	return strings.Split(strings.TrimSpace(string(data)), "\n"), string(b), err
}

// make fuzz fuzzes a target once more only when it failed without writing
// a failing input (Go's fuzzing coordinator on its own deadline); a failure
// that wrote one, or a second failure, fails the run.
func TestDevFuzzRetriesOnlyAFailureThatWroteNothing(t *testing.T) {
	t.Parallel()
	calls, out, err := runFuzzScript(t, "pass", "pass")
	require.NoError(t, err, out)
	assert.Equal(t, []string{
		"test -run ^$ -fuzz ^FuzzA$ -fuzztime 3s -fuzzminimizetime 1000x ./a",
		"test -run ^$ -fuzz ^FuzzB$ -fuzztime 3s -fuzzminimizetime 1000x ./b",
	}, calls)

	calls, out, err = runFuzzScript(t, "deadline", "pass", "pass")
	require.NoError(t, err, out)
	assert.Len(t, calls, 3, "FuzzA again, then FuzzB")
	assert.Contains(t, out, "FuzzA failed without writing a failing input (Go's fuzzing coordinator and its own deadline): once more")

	calls, out, err = runFuzzScript(t, "crash", "pass")
	require.Error(t, err)
	assert.Len(t, calls, 1, "a written input fails the run at once")
	assert.Contains(t, out, "FuzzA failed on the input written to ./a/testdata/fuzz/FuzzA")

	calls, out, err = runFuzzScript(t, "pass", "deadline", "deadline", "pass")
	require.Error(t, err)
	assert.Len(t, calls, 3, "FuzzB twice, then the run fails")
	assert.Contains(t, out, "FuzzB failed twice without writing a failing input")
}
