package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// Errors become the same exit code for the same kind of mistake, whichever
// command makes it, and the message says what to do: the cases of issue 21
// item 8, each with its exact code and a fragment of its error.
func TestExitCodesAreConsistent(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	t.Setenv(cmdutil.EnvLab, "")
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	long := strings.Repeat("a", 10000)
	cases := []struct {
		name string
		args []string
		code int
		want string
		// not is a fragment the message must not have.
		not string
	}{
		{"help of an unknown command", []string{"help", "nosuchcommand"}, cmdutil.ExitUsage, `no help topic "nosuchcommand"`, ""},
		{"help of an unknown subcommand", []string{"help", "lab", "nosuch"}, cmdutil.ExitUsage, `no help topic "lab nosuch"`, ""},
		{"completion for an unknown shell", []string{"completion", "tcsh"}, cmdutil.ExitUsage, `unknown command "tcsh" for "bootlab completion"`, ""},
		{"unknown subcommand of a group without its own action", []string{"lab", "probe-image", "foo"}, cmdutil.ExitUsage, `unknown command "foo" for "bootlab lab probe-image"`, ""},
		{"no masters", []string{"lab", "config", "--name", "x", "--masters", "0"}, cmdutil.ExitUsage, "--masters 0: a lab needs at least one master", ""},
		{"negative workers, the same code as no masters", []string{"lab", "config", "--name", "x", "--workers", "-1"}, cmdutil.ExitUsage, "--workers -1: a lab has 0 workers or more", ""},
		{"a directory as a lab spec", []string{"lab", "config", "-f", dir}, cmdutil.ExitInvalid, dir, ""},
		{"a directory as a class spec, the same code", []string{"class", "config", "-f", dir}, cmdutil.ExitInvalid, dir, ""},
		{"a spec given where -f was meant", []string{"lab", "config", "mylab.yaml"}, cmdutil.ExitUsage, "did you mean -f mylab.yaml?", ""},
		{"-o json where there is no JSON form", []string{"stage", "run", "01", "--dry-run", "-o", "json"}, cmdutil.ExitUsage, "has no JSON form; drop -o json", ""},
		{"a long input is cut", []string{"lab", "config", "--name", long}, cmdutil.ExitInvalid, strings.Repeat("a", 59) + "…", strings.Repeat("a", 200)},
		{"a bad libvirt socket is named", []string{"lab", "status", "--name", "x", "--uri", "qemu:///system?socket=/nonexistent/bad"}, cmdutil.ExitError, "the socket /nonexistent/bad it names (socket=) cannot be reached", "libvirtd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(t, tc.args...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.want)
			if tc.not != "" {
				assert.NotContains(t, errOut, tc.not)
			}
			// A hint never sends the user back to the command that failed.
			assert.NotContains(t, errOut, "`bootlab "+strings.Join(tc.args, " ")+"`")
		})
	}
}

// A dry run refuses what up refuses, with the same message and exit code,
// before anything is made.
func TestUpDryRunFailsAsUpDoes(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Setenv(cmdutil.EnvLab, "")
	cases := []struct {
		name, yaml string
		flags      []string
		code       int
		want       string
	}{
		{"a bridge name Linux rejects", "network: {bridge: \"bad name!\"}\n", nil, cmdutil.ExitInvalid, "network.bridge: \"bad name!\" holds a character Linux or bootlab refuses"},
		{"a /8 network", "network: {cidr: 10.0.0.0/8}\n", nil, cmdutil.ExitInvalid, "network.cidr"},
		{"memory out of range", "nodes:\n- {name: bootstrap, role: bootstrap, memoryMiB: 9223372036854775807}\n- {name: m, role: master}\n", nil, cmdutil.ExitInvalid, "memoryMiB"},
		{"a system directory as labDir", "labDir: /etc\n", nil, cmdutil.ExitInvalid, "labDir: /etc is a top-level system directory"},
		{"an unknown accelerator", "accelerator: hvf\n", nil, cmdutil.ExitInvalid, `accelerator: unknown accelerator "hvf"`},
		{"an unknown field", "nodez: []\n", nil, cmdutil.ExitInvalid, "nodez"},
		{"negative workers", "", []string{"--workers", "-1"}, cmdutil.ExitUsage, "--workers -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := filepath.Join(t.TempDir(), "lab.yaml")
			require.NoError(t, os.WriteFile(spec, []byte("name: h21dry-bad\nprofile: probe\nlibvirt: {uri: \"test:///default\"}\n"+tc.yaml), 0o644))
			args := append([]string{"lab", "up", "-f", spec}, tc.flags...)
			upCode, _, upErr := run(t, args...)
			dryCode, _, dryErr := run(t, append(args, "--dry-run")...)
			assert.Equal(t, tc.code, upCode, upErr)
			assert.Equal(t, upCode, dryCode, dryErr)
			assert.Contains(t, upErr, tc.want)
			assert.Equal(t, upErr, dryErr, "the dry run shows the failure as up does")
			entries, err := os.ReadDir(home)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing was made in the bootlab home")
		})
	}
}
