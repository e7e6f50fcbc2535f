package labcmd

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

func TestConfigFlags(t *testing.T) {
	var got *ConfigOptions
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	cmd := NewCmdConfig(f, func(o *ConfigOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-f", "x.yaml", "-o", "json", "--accel", "tcg", "--workers", "0"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "x.yaml", got.Spec.File)
	assert.Equal(t, "json", got.Output)
	assert.Equal(t, "tcg", got.Spec.Accel)
	assert.Equal(t, 0, got.Spec.Workers)
}

func TestConfigRejectsUnknownOutput(t *testing.T) {
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	cmd := NewCmdConfig(f, func(o *ConfigOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"-o", "toml"})
	err := cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-o must be one of [yaml json]")
}
