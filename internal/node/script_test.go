package node_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/node"
)

func TestRunScriptWritesAndRunsInOneCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	tests := []struct {
		name       string
		path       string
		script     string
		wantCode   int
		wantOut    string
		wantErr    bool
		wantFileOK bool
	}{
		{"success", filepath.Join(dir, "stages", "01.sh"), "echo out; echo err >&2; read -r x || echo stdin-empty\n", 0, "out\nstdin-empty\n", false, true},
		{"the script's exit code", filepath.Join(dir, "02.sh"), "exit 3\n", 3, "", false, true},
		{"a script that exits 97 is not a failed write", filepath.Join(dir, "03.sh"), "echo x >&2; exit 97\n", 97, "", false, true},
		{"the file cannot be written", filepath.Join(blocker, "04.sh"), "echo never\n", -1, "", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b := &bashNode{}
			var out, errb bytes.Buffer
			code, err := node.RunScript(ctx, node.Command("bash", b.run), tt.path, []byte(tt.script), &out, &errb)
			assert.Equal(t, 1, b.count(), "one command")
			assert.Equal(t, tt.wantCode, code)
			assert.Equal(t, tt.wantOut, out.String())
			if tt.wantErr {
				var pe *fs.PathError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "write", pe.Op)
				assert.NotEmpty(t, pe.Err.Error(), "says why")
				return
			}
			require.NoError(t, err)
			fi, err := os.Stat(tt.path)
			require.NoError(t, err)
			assert.Equal(t, fs.FileMode(0o700), fi.Mode().Perm(), "the file stays, for the learner to rerun")
			data, err := os.ReadFile(tt.path)
			require.NoError(t, err)
			assert.Equal(t, tt.script, string(data))
		})
	}
}

// A node that runs commands only (the fake of the stage tests) gets the
// write and the run apart, as before.
func TestRunScriptOnAPlainNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := &bashNode{}
	plain := struct{ node.Node }{node.Command("bash", b.run)}
	p := filepath.Join(t.TempDir(), "s.sh")
	var out bytes.Buffer
	code, err := node.RunScript(ctx, plain, p, []byte("echo hi\n"), &out, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, "hi\n", out.String())
	assert.Equal(t, 2, b.count(), "a write, then the run")
}
