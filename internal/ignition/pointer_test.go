package ignition

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bootlab/bootlab/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const fakeCA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"

func TestPointerGolden(t *testing.T) {
	t.Parallel()
	data, err := Marshal(Pointer(MCSURL("ocp.lab.local", "worker"), []byte(fakeCA)))
	require.NoError(t, err)
	var pretty map[string]any
	require.NoError(t, json.Unmarshal(data, &pretty))
	out, err := json.MarshalIndent(pretty, "", "  ")
	require.NoError(t, err)
	testutil.Golden(t, filepath.Join("testdata", "pointer-worker.golden.json"), append(out, '\n'))

	cfg, err := Parse(data)
	require.NoError(t, err)
	require.Len(t, cfg.Ignition.Config.Merge, 1)
	assert.Equal(t, "https://api-int.ocp.lab.local:22623/config/worker", *cfg.Ignition.Config.Merge[0].Source)
	ca, err := DecodeDataURL(*cfg.Ignition.Security.TLS.CertificateAuthorities[0].Source)
	require.NoError(t, err)
	assert.Equal(t, fakeCA, string(ca))
}

func TestWithFilesAndFileContents(t *testing.T) {
	t.Parallel()
	cfg := WithFiles([]File{{Path: "/etc/b", Mode: 0o600, Data: []byte("secret")}, {Path: "/etc/a", Mode: 0o644, Data: []byte("hello")}})
	data, err := Marshal(cfg)
	require.NoError(t, err)
	parsed, err := Parse(data)
	require.NoError(t, err)
	require.Len(t, parsed.Storage.Files, 2)
	assert.Equal(t, "/etc/a", parsed.Storage.Files[0].Path, "sorted by path")
	got, ok, err := FileContents(parsed, "/etc/b")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "secret", string(got))
	assert.Equal(t, 0o600, *parsed.Storage.Files[1].Mode)
	_, ok, _ = FileContents(parsed, "/nope")
	assert.False(t, ok)
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"not json":      "{",
		"wrong version": `{"ignition":{"version":"9.9.0"}}`,
		"bad merge url": `{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"ht!tp://x y"}]}}}`,
		"relative path": `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"etc/x"}]}}`,
	} {
		assert.Error(t, Validate([]byte(in)), name)
	}
	assert.NoError(t, Validate([]byte(`{"ignition":{"version":"3.2.0"}}`)))
}

// TestValidateTool checks generated configs with Ignition's own validate
// command (go install github.com/coreos/ignition/v2/validate@v2.24.0).
func TestValidateTool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, cfg := range map[string]any{
		"pointer": Pointer(MCSURL("ocp.lab.local", "master"), []byte(fakeCA)),
		"files":   WithFiles([]File{{Path: "/etc/x", Mode: 0o644, Data: []byte("x")}}),
	} {
		data, err := json.Marshal(cfg)
		require.NoError(t, err)
		p := filepath.Join(dir, name+".ign")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		testutil.IgnitionValidate(t, p)
	}
	bad := filepath.Join(dir, "bad.ign")
	require.NoError(t, os.WriteFile(bad, []byte(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"rel"}]}}`), 0o600))
	_, err := exec.Command(testutil.IgnitionValidateTool(t), bad).CombinedOutput()
	assert.Error(t, err, "the tool rejects a relative path")
}
