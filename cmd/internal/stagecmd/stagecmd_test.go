package stagecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/docs"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/stages"
	"github.com/bootlab/bootlab/stages/stagestest"
)

type env struct {
	f        *cmdutil.Factory
	out, err *bytes.Buffer
	spec     string
	labDir   string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{out: &bytes.Buffer{}, err: &bytes.Buffer{}, labDir: filepath.Join(dir, "lab")}
	e.f = &cmdutil.Factory{
		Streams: cmdutil.Streams{In: strings.NewReader(""), Out: e.out, ErrOut: e.err},
		Log:     slog.New(slog.DiscardHandler), Status: status.Discard(),
	}
	e.spec = filepath.Join(dir, "lab.yaml")
	require.NoError(t, os.WriteFile(e.spec, []byte(fmt.Sprintf("name: stagetest\nlabDir: %s\nopenshift:\n  version: 4.19.10\n", e.labDir)), 0o600))
	return e
}

func execute(cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd.ExecuteContext(context.Background())
}

func exitCode(err error) int { return cmdutil.ExitCodeOf(err) }

func TestRunFlags(t *testing.T) {
	e := newEnv(t)
	var got *RunOptions
	cmd := NewCmdRun(e.f, func(o *RunOptions) error { got = o; return nil })
	require.NoError(t, execute(cmd, "--from", "03", "--to", "render-etcd", "--skip", "05", "--skip", "cvo-bootstrap", "--force", "--validate", "--host", "10.0.0.5", "--user", "root", "-o", "json"))
	assert.Equal(t, "03", got.From)
	assert.Equal(t, "render-etcd", got.To)
	assert.Equal(t, []string{"05", "cvo-bootstrap"}, got.Skip)
	assert.True(t, got.Force)
	assert.True(t, got.Validate)
	assert.Equal(t, "10.0.0.5", got.Target.Host)
	assert.Equal(t, "root", got.Target.User)
	assert.Equal(t, "json", got.Output)

	for _, args := range [][]string{{}, {"--all", "07"}, {"--all", "--from", "03"}, {"07", "-o", "yaml"}} {
		err := execute(NewCmdRun(e.f, func(*RunOptions) error { return nil }), args...)
		assert.Equal(t, cmdutil.ExitUsage, exitCode(err), "%v: %v", args, err)
	}
}

func TestRunNeedsALabOrAHost(t *testing.T) {
	e := newEnv(t)
	err := execute(NewCmdRun(e.f, nil), "-f", e.spec, "07")
	assert.ErrorIs(t, err, labdir.ErrNoState, "a lab never brought up has its own exit code (app.Run maps it)")
	assert.ErrorContains(t, err, "bootlab lab up")
	assert.ErrorContains(t, err, "--host")
}

// A probe lab without manual bootstrap runs no stages: stage commands say
// so and how to rebuild, instead of "connection refused".
func TestStagesRefusePlainProbeLab(t *testing.T) {
	e := newEnv(t)
	s := &spec.Spec{Name: "stagetest", LabDir: e.labDir}
	s.Defaults()
	require.Equal(t, spec.ProfileProbe, s.Profile)
	require.NoError(t, (&labdir.State{Spec: s}).Save(e.labDir))
	for _, cmd := range []*cobra.Command{NewCmdRun(e.f, nil), NewCmdStatus(e.f, nil)} {
		args := []string{"-f", e.spec}
		if cmd.Name() == "run" {
			args = append(args, "07")
		}
		err := execute(cmd, args...)
		assert.Equal(t, cmdutil.ExitInvalid, exitCode(err), "%s: %v", cmd.Name(), err)
		assert.ErrorContains(t, err, "bootlab lab up --manual-bootstrap")
	}
}

// A --uri that contradicts the lab as built is refused by the stage
// commands as by lab status and verify: taking it for "the lab is not up"
// would act on the flags' spec instead of the lab.
func TestStagesRefuseAURIThatContradictsTheBuiltLab(t *testing.T) {
	e := newEnv(t)
	s := &spec.Spec{Name: "stagetest", LabDir: e.labDir, OpenShift: spec.OpenShift{ManualBootstrap: true}}
	s.Defaults()
	require.NoError(t, (&labdir.State{Spec: s}).Save(e.labDir))
	// With --host the node is reachable without the lab, which is where the
	// contradiction used to be dropped.
	err := execute(NewCmdStatus(e.f, nil), "-f", e.spec, "--uri", "qemu+ssh://root@elsewhere/system", "--host", "127.0.0.1", "--port", "1")
	var conflict *cmdutil.ConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, cmdutil.ExitUsage, exitCode(err))
	assert.ErrorContains(t, err, "was built on "+s.Libvirt.URI)
}

func TestRunWithNodeWritesLogs(t *testing.T) {
	e := newEnv(t)
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.FinishBefore(stages.Default(), 7))
	node.Script = func(script string, stdout io.Writer) int {
		fmt.Fprintln(stdout, "Rendering CEO Manifests...")
		return 0
	}
	var cmd *cobra.Command
	cmd = NewCmdRun(e.f, func(o *RunOptions) error {
		o.Target.Node = node
		return runRun(cmd, e.f, o)
	})
	require.NoError(t, execute(cmd, "-f", e.spec, "etcd-bootstrap"))
	assert.Regexp(t, `07\s+etcd-bootstrap\s+success`, e.out.String())
	assert.Contains(t, e.err.String(), "[07 etcd-bootstrap] Rendering CEO Manifests...\n")

	logDir := filepath.Join(e.labDir, "stages")
	recs, err := os.ReadFile(filepath.Join(logDir, stages.RecordsFile))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(recs)), "\n")
	require.Len(t, lines, 2)
	var end stages.Record
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &end))
	assert.Equal(t, stages.PhaseEnd, end.Phase)
	assert.Equal(t, "etcd-bootstrap", end.Stage)
	assert.Equal(t, stages.ResultSuccess, end.Result)
	output, err := os.ReadFile(filepath.Join(logDir, stages.OutputFile))
	require.NoError(t, err)
	assert.Equal(t, "[07 etcd-bootstrap] Rendering CEO Manifests...\n", string(output))
	fi, err := os.Stat(filepath.Join(logDir, stages.OutputFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestRunRefusesWhileBootkubeRuns(t *testing.T) {
	e := newEnv(t)
	node := stagestest.New(t.TempDir())
	node.Replies["systemctl is-active --quiet bootkube.service"] = stagestest.Reply{Code: 0}
	var cmd *cobra.Command
	cmd = NewCmdRun(e.f, func(o *RunOptions) error { o.Target.Node = node; return runRun(cmd, e.f, o) })
	err := execute(cmd, "-f", e.spec, "07")
	assert.ErrorContains(t, err, "bootkube.service is running on fake-node")
	assert.Empty(t, node.Scripts, "nothing ran")
}

func TestRunFailureNamesStageAndLog(t *testing.T) {
	e := newEnv(t)
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.FinishBefore(stages.Default(), 13))
	node.Script = func(string, io.Writer) int { return 2 }
	var cmd *cobra.Command
	cmd = NewCmdRun(e.f, func(o *RunOptions) error { o.Target.Node = node; return runRun(cmd, e.f, o) })
	err := execute(cmd, "-f", e.spec, "--from", "13", "--to", "14")
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "stage 13 (cb-bootstrap): 13-cb-bootstrap.sh exited 2"), err.Error())
	assert.Contains(t, err.Error(), filepath.Join(e.labDir, "stages", "output.log"))
	assert.Regexp(t, `13\s+cb-bootstrap\s+failure`, e.out.String())
}

func TestDryRunPrintsScripts(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, execute(NewCmdRun(e.f, nil), "-f", e.spec, "--dry-run", "07", "--release-image", "quay.io/openshift-release-dev/ocp-release:4.19.10-x86_64"))
	assert.Contains(t, e.out.String(), "# bootlab stage 07 etcd-bootstrap (script render-etcd) for OpenShift 4.19.")
	assert.Contains(t, e.out.String(), "\nRELEASE_IMAGE=quay.io/openshift-release-dev/ocp-release:4.19.10-x86_64\n")
	assert.Contains(t, e.out.String(), "\nAPI_INT_URL=api-int.ocp.lab.local\n")
	assert.Contains(t, e.out.String(), "/usr/bin/cluster-etcd-operator render")
}

func TestStatusAndNext(t *testing.T) {
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.Touch("/opt/openshift/openshift-manifests.done", "/opt/openshift/api-bootstrap.done", "/opt/openshift/auth-api-bootstrap.done"))
	st, err := stages.NodeStatus(context.Background(), node, stages.Default(), stages.MustVersion("4.19"))
	require.NoError(t, err)
	assert.Equal(t, "done", st.Stages[0].State)
	assert.Equal(t, "always", st.Stages[1].State)
	assert.Equal(t, "done", st.Stages[3].State)
	assert.Equal(t, "pending", st.Stages[4].State)
	assert.Equal(t, "05 config-bootstrap", st.Next)
	assert.Equal(t, "unknown", st.Bootkube, "no systemd on the fake node")
	// One listing answers for every marker: over SSH a stat each was a
	// session each.
	assert.Equal(t, 1, node.Lists(stages.AssetDir))
	assert.Empty(t, node.CallsWith("stat "))

	node.Replies["systemctl is-enabled bootkube.service"] = stagestest.Reply{Stdout: "masked\ninactive\n", Code: 3}
	st, err = stages.NodeStatus(context.Background(), node, stages.Default(), stages.MustVersion("4.19"))
	require.NoError(t, err)
	assert.Equal(t, "masked", st.Bootkube)

	st, err = stages.NodeStatus(context.Background(), node, stages.Default(), stages.MustVersion("4.17"))
	require.NoError(t, err)
	assert.Equal(t, "skipped", st.Stages[3].State)

	// After stage 14 ran, it stays pending until .bootkube.done exists
	// (wait-for-ceo has no marker): status names that missing file.
	require.NoError(t, node.Touch("/opt/openshift/cvo-overrides.done"))
	st, err = stages.NodeStatus(context.Background(), node, stages.Default(), stages.MustVersion("4.19"))
	require.NoError(t, err)
	assert.Equal(t, "pending", st.Stages[13].State)
	assert.Equal(t, []string{"cvo-overrides.done"}, st.Stages[13].Present)
	assert.Equal(t, []string{".bootkube.done"}, st.Stages[13].Missing)
}

func TestValidateExitsFourOnFailedChecks(t *testing.T) {
	e := newEnv(t)
	node := stagestest.New(t.TempDir())
	err := validateOn(e, node, "07", "--no-live")
	assert.Equal(t, cmdutil.ExitCheckFailed, exitCode(err), "%v", err)
	assert.Contains(t, e.out.String(), "✗ 07 etcd-bootstrap marker /opt/openshift/etcd-bootstrap.done: /opt/openshift/etcd-bootstrap.done is missing")
	assert.Empty(t, node.CallsWith("curl"), "--no-live asks no service")
}

func TestExplain(t *testing.T) {
	// The terminal's environment, fixed so the test does not depend on the caller's.
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("COLORTERM", "truecolor")
	t.Setenv("NO_COLOR", "")
	t.Setenv("GLAMOUR_STYLE", "dark")
	t.Setenv("COLUMNS", "72")
	source, err := fs.ReadFile(docs.Stages, "stages/07-etcd-bootstrap.md")
	require.NoError(t, err)

	e := newEnv(t)
	require.NoError(t, execute(NewCmdExplain(e.f, nil), "render-etcd"))
	page := e.out.String()
	s07, err := stages.Default().Lookup("07")
	require.NoError(t, err)
	assert.Equal(t, string(source)+releasesSection(s07)+rehearsalSection(7), page, "piped: the markdown as written, with the evidence by release and what the rehearsal lab plays")
	assert.NotContains(t, page, "\x1b[", "plain when not a terminal")
	assert.Contains(t, page, "## On a rehearsal lab", "explain names the stand-ins of the rehearsal lab")
	assert.Contains(t, page, "cluster-etcd-operator render is a bootlab stand-in")

	e.out.Reset()
	e.f.Streams.OutTTY = true
	require.NoError(t, execute(NewCmdExplain(e.f, nil), "07"))
	page = e.out.String()
	assert.Contains(t, page, "\x1b[", "styled on a terminal")
	text := ansi.Strip(page)
	assert.Contains(t, text, "Stage 07: etcd-bootstrap")
	assert.NotContains(t, text, "```", "fences are drawn as code blocks")
	// Prose wraps to $COLUMNS; code lines stay whole (indented 4 or more),
	// so a command with a \ continuation can be copied as it is.
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "    ") {
			assert.LessOrEqual(t, ansi.StringWidth(line), 72, "wrapped to $COLUMNS: %q", line)
		}
		assert.Equal(t, strings.TrimRight(line, " "), line, "no trailing padding")
	}
	assert.Contains(t, text, "\n    bootkube_podman_run --name etcd-render --volume \"$PWD:/assets:z\" \"${CLUSTER_ETCD_OPERATOR_IMAGE}\" \\\n", "a code line is never wrapped")

	for _, tc := range []struct{ env, val string }{{"NO_COLOR", "1"}, {"TERM", "dumb"}} {
		e.out.Reset()
		t.Setenv(tc.env, tc.val)
		require.NoError(t, execute(NewCmdExplain(e.f, nil), "07"))
		assert.Equal(t, string(source)+releasesSection(s07)+rehearsalSection(7), e.out.String(), "%s=%s: plain even on a terminal", tc.env, tc.val)
	}
	e.out.Reset()
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	require.NoError(t, execute(NewCmdExplain(e.f, nil), "--plain"))
	assert.True(t, strings.HasPrefix(e.out.String(), "# bootkube.sh, stage by stage"), "--plain prints the overview as written")

	assert.Equal(t, cmdutil.ExitUsage, exitCode(execute(NewCmdExplain(e.f, nil), "99")))
}

// Every stage says what plays the release image's part on a rehearsal lab.
func TestRehearsalNotesCoverEveryStage(t *testing.T) {
	for _, s := range stages.Default() {
		assert.NotEmpty(t, rehearsalSection(s.Number), "stage %s", s.ID())
	}
	assert.Empty(t, rehearsalSection(0), "not on the overview")
}

func TestListJSON(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec, "-o", "json", "--openshift-version", "4.16"))
	var doc stageListDoc
	require.NoError(t, json.Unmarshal(e.out.Bytes(), &doc))
	entries := doc.Stages
	require.Len(t, entries, 15)
	assert.Equal(t, "render-etcd", entries[6].Script)
	assert.Equal(t, "scripts/07-etcd-bootstrap.sh", entries[6].File)
	assert.Contains(t, entries[3].Skipped, "auth-api-bootstrap arrived in 4.19")
	assert.Empty(t, entries[2].Skipped)
	assert.Equal(t, listStep{Name: "resolve-api-url", Marker: "api-dns-resolved.done", Optional: true}, entries[11].Steps[1])
	assert.False(t, entries[11].Steps[0].Optional, "mco-bootstrap.done is a real marker")

	// The default table fits 100 columns; -o wide has every column.
	e.out.Reset()
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec))
	for _, l := range strings.Split(e.out.String(), "\n") {
		assert.LessOrEqual(t, len([]rune(l)), 100, "stage list fits 100 columns: %q", l)
	}
	assert.Contains(t, e.out.String(), "check-api-int-url (api-int-dns-check.done)")
	assert.Regexp(t, `\n13  cb-bootstrap\s+wait-for-etcd \(no marker\), cb-bootstrap\n`, e.out.String())
	e.out.Reset()
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec, "--openshift-version", "4.16"))
	assert.Contains(t, e.out.String(), "auth-api-bootstrap [4.19+], [not in 4.16]")

	e.out.Reset()
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec, "-o", "wide"))
	assert.Regexp(t, `check-api-int-url\s+api-int-dns-check\.done \(only on success; never fails\)`, e.out.String())
	assert.Regexp(t, `cco-bootstrap\s+cco-bootstrap\.done\n`, e.out.String())

	err := execute(NewCmdList(e.f, nil), "-f", e.spec, "--openshift-version", "4.12")
	assert.Equal(t, cmdutil.ExitInvalid, exitCode(err))

	// Steps newer than the release are marked as such; on their release not.
	e.out.Reset()
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec, "--openshift-version", "4.21", "-o", "wide"))
	assert.Regexp(t, `konnectivity-cleanup\s+konnectivity-cleanup\.done \(not in 4\.21: arrived in 4\.22\)\n`, e.out.String())
	e.out.Reset()
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec, "--openshift-version", "4.22", "-o", "wide"))
	assert.Regexp(t, `konnectivity-cleanup\s+konnectivity-cleanup\.done\n`, e.out.String())
	e.out.Reset()
	require.NoError(t, execute(NewCmdList(e.f, nil), "-f", e.spec, "-o", "json", "--openshift-version", "4.22"))
	require.NoError(t, json.Unmarshal(e.out.Bytes(), &doc))
	entries = doc.Stages
	assert.Equal(t, listStep{Name: "konnectivity-certs", Marker: "konnectivity-certs.done", Since: "4.22"}, entries[7].Steps[0])
}

func TestHandoff(t *testing.T) {
	e := newEnv(t)
	node := stagestest.New(t.TempDir())
	node.Replies[HandoffCommand] = stagestest.Reply{}
	var cmd *cobra.Command
	cmd = NewCmdHandoff(e.f, func(o *HandoffOptions) error { o.Target.Node = node; return runHandoff(cmd, e.f, o) })
	require.NoError(t, execute(cmd, "-f", e.spec))
	assert.Contains(t, node.Calls, HandoffCommand)

	require.NoError(t, node.Touch("/opt/openshift/.bootkube.done"))
	err := execute(cmd, "-f", e.spec)
	assert.ErrorContains(t, err, "bootkube.service will not start")

	e.out.Reset()
	require.NoError(t, execute(NewCmdHandoff(e.f, nil), "--dry-run"))
	assert.Equal(t, HandoffCommand+"\n", e.out.String())
}

// The stages follow the node's release, not the spec's or a default;
// a --openshift-version or --release-image the node contradicts is
// refused before anything runs.
func TestRunFollowsTheNodesRelease(t *testing.T) {
	e := newEnv(t)
	e.f.Status = status.New(e.err, false)
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.FinishBefore(stages.Default(), 3))
	require.NoError(t, node.WriteFile(context.Background(), stages.ImagesFile, []byte("VERSION=4.18.3\n"), 0o644))
	require.NoError(t, node.Touch(stages.NodeReleaseImage))
	node.Replies[`echo "${RELEASE_IMAGE-}`] = stagestest.Reply{Stdout: "quay.io/example/release:4.18.3 quay.io/example/release@sha256:0123\n"}
	run := func() *cobra.Command {
		var cmd *cobra.Command
		cmd = NewCmdRun(e.f, func(o *RunOptions) error { o.Target.Node = node; return runRun(cmd, e.f, o) })
		return cmd
	}
	require.NoError(t, execute(run(), "-f", e.spec, "03"))
	assert.Contains(t, e.err.String(), "warning: the lab spec says OpenShift 4.19.10 but the node runs 4.18.3: the stages follow the node")
	require.Len(t, node.Scripts, 1)
	assert.Contains(t, node.Scripts[0], "\nOPENSHIFT_VERSION=4.18\n")

	for _, tc := range []struct{ args, want string }{
		{"--openshift-version 4.19", "--openshift-version 4.19 contradicts the node, whose release is 4.18.3 (read from its release image)"},
		{"--release-image quay.io/other/release:4.18.3", "--release-image quay.io/other/release:4.18.3 is not the node's release image (quay.io/example/release:4.18.3, quay.io/example/release@sha256:0123 in /usr/local/bin/release-image.sh)"},
	} {
		node.Scripts = nil
		err := execute(run(), append([]string{"-f", e.spec, "03"}, strings.Fields(tc.args)...)...)
		assert.Equal(t, cmdutil.ExitInvalid, exitCode(err), tc.args)
		assert.ErrorContains(t, err, tc.want)
		assert.ErrorContains(t, err, "Nothing ran")
		assert.Empty(t, node.Scripts, tc.args)
	}
	// The node's own payload, named, is no mix.
	require.NoError(t, execute(run(), "-f", e.spec, "03", "--release-image", "quay.io/example/release@sha256:0123"))
}

// Refusals say how to get back: a lab's before-NN checkpoint, or on a
// node bootlab cannot checkpoint, that there is no way back.
func TestRunRefusalSaysHowToGetBack(t *testing.T) {
	e, _ := rehearsalEnv(t, "")
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.FinishBefore(stages.Default(), 16))
	cps := newFakeCheckpoints()
	err := execute(runCmd(e, node, cps), "-f", e.spec, "12", "--force")
	assert.Equal(t, cmdutil.ExitInvalid, exitCode(err))
	assert.ErrorContains(t, err, "--force 12 (mco-bootstrap) refused: stage 13 (cb-bootstrap) has run since")
	assert.ErrorContains(t, err, "to redo stage 12 on this lab, go back to before it: bootlab stage reset 12")
	assert.Empty(t, cps.calls, "refused before the checkpoint")
	assert.Empty(t, node.Scripts)

	err = execute(runCmd(e, node, cps), "-f", e.spec, "12", "--force", "--host", "192.0.2.7")
	assert.ErrorContains(t, err, "a real bootstrap node has no way back: let bootkube.service finish from where the node is (bootlab stage handoff)")

	fresh := stagestest.New(t.TempDir())
	require.NoError(t, fresh.FinishBefore(stages.Default(), 13))
	err = execute(runCmd(e, fresh, cps), "-f", e.spec, "15")
	assert.Equal(t, cmdutil.ExitInvalid, exitCode(err))
	assert.ErrorContains(t, err, "stage 15 (check-api-url) needs stage 13 (cb-bootstrap) first: run bootlab stage run 13")
	assert.NotContains(t, err.Error(), "reset", "nothing to redo: run the missing stage")
	assert.Empty(t, cps.calls)
}

// A rehearsal bootstrap carries a bootkube.sh of the real shape, but its
// stages are bootlab's annotated scripts: that is the default source there.
func TestRehearsalLabDefaultsToTheAnnotatedScripts(t *testing.T) {
	reh := &spec.Spec{Name: "reh", Profile: spec.ProfileProbe, OpenShift: spec.OpenShift{ManualBootstrap: true}, LabDir: t.TempDir()}
	reh.Defaults()
	plain := &spec.Spec{Name: "plain", Profile: spec.ProfileProbe, LabDir: t.TempDir()}
	plain.Defaults()
	assert.True(t, rehearsalTarget(&Target{}, &resolved{spec: reh}))
	assert.False(t, rehearsalTarget(&Target{}, &resolved{spec: plain}))
	assert.False(t, rehearsalTarget(&Target{Host: "10.0.0.5"}, &resolved{spec: reh}), "a node named by --host is taken as a real one")
	assert.False(t, rehearsalTarget(&Target{Local: true}, &resolved{spec: reh}))
}

// With no lab named and several on the host, a stage command (stage list)
// runs on the flags' spec with every default: never on a built lab that
// default's name ("demo") happens to find, which the user did not name.
func TestUnnamedTargetIsNoLabFoundByTheDefaultName(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Setenv(cmdutil.EnvLab, "")
	t.Chdir(t.TempDir())
	for _, name := range []string{"demo", "other"} {
		s := &spec.Spec{Name: name, OpenShift: spec.OpenShift{Version: "4.16.3", ManualBootstrap: true}}
		s.Defaults()
		require.NoError(t, (&labdir.State{Name: name, UUID: "u-" + name, Spec: s}).Save(s.LabDir))
	}
	e := newEnv(t)
	var r *resolved
	cmd := NewCmdList(e.f, func(o *ListOptions) error {
		var err error
		r, err = o.Target.resolveVersion(context.Background(), e.f, true)
		return err
	})
	require.NoError(t, execute(cmd))
	require.NotNil(t, r)
	assert.ErrorContains(t, r.stateErr, "no lab named")
	assert.Equal(t, "demo", r.spec.Name)
	assert.Empty(t, r.spec.OpenShift.Version, "the flags' spec, not the built demo's")
	want, err := stages.ParseVersion(spec.DefaultOpenShiftVersion)
	require.NoError(t, err)
	assert.Equal(t, want, r.vars.Version, "the default release, not the built demo's 4.16")
	assert.Empty(t, r.labUUID)
	assert.Equal(t, filepath.Join(home, "labs", "demo", "stages"), r.stageDir, "files where the defaults put them, as before")
}
