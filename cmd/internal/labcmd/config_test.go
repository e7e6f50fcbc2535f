package labcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
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
	// With no spec named, the only lab on the host would be used: none here.
	t.Setenv("BOOTLAB_HOME", t.TempDir())
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

// The example: a machine network inside the default pod or service
// network is refused by `lab config`, preflight and up alike, before
// anything runs (no libvirt, no lab directory), naming the field and the fix.
func TestSpecCommandsRefuseMachineNetworkInsidePodNetwork(t *testing.T) {
	dir := t.TempDir()
	ps := filepath.Join(dir, "ps.json")
	require.NoError(t, os.WriteFile(ps, []byte(`{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}`), 0o600))
	labDir := filepath.Join(dir, "lab")
	commands := map[string]func(f *cmdutil.Factory) *cobra.Command{
		"config":    func(f *cmdutil.Factory) *cobra.Command { return NewCmdConfig(f, nil) },
		"preflight": func(f *cmdutil.Factory) *cobra.Command { return NewCmdPreflight(f, nil) },
		"up":        func(f *cmdutil.Factory) *cobra.Command { return NewCmdUp(f, nil) },
	}
	for name, newCmd := range commands {
		for _, cidr := range []string{"10.129.5.0/24", "172.30.7.0/24"} {
			f := testFactory()
			cmd := newCmd(f)
			cmd.SetArgs([]string{"--name", "ocp1", "--pull-secret", ps, "--cidr", cidr, "--lab-dir", labDir, "--uri", "test:///default"})
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			require.Error(t, err, "%s %s", name, cidr)
			assert.Contains(t, err.Error(), "network.cidr: "+cidr+" overlaps openshift.", name)
			assert.Equal(t, cmdutil.ExitInvalid, cmdutil.ExitCodeOf(err))
			assert.Empty(t, f.Streams.Out.(*bytes.Buffer).String(), "%s printed nothing", name)
			assert.NoDirExists(t, labDir, "%s made nothing", name)
		}
	}
}

// A valid spec with a caveat prints it on stderr; stdout stays the spec.
func TestConfigPrintsWarnings(t *testing.T) {
	// With no spec named, the only lab on the host would be used: none here.
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	dir := t.TempDir()
	ps := filepath.Join(dir, "ps.json")
	require.NoError(t, os.WriteFile(ps, []byte(`{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}`), 0o600))
	f := testFactory()
	cmd := NewCmdConfig(f, nil)
	cmd.SetArgs([]string{"--pull-secret", ps, "--workers", "1", "--lab-dir", dir})
	require.NoError(t, cmd.Execute())
	errOut := f.Streams.ErrOut.(*bytes.Buffer).String()
	assert.Contains(t, errOut, "warning: topology.workers: 1 worker:")
	out := f.Streams.Out.(*bytes.Buffer).String()
	assert.NotContains(t, out, "warning")
	assert.Contains(t, out, "  clusterNetwork:\n    - cidr: 10.128.0.0/14\n      hostPrefix: 23\n", "the defaults are shown")
}

// lab config -o yaml keeps the spec's order (apiVersion and kind first, as
// a person writes it) and reads back as the same spec.
func TestConfigYAMLKeepsSpecOrderAndRoundTrips(t *testing.T) {
	isolatedHost(t)
	f := testFactory()
	cmd := NewCmdConfig(f, nil)
	cmd.SetArgs([]string{"--name", "order1", "--workers", "1"})
	require.NoError(t, cmd.Execute())
	out := f.Streams.Out.(*bytes.Buffer).String()
	assert.True(t, strings.HasPrefix(out, "apiVersion: bootlab.dev/v1alpha1\nkind: Lab\nname: order1\nprofile: probe\ncluster:\n"), out)
	assert.Less(t, strings.Index(out, "\nnetwork:"), strings.Index(out, "\nnodes:"), "fields in the Spec type's order")
	back, err := spec.Parse([]byte(out), "config output")
	require.NoError(t, err)
	back.Defaults()
	require.NoError(t, back.Validate())
	again, err := back.Marshal()
	require.NoError(t, err)
	assert.Equal(t, out, string(again), "printing the printed spec changes nothing")
}
