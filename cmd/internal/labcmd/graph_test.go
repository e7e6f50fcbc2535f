package labcmd

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/hypervisor"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

func TestGraphFlags(t *testing.T) {
	var got *GraphOptions
	cmd := NewCmdGraph(testFactory(), func(o *GraphOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-f", "x.yaml", "-o", "mermaid", "--out", "t.mmd", "--workers", "0"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "x.yaml", got.Spec.File)
	assert.Equal(t, "mermaid", got.Output)
	assert.Equal(t, "t.mmd", got.Out)
	assert.Equal(t, 0, got.Spec.Workers)
	assert.Contains(t, cmd.Example, "bootlab lab graph", "--help shows examples")

	cmd = NewCmdGraph(testFactory(), func(o *GraphOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"-o", "png"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-o must be one of [svg dot mermaid]")
}

// A lab that was never built is drawn from its spec, without asking
// libvirt, on stdout or into --out; stderr says where the picture came from.
func TestGraphDrawsAnUnbuiltLab(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	dir := t.TempDir()
	specFile := filepath.Join(dir, "lab.yaml")
	require.NoError(t, os.WriteFile(specFile, []byte("name: pics\ntopology: {masters: 1, workers: 1}\n"), 0o644))
	noLibvirt := func(context.Context, string, *slog.Logger) (hypervisor.Hypervisor, error) {
		t.Fatal("an unbuilt lab needs no libvirt")
		return nil, nil
	}
	factory := func() *cmdutil.Factory { f := testFactory(); f.Connect = noLibvirt; return f }

	f := factory()
	opts := &GraphOptions{Spec: cmdutil.SpecFlags{File: specFile}, Output: "dot"}
	require.NoError(t, runGraph(context.Background(), f, opts))
	out := f.Streams.Out.(*bytes.Buffer).String()
	assert.True(t, strings.HasPrefix(out, `digraph "bootlab-pics" {`), out)
	assert.Contains(t, out, "n_worker_0")
	assert.Contains(t, f.Streams.ErrOut.(*bytes.Buffer).String(), "Drawn from the spec: lab pics is not built.")

	file := filepath.Join(dir, "pics.svg")
	f = factory()
	opts = &GraphOptions{Spec: cmdutil.SpecFlags{File: specFile}, Output: "svg", Out: file}
	require.NoError(t, runGraph(context.Background(), f, opts))
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "<svg "))
	assert.Empty(t, f.Streams.Out.(*bytes.Buffer).String(), "--out writes nothing on stdout")
	assert.Contains(t, f.Streams.ErrOut.(*bytes.Buffer).String(), "wrote "+file)

	opts = &GraphOptions{Spec: cmdutil.SpecFlags{File: specFile}, Output: "svg", Out: filepath.Join(dir, "no", "such", "dir.svg")}
	err = runGraph(context.Background(), factory(), opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--out: ")
}
