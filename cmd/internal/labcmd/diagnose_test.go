package labcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

func TestDiagnoseFlags(t *testing.T) {
	var got *DiagnoseOptions
	cmd := NewCmdDiagnose(testFactory(), func(o *DiagnoseOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--bundle", "b.tar.gz", "-o", "json"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "b.tar.gz", got.Bundle)
	assert.Equal(t, "json", got.Output)

	// Without --bundle: the running lab, found as every lab command finds it.
	cmd = NewCmdDiagnose(testFactory(), func(o *DiagnoseOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--name", "demo", "--format", "svg"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "", got.Bundle)
	assert.Equal(t, "demo", got.Spec.Name)
	assert.Equal(t, "svg", got.Format)

	for args, want := range map[string]string{
		"--bundle b --name demo":          "--bundle reads a bundle and --name names a running lab: give one of them",
		"--bundle b -f lab.yaml":          "--bundle reads a bundle and --file names a running lab",
		"-o yaml":                         "-o must be one of [text json]",
		"--bundle b -o yaml":              "-o must be one of [text json]",
		"--bundle b --format png":         `--format must be svg or mermaid, not "png"`,
		"--bundle b --format svg -o json": "give one of them",
		"--bundle b extra":                "",
	} {
		cmd := NewCmdDiagnose(testFactory(), func(*DiagnoseOptions) error { t.Fatal("must not run"); return nil })
		cmd.SetArgs(strings.Fields(args))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		require.Error(t, err, args)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCodeOf(err), "%s: %v", args, err)
		assert.Contains(t, err.Error(), want, args)
	}
}

// The report goes to stdout (text, JSON or the tree), the verdict to
// stderr; a failed check is exit code 4, a healthy bundle 0.
func TestDiagnoseBundles(t *testing.T) {
	bundles := filepath.Join("..", "..", "..", "testdata", "bundles")
	run := func(opts *DiagnoseOptions) (string, string, error) {
		f := testFactory()
		err := runDiagnose(context.Background(), f, opts)
		return f.Streams.Out.(*bytes.Buffer).String(), f.Streams.ErrOut.(*bytes.Buffer).String(), err
	}
	healthy := filepath.Join(bundles, "healthy.tar.gz")
	out, errOut, err := run(&DiagnoseOptions{Bundle: healthy, Output: "text"})
	require.NoError(t, err)
	assert.Contains(t, out, "✓ healthy: all ")
	assert.Regexp(t, `^`+regexp.QuoteMeta(healthy)+`: healthy: all \d+ checks passed\n$`, errOut)

	etcd := filepath.Join(bundles, "etcd-unhealthy.tar.gz")
	out, _, err = run(&DiagnoseOptions{Bundle: etcd, Output: "json"})
	assert.Equal(t, cmdutil.ExitCheckFailed, cmdutil.ExitCodeOf(err))
	assert.Contains(t, err.Error(), "failed at etcd.healthy (etcd healthy?)")
	var doc struct {
		Kind         string `json:"kind"`
		OK           bool   `json:"ok"`
		FirstFailure string `json:"firstFailure"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "Diagnosis", doc.Kind)
	assert.False(t, doc.OK)
	assert.Equal(t, "etcd.healthy", doc.FirstFailure)

	out, _, _ = run(&DiagnoseOptions{Bundle: etcd, Output: "text", Format: "svg"})
	assert.True(t, strings.HasPrefix(out, "<svg "), out)
	assert.Contains(t, out, ">✗ etcd.healthy</text>")
	out, _, _ = run(&DiagnoseOptions{Bundle: etcd, Output: "text", Format: "mermaid"})
	assert.True(t, strings.HasPrefix(out, "flowchart TD\n"), out)

	_, _, err = run(&DiagnoseOptions{Bundle: filepath.Join(bundles, "healthy.txt"), Output: "text"})
	assert.Equal(t, cmdutil.ExitInvalid, cmdutil.ExitCodeOf(err))
	assert.True(t, strings.HasPrefix(err.Error(), "--bundle "+filepath.Join(bundles, "healthy.txt")+": is neither a .tar.gz nor a .tar"), err.Error())
}
