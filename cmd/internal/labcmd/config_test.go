package labcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigFlags(t *testing.T) {
	var got *ConfigOptions
	f := testFactory()
	cmd := NewCmdConfig(f, func(o *ConfigOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-f", "x.yaml", "-o", "json", "--accel", "tcg", "--workers", "0"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "x.yaml", got.Spec.File)
	assert.Equal(t, "json", got.Output)
	assert.Equal(t, "tcg", got.Spec.Accel)
	assert.Equal(t, 0, got.Spec.Workers)
}

func TestConfigRejectsUnknownOutput(t *testing.T) {
	f := testFactory()
	cmd := NewCmdConfig(f, func(o *ConfigOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"-o", "toml"})
	err := cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-o must be one of [yaml json]")
}

// --masters 0 is refused, not silently replaced by the default of three.
func TestConfigRefusesZeroMasters(t *testing.T) {
	for _, args := range [][]string{{"--masters", "0"}, {"--masters", "0", "--workers", "0"}} {
		f := testFactory()
		cmd := NewCmdConfig(f, nil)
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		require.Error(t, err, "%v", args)
		assert.Contains(t, err.Error(), "--masters 0: a lab needs at least one master")
	}
}

// With no spec file, a bad flag value is not blamed on a file that does not exist.
func TestConfigErrorNamesFlagsWithoutSpecFile(t *testing.T) {
	f := testFactory()
	cmd := NewCmdConfig(f, nil)
	cmd.SetArgs([]string{"--name", "x", "--cidr", "10.217.99.0/30"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "flags (no bootlab.yaml): network.cidr:"), err.Error())
}
