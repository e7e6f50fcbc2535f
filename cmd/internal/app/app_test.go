package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/version"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/hypervisor"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), cmdutil.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, args)
	return code, out.String(), errb.String()
}

// runOn is run with every hypervisor the command opens being hv (the
// shared fake): the command's logic without a libvirtd.
func runOn(t *testing.T, hv hypervisor.Hypervisor, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(context.Background(), cmdutil.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, args, NewCmdRoot, hypervisor.Shared(hv))
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "bootlab "), out)
	assert.Contains(t, out, "\ncommit ")
	assert.Contains(t, out, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)

	// --version, as kubectl and gh have it, prints the same.
	code, flagOut, flagErr := run(t, "--version")
	assert.Equal(t, 0, code, flagErr)
	assert.Equal(t, out, flagOut)
	assert.Empty(t, flagErr)

	code, out, _ = run(t, "version", "-o", "json")
	require.Equal(t, 0, code)
	var in map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &in))
	for _, k := range []string{"version", "commit", "goVersion", "platform", "kind"} {
		assert.NotEmpty(t, in[k], k)
	}
	assert.Equal(t, float64(1), in["schemaVersion"])
	code, _, errOut := run(t, "version", "-o", "yaml")
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "-o must be one of")
}

func TestUnknownFlagIsUsageError(t *testing.T) {
	code, _, errOut := run(t, "version", "--no-such-flag")
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "unknown flag: --no-such-flag")
}

func TestBadLogFormat(t *testing.T) {
	code, _, errOut := run(t, "--log-format", "xml", "version")
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "--log-format must be text or json")
}

func TestLabConfigPrintsEffectiveSpec(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "lab.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: class-a\ntopology: {masters: 3, workers: 0}\n"), 0o644))
	code, out, errOut := run(t, "lab", "config", "-f", spec, "--cidr", "10.55.0.0/24", "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"name": "class-a"`)
	assert.Contains(t, out, `"cidr": "10.55.0.0/24"`)
	assert.Contains(t, out, `"ip": "10.55.0.13"`, "master-2 derived from the overridden CIDR")
	assert.NotContains(t, out, "worker-0")
}

func TestLabConfigInvalidSpecExits3WithField(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "lab.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: demo\naccelerator: hvf\n"), 0o644))
	code, out, errOut := run(t, "lab", "config", "-f", spec)
	assert.Equal(t, cmdutil.ExitInvalid, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, spec+`: accelerator: unknown accelerator "hvf"`)
}

func TestLabConfigMissingExplicitFile(t *testing.T) {
	code, _, errOut := run(t, "lab", "config", "-f", "/nonexistent/lab.yaml")
	assert.Equal(t, cmdutil.ExitInvalid, code)
	assert.Contains(t, errOut, "lab spec /nonexistent/lab.yaml not found")
}

func TestMastersFlagRefusedWithExplicitNodes(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "lab.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: demo\nnodes:\n- {name: bootstrap, role: bootstrap}\n- {name: m, role: master}\n"), 0o644))
	code, _, errOut := run(t, "lab", "config", "-f", spec, "--masters", "3")
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "--masters/--workers cannot change a spec that lists nodes")
}

func TestInterruptedSaysHowToResume(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	dir := t.TempDir()
	spec := filepath.Join(dir, "lab.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: demo\n"), 0o644))
	// Ctrl-C before up reaches libvirt: the connection attempt sees the cancelled context.
	code := Run(ctx, cmdutil.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, []string{"lab", "up", "-f", spec, "--lab-dir", filepath.Join(dir, "lab"), "--uri", "test:///default", "--no-preflight"})
	require.Equal(t, cmdutil.ExitInterrupted, code, errb.String())
	assert.Contains(t, errb.String(), "interrupted: run the same command again to resume")
	assert.NotContains(t, errb.String(), "ERROR: context canceled")
}

func TestExitCodesForUsageMistakes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"lab", "bogus"}, []string{`unknown command "bogus" for "bootlab lab"`}},
		{[]string{"lab", "stat"}, []string{"did you mean status?"}},
		{[]string{"stage", "rnu"}, []string{"did you mean run?"}},
		{[]string{"bogus"}, []string{`unknown command "bogus"`}},
		{[]string{"lab", "console"}, []string{"accepts 1 arg(s), received 0", "Usage: bootlab lab console NODE"}},
		// Field overrides belong to the commands that build or check a spec.
		{[]string{"stage", "list", "--pull-secret", "/x.json"}, []string{"unknown flag: --pull-secret"}},
		{[]string{"lab", "status", "--workers", "3"}, []string{"unknown flag: --workers"}},
		{[]string{"lab", "up", "--name", "x", "-o", "json"}, []string{"lab up prints a plan only with --dry-run"}},
	} {
		code, _, errOut := run(t, c.args...)
		assert.Equal(t, cmdutil.ExitUsage, code, "%v: %s", c.args, errOut)
		for _, w := range c.want {
			assert.Contains(t, errOut, w, "%v", c.args)
		}
	}
	code, out, _ := run(t, "lab")
	assert.Equal(t, 0, code, "a bare group shows its help")
	assert.Contains(t, out+"", "Available Commands")
}

func TestLabThatDoesNotExistHasItsOwnExitCode(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	for _, verb := range []string{"verify", "console", "ssh", "pivot", "gather"} {
		args := []string{"lab", verb, "--name", "nosuch"}
		if verb == "console" || verb == "ssh" {
			args = append(args, "bootstrap")
		}
		code, _, errOut := run(t, args...)
		assert.Equal(t, cmdutil.ExitNoLab, code, "%s: %s", verb, errOut)
		assert.Contains(t, errOut, "lab nosuch is not up", verb)
		assert.Contains(t, errOut, "`bootlab lab up --name nosuch`", "%s: the hint names the lab as the user did", verb)
	}
}

func TestCopiedSpecIsRefusedWithBothNames(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	// ux1 exists; ux7.yaml is its `lab config` output with a new name.
	dir := filepath.Join(home, "labs", "ux1")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"name":"ux1","uuid":"u1","spec":{"name":"ux1"}}`), 0o600))
	spec := filepath.Join(t.TempDir(), "ux7.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: ux7\nlabDir: "+dir+"\nnetwork: {cidr: 10.240.7.0/24}\n"), 0o644))
	for _, verb := range []string{"status", "down", "verify", "up"} {
		code, _, errOut := run(t, "lab", verb, "-f", spec)
		assert.Equal(t, cmdutil.ExitInvalid, code, "%s: %s", verb, errOut)
		assert.Contains(t, errOut, `belongs to lab "ux1", but the spec names lab "ux7"`, verb)
	}
	_, err := os.Stat(filepath.Join(dir, "state.json"))
	assert.NoError(t, err, "ux1's state is still there")
}

func TestStageLocalRefusedOffABootstrapNode(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	if _, err := os.Stat("/opt/openshift"); err == nil {
		t.Fatal("this test machine has /opt/openshift: the refusal cannot be observed here")
	}
	code, _, errOut := run(t, "stage", "status", "--local")
	assert.Equal(t, cmdutil.ExitInvalid, code, errOut)
	assert.Contains(t, errOut, "does not look like an OpenShift bootstrap node")
	assert.Contains(t, errOut, "--force-local")
}

func TestCompletionOffersRealValues(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	spec := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: c1\ntopology: {masters: 1, workers: 1}\n"), 0o644))
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "stage", "run", ""}, []string{"07\tetcd-bootstrap", "13\tcb-bootstrap"}},
		{[]string{"__complete", "stage", "explain", ""}, []string{"01\topenshift-manifests"}},
		{[]string{"__complete", "stage", "validate", ""}, []string{"15\tcheck-api-url"}},
		{[]string{"__complete", "lab", "console", "-f", spec, ""}, []string{"bootstrap\tbootstrap", "master-0\tmaster", "worker-0\tworker"}},
		{[]string{"__complete", "lab", "ssh", "-f", spec, ""}, []string{"master-0\tmaster"}},
		{[]string{"__complete", "lab", "up", "--accel", ""}, []string{"auto\n", "kvm\n", "tcg\n"}},
		{[]string{"__complete", "lab", "status", "-o", ""}, []string{"table\n", "json\n"}},
		{[]string{"__complete", "lab", "config", "-o", ""}, []string{"yaml\n", "json\n"}},
		{[]string{"__complete", "--log-format", ""}, []string{"text\n", "json\n"}},
	} {
		code, out, errOut := run(t, c.args...)
		require.Equal(t, 0, code, errOut)
		for _, w := range c.want {
			assert.Contains(t, out, w, "%v", c.args)
		}
	}
}

// With --log-format json every line on stderr is a JSON object with an RFC
// 3339 time: step lines, warnings and the final error alike.
func TestJSONLogsMakeAllOfStderrJSON(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	ps := filepath.Join(t.TempDir(), "ps.json")
	require.NoError(t, os.WriteFile(ps, []byte(`{"auths":{"quay.io":{"auth":"dTpw"}}}`), 0o600))
	for _, args := range [][]string{
		{"lab", "verify", "--name", "nosuch", "--log-format", "json"},
		{"lab", "config", "--name", "w1", "--pull-secret", ps, "--workers", "1", "--log-format", "json"},
		{"lab", "bogus", "--log-format", "json"},
	} {
		_, _, errOut := run(t, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		require.NotEmpty(t, lines, "%v", args)
		for _, l := range lines {
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &rec), "%v: not JSON: %q", args, l)
			ts, _ := rec["time"].(string)
			_, err := time.Parse(time.RFC3339, ts)
			assert.NoError(t, err, "%v: time %q", args, ts)
			assert.NotEmpty(t, rec["level"])
			assert.NotEmpty(t, rec["msg"])
		}
	}
	_, _, errOut := run(t, "lab", "verify", "--name", "nosuch", "--log-format", "json")
	assert.Contains(t, errOut, `"exitCode":5`)
	_, _, errOut = run(t, "lab", "config", "--name", "w1", "--pull-secret", ps, "--workers", "1", "--log-format", "json")
	assert.Contains(t, errOut, `"level":"warn"`)
}

// Every -o json document carries schemaVersion and kind, and those with
// checks a top-level ok; docs/json.md lists each kind.
func TestJSONDocumentsCarrySchemaVersionAndKind(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "json.md"))
	require.NoError(t, err)
	for _, c := range []struct {
		args []string
		kind string
	}{
		{[]string{"version", "-o", "json"}, "Version"},
		{[]string{"stage", "list", "-o", "json"}, "StageList"},
		{[]string{"lab", "list", "-o", "json", "--uri", "test:///default"}, "LabList"},
		{[]string{"cache", "list", "-o", "json", "--cache-dir", t.TempDir()}, "CacheList"},
		{[]string{"lab", "diagnose", "--bundle", filepath.Join("..", "..", "..", "testdata", "bundles", "healthy.tar.gz"), "-o", "json"}, "Diagnosis"},
	} {
		code, out, errOut := run(t, c.args...)
		require.Equal(t, 0, code, "%v: %s", c.args, errOut)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), "%v", c.args)
		assert.Equal(t, float64(1), m["schemaVersion"], "%v", c.args)
		assert.Equal(t, c.kind, m["kind"], "%v", c.args)
		assert.Contains(t, string(doc), "`"+c.kind+"`", "docs/json.md documents %s", c.kind)
	}
}

// A class command's -f names a class file, not a lab spec: the lab
// commands its messages suggest are not retargeted at it; a lab command's are.
func TestClassCommandsDoNotRetargetLabHints(t *testing.T) {
	target := func(args ...string) string {
		root := NewCmdRoot(&cmdutil.Factory{Streams: cmdutil.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}})
		cmd, rest, err := root.Find(args)
		require.NoError(t, err)
		require.NoError(t, cmd.ParseFlags(rest))
		return labTarget(cmd)
	}
	assert.Equal(t, "-f ws.yaml", target("lab", "status", "-f", "ws.yaml"))
	assert.Empty(t, target("class", "up", "-f", "ws.yaml"))
	assert.Empty(t, target("class", "status", "--name", "ws"))
}

// A panic in any command is a bootlab bug: its own exit code (not usage's
// 2), one line saying so with the version and where to report it, then the
// stack.
func TestPanicIsReportedAsBug(t *testing.T) {
	withBoom := func(f *cmdutil.Factory) *cobra.Command {
		root := NewCmdRoot(f)
		root.AddCommand(&cobra.Command{Use: "boom", RunE: func(_ *cobra.Command, args []string) error {
			// No arguments: a runtime panic like the ones fuzzing finds.
			return errors.New(args[3])
		}})
		return root
	}
	var out, errb bytes.Buffer
	code := execute(context.Background(), cmdutil.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, []string{"boom"}, withBoom, lab.ConnectLibvirt)
	assert.Equal(t, cmdutil.ExitBug, code)
	assert.Equal(t, 70, code, "sysexits EX_SOFTWARE")
	lines := strings.SplitN(errb.String(), "\n", 2)
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], "BUG: bootlab "+version.Get().Version+" (commit ")
	assert.Contains(t, lines[0], "index out of range [3] with length 0")
	assert.Contains(t, lines[0], "please report it at https://github.com/bootlab/bootlab/issues")
	assert.Contains(t, lines[1], "goroutine ", "the stack follows")
	assert.Contains(t, lines[1], "TestPanicIsReportedAsBug")
	assert.Empty(t, out.String())

	// Run is execute with the real tree: the same tree still works.
	code, _, _ = run(t, "version")
	assert.Equal(t, cmdutil.ExitOK, code)
}

// Only a command that builds suggests the down that removes what it made:
// an interrupted read-only command says it changed nothing.
func TestInterruptedReadOnlySuggestsNoDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	t.Setenv("BOOTLAB_HOME", filepath.Join(dir, "home"))
	spec := filepath.Join(dir, "lab.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: demo\n"), 0o644))
	var out, errb bytes.Buffer
	code := Run(ctx, cmdutil.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, []string{"lab", "status", "-f", spec, "--uri", "test:///default"})
	require.Equal(t, cmdutil.ExitInterrupted, code, errb.String())
	assert.Contains(t, errb.String(), "interrupted: this command only reads, so nothing was changed")
	assert.NotContains(t, errb.String(), "lab down")
}
