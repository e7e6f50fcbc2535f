package cmdutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
)

// isolatedHost gives a test its own BOOTLAB_HOME and working directory (no
// ./bootlab.yaml), so the labs this machine really has play no part.
func isolatedHost(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Setenv(EnvLab, "")
	t.Chdir(t.TempDir())
	return home
}

// builtLab records a lab as a successful `up` would (state with its spec).
func builtLab(t *testing.T, home, name string) *labspec.Spec {
	t.Helper()
	s := &labspec.Spec{Name: name}
	s.Defaults()
	require.Equal(t, filepath.Join(home, "labs", name), s.LabDir)
	require.NoError(t, (&labdir.State{Name: name, UUID: "u-" + name, Spec: s}).Save(s.LabDir))
	return s
}

// loadWith parses args into a command with the spec flags and loads.
func loadWith(t *testing.T, optional bool, args ...string) (*labspec.Spec, *SpecFlags, error) {
	t.Helper()
	sf := &SpecFlags{Optional: optional}
	var spec *labspec.Spec
	var loadErr error
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error {
		spec, loadErr = sf.Load()
		return nil
	}}
	AddSpecFlags(cmd, sf)
	cmd.SetArgs(args)
	require.NoError(t, cmd.Execute())
	return spec, sf, loadErr
}

func TestNoNamedLabIsNeverTheBuiltInDemo(t *testing.T) {
	home := isolatedHost(t)
	_, _, err := loadWith(t, false)
	require.Error(t, err)
	assert.Equal(t, ExitUsage, exitCodeOf(err))
	assert.Contains(t, err.Error(), "no lab named and none on this host")
	assert.Contains(t, err.Error(), "--name NAME")

	builtLab(t, home, "ux1")
	spec, sf, err := loadWith(t, false)
	require.NoError(t, err, "exactly one lab on the host is the one meant")
	assert.Equal(t, "ux1", spec.Name)
	assert.Equal(t, "--name ux1", sf.TargetArgs(), "hints name it")

	builtLab(t, home, "ux2")
	_, _, err = loadWith(t, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 labs on this host: ux1, ux2")

	t.Setenv(EnvLab, "ux2")
	spec, _, err = loadWith(t, false)
	require.NoError(t, err)
	assert.Equal(t, "ux2", spec.Name, "BOOTLAB_LAB selects a lab by name")
	t.Setenv(EnvLab, "")

	spec, sf, err = loadWith(t, false, "--name", "ux1")
	require.NoError(t, err)
	assert.Equal(t, "ux1", spec.Name)
	assert.Equal(t, "--name ux1", sf.TargetArgs())

	// lab config (optional) still prints the defaults, and says nothing of labs.
	spec, sf, err = loadWith(t, true)
	require.NoError(t, err)
	assert.Equal(t, "demo", spec.Name)
	assert.ErrorContains(t, sf.NoLab, "2 labs on this host")
}

func TestPullSecretOnAProbeSpecIsRefused(t *testing.T) {
	isolatedHost(t)
	file := filepath.Join(t.TempDir(), "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte("name: p1\nprofile: probe\n"), 0o644))
	_, _, err := loadWith(t, false, "-f", file, "--pull-secret", "/x/pull.json")
	require.Error(t, err)
	assert.Equal(t, ExitUsage, exitCodeOf(err))
	assert.Contains(t, err.Error(), "--pull-secret")
	assert.Contains(t, err.Error(), file+" says profile: probe")

	_, _, err = loadWith(t, false, "--name", "p2", "--profile", "probe", "--pull-secret", "/x/pull.json")
	assert.ErrorContains(t, err, "--profile says profile: probe")
}

func TestUriThatContradictsTheBuiltLabIsRefused(t *testing.T) {
	home := isolatedHost(t)
	builtLab(t, home, "ux1")
	sf := &SpecFlags{}
	cmd := &cobra.Command{Use: "x", RunE: func(c *cobra.Command, _ []string) error {
		l, err := (&Factory{}).OpenTarget(c.Context(), sf)
		if err == nil {
			_ = l.Close()
		}
		return err
	}}
	AddSpecFlags(cmd, sf)
	cmd.SetArgs([]string{"--name", "ux1", "--uri", "qemu+ssh://root@elsewhere/system"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	var conflict *ConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, "--uri", conflict.Flag)
	assert.Equal(t, ExitUsage, ExitCodeOf(err))
	assert.Contains(t, err.Error(), "was built on qemu:///system")
}

func TestTargetArgsOf(t *testing.T) {
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	AddSpecFlags(cmd, &SpecFlags{})
	cmd.SetArgs([]string{"-f", "my labs/ux1.yaml", "--workers", "3"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, `-f 'my labs/ux1.yaml'`, TargetArgsOf(cmd.Flags()), "only the flags that name the lab, quoted for a shell")
}

func exitCodeOf(err error) int {
	var ec ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return ExitError
}

// A built openshift lab whose pull secret file has since gone is still the
// lab its spec names: down and status act on it as built, instead of
// refusing the spec (only a build needs the pull secret).
func TestBuiltLabOutlivesItsPullSecretFile(t *testing.T) {
	home := isolatedHost(t)
	ps := filepath.Join(t.TempDir(), "ps.json")
	require.NoError(t, os.WriteFile(ps, []byte(`{"auths":{"quay.io":{"auth":"dTpw"}}}`), 0o600))
	file := filepath.Join(t.TempDir(), "ocp.yaml")
	require.NoError(t, os.WriteFile(file, []byte("name: ocp1\nopenshift: {pullSecretFile: "+ps+"}\n"), 0o644))
	spec, _, err := loadWith(t, false, "-f", file)
	require.NoError(t, err)
	require.NoError(t, (&labdir.State{Name: "ocp1", UUID: "u", Spec: spec}).Save(filepath.Join(home, "labs", "ocp1")))
	require.NoError(t, os.Remove(ps))

	_, _, err = loadWith(t, false, "-f", file)
	require.Error(t, err, "building needs the pull secret")
	sf := &SpecFlags{}
	var applied *labspec.Spec
	cmd := &cobra.Command{Use: "x", RunE: func(c *cobra.Command, _ []string) error {
		l, s, err := (&Factory{}).OpenBuiltLab(c.Context(), sf)
		if err != nil {
			return err
		}
		applied = s
		return l.Close()
	}}
	AddTargetFlags(cmd, sf)
	cmd.SetArgs([]string{"-f", file})
	require.NoError(t, cmd.Execute(), "acting on the built lab does not")
	assert.Equal(t, "ocp1", applied.Name)
	assert.Equal(t, labspec.ProfileOpenShift, applied.Profile)
}
