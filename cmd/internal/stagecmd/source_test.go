package stagecmd

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/stages"
	"github.com/bootlab/bootlab/stages/stagestest"
)

func fixture(release string) string {
	return filepath.Join("..", "..", "..", "testdata", "bootkube", release, "usr", "local", "bin", "bootkube.sh")
}

// bootstrapNode is a fake node with a release's bootkube.sh (and the
// helpers beside it) in /usr/local/bin, whose release image is release.
func bootstrapNode(t *testing.T, release, version string) *stagestest.Node {
	t.Helper()
	node := stagestest.New(t.TempDir())
	for _, dir := range []string{filepath.Dir(fixture("common")), filepath.Dir(fixture(release))} {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			require.NoError(t, node.WriteFile(context.Background(), "/usr/local/bin/"+e.Name(), data, 0o755))
		}
	}
	node.Replies["oc adm release info"] = stagestest.Reply{Stdout: version}
	node.Replies[`echo "${RELEASE_IMAGE-}`] = stagestest.Reply{Stdout: "quay.io/example/release:fixture quay.io/example/release@sha256:0123\n"}
	return node
}

func TestListBootkubeFileJSON(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, execute(NewCmdList(e.f, nil), "--bootkube", fixture("4.22"), "-o", "json"))
	var doc stageListDoc
	require.NoError(t, json.Unmarshal(e.out.Bytes(), &doc))
	entries := doc.Stages
	require.Len(t, entries, 15)
	assert.Equal(t, 7, entries[6].Number)
	assert.Equal(t, "etcd-bootstrap", entries[6].Slug)
	require.Len(t, entries[6].Steps, 1)
	assert.Equal(t, "etcd-bootstrap", entries[6].Steps[0].Name)
	// The catalog knows the 4.22 konnectivity steps: they open stage 08.
	var names []string
	for _, st := range entries[7].Steps {
		names = append(names, st.Name)
		assert.False(t, st.New, st.Name)
		if st.Name != "kube-apiserver-bootstrap" {
			assert.Equal(t, "konnectivity.sh", st.File, st.Name)
		}
	}
	assert.Equal(t, []string{"konnectivity-certs", "konnectivity-server-bootstrap", "konnectivity-agent-manifest", "kube-apiserver-bootstrap"}, names)
	assert.Empty(t, entries[1].Steps, "02 has no named step")
	sno := entries[10].Steps[len(entries[10].Steps)-1]
	assert.Equal(t, "cmdbootline-nto-bootstrap", sno.Name)
	assert.True(t, sno.SingleNode)
	assert.False(t, sno.New, "a known single-node step is not new")
}

func TestListBootkubeFileTable(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, execute(NewCmdList(e.f, nil), "--bootkube", fixture("4.23-unknown")))
	out := e.out.String()
	assert.Contains(t, out, "bootkube.sh "+fixture("4.23-unknown")+", as 15 stages")
	assert.Regexp(t, `\n01\s+openshift-manifests\s+\d+\s+prelude-check\s+prelude-check.done\s+new: not in bootlab's catalog\n`, out)
	assert.Regexp(t, `\n\s+\d+\s+dns-operator-bootstrap\s+dns-operator-bootstrap.done\s+new`, out)
	assert.Regexp(t, `cmdbootline-nto-bootstrap\s+cmdbootline-nto-bootstrap.done\s+single node only`, out)
	assert.Regexp(t, `wait-for-etcd\s+\(none; skipped once stop-etcd.done exists\)`, out)

	err := execute(NewCmdList(e.f, nil), "--bootkube", filepath.Join(t.TempDir(), "missing.sh"))
	assert.Equal(t, cmdutil.ExitUsage, exitCode(err))
	assert.ErrorContains(t, err, "--bootkube")
}

func TestListReadsTheNodeScript(t *testing.T) {
	e := newEnv(t)
	node := bootstrapNode(t, "4.21", "4.21.3")
	var cmd *cobra.Command
	cmd = NewCmdList(e.f, func(o *ListOptions) error { o.Target.Node = node; return runList(cmd, e.f, o) })
	require.NoError(t, execute(cmd, "-f", e.spec))
	assert.Contains(t, e.out.String(), "node's bootkube.sh (4.21.3), as 15 stages")

	// A node without the script: bootlab's catalog.
	e.out.Reset()
	bare := stagestest.New(t.TempDir())
	cmd = NewCmdList(e.f, func(o *ListOptions) error { o.Target.Node = bare; return runList(cmd, e.f, o) })
	require.NoError(t, execute(cmd, "-f", e.spec))
	assert.Contains(t, e.out.String(), "bootkube.sh of OpenShift 4.19, as 15 stages")
}

func TestRunSourceNodeRunsTheNodeScript(t *testing.T) {
	e := newEnv(t)
	e.f.Status = status.New(e.err, false)
	node := bootstrapNode(t, "4.22", "4.22.1")
	node.Script = func(script string, stdout io.Writer) int { return 0 }
	var cmd *cobra.Command
	cmd = NewCmdRun(e.f, func(o *RunOptions) error { o.Target.Node = node; return runRun(cmd, e.f, o) })
	require.NoError(t, execute(cmd, "-f", e.spec, "07"))
	require.Len(t, node.Scripts, 1)
	assert.Contains(t, node.Scripts[0], "BOOTLAB_STOP_BEFORE=' konnectivity-certs ", "stage 08 opens with konnectivity on 4.22")
	assert.Contains(t, node.Scripts[0], "konnectivity_setup\n")
	assert.NotEmpty(t, node.CallsWith("write /run/bootlab/bootkube-07.sh"))
	assert.Regexp(t, `07\s+etcd-bootstrap\s+success\s+\S+\s+node's bootkube.sh \(4.22.1\)`, e.out.String())
	assert.Contains(t, e.err.String(), "source: node's bootkube.sh (4.22.1)")

	// --force removes the stage's markers so the script's guards rerun it.
	node.Scripts = nil
	require.NoError(t, node.Touch("/opt/openshift/etcd-bootstrap.done"))
	node.Replies["rm -f -- "] = stagestest.Reply{}
	require.NoError(t, execute(cmd, "-f", e.spec, "07", "--force"))
	rm := node.CallsWith("rm -f -- ")
	require.Len(t, rm, 1)
	assert.Contains(t, rm[0], "'/opt/openshift/etcd-bootstrap.done'")
	assert.NotContains(t, rm[0], "konnectivity-certs.done", "a later stage's markers are left")

	err := execute(cmd, "-f", e.spec, "--from", "03", "--to", "07", "--skip", "05")
	assert.Equal(t, cmdutil.ExitUsage, exitCode(err))
	assert.ErrorContains(t, err, "--skip needs --source bootlab")
}

func TestRunSourceBootlabSaysWhenStepsDiffer(t *testing.T) {
	e := newEnv(t)
	e.f.Status = status.New(e.err, false)
	// A node whose release image says 4.19 but whose script is 4.16's.
	node := bootstrapNode(t, "4.16", "4.19.3")
	require.NoError(t, node.FinishBefore(stages.Default(), 7))
	var cmd *cobra.Command
	cmd = NewCmdRun(e.f, func(o *RunOptions) error { o.Target.Node = node; return runRun(cmd, e.f, o) })
	require.NoError(t, execute(cmd, "-f", e.spec, "07", "--source", "bootlab"))
	require.Len(t, node.Scripts, 1)
	assert.Contains(t, node.Scripts[0], "# bootlab stage 07 etcd-bootstrap (script render-etcd)")
	assert.Contains(t, e.err.String(), "source: bootlab's annotated script")
	assert.Contains(t, e.err.String(), "warning: bootlab's annotated scripts for OpenShift 4.19 do not have the steps of the node's bootkube.sh (4.19.3): only in bootlab's 4.19 catalog: auth-api-bootstrap[auth-api-bootstrap.done]")
	assert.Regexp(t, `07\s+etcd-bootstrap\s+success\s+\S+\s+bootlab's annotated script`, e.out.String())
}

func TestRunDefaultsToBootlabWithoutANodeScript(t *testing.T) {
	e := newEnv(t)
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.FinishBefore(stages.Default(), 7))
	var cmd *cobra.Command
	cmd = NewCmdRun(e.f, func(o *RunOptions) error { o.Target.Node = node; return runRun(cmd, e.f, o) })
	require.NoError(t, execute(cmd, "-f", e.spec, "07"))
	require.Len(t, node.Scripts, 1)
	assert.Contains(t, node.Scripts[0], "# bootlab stage 07 etcd-bootstrap")

	err := execute(cmd, "-f", e.spec, "07", "--source", "node")
	assert.Equal(t, cmdutil.ExitUsage, exitCode(err))
	assert.ErrorContains(t, err, "has no /usr/local/bin/bootkube.sh")
}

func TestRunSourceFlags(t *testing.T) {
	e := newEnv(t)
	var got *RunOptions
	require.NoError(t, execute(NewCmdRun(e.f, func(o *RunOptions) error { got = o; return nil }), "07", "--source", "node", "--dry-run", "--bootkube", "x.sh"))
	assert.Equal(t, "node", got.Source)
	assert.Equal(t, "x.sh", got.Bootkube)
	for _, args := range [][]string{
		{"07", "--source", "both"},
		{"07", "--bootkube", "x.sh"},
		{"07", "--dry-run", "--source", "node"},
		{"07", "--dry-run", "--bootkube", "x.sh", "--source", "bootlab"},
	} {
		err := execute(NewCmdRun(e.f, func(*RunOptions) error { return nil }), args...)
		assert.Equal(t, cmdutil.ExitUsage, exitCode(err), "%v: %v", args, err)
	}
}

func TestDryRunAgainstABootkubeFile(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, execute(NewCmdRun(e.f, nil), "-f", e.spec, "--dry-run", "--bootkube", fixture("4.21"), "08"))
	out := e.out.String()
	assert.Contains(t, out, "# A copy of the bootkube.sh "+fixture("4.21")+", for stage 08 kube-apiserver-bootstrap.\n")
	assert.Contains(t, out, "BOOTLAB_STOP_BEFORE=' kube-controller-manager-bootstrap ")
	assert.Contains(t, out, "--log-driver=k8s-file", "the node's own script, not bootlab's")
}

func TestDiffShowsTheNodeBlockBesideTheAnnotatedScript(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, execute(NewCmdDiff(e.f, nil), "07", "--bootkube", fixture("4.22")))
	out := e.out.String()
	assert.Contains(t, out, "# stage 07 etcd-bootstrap in the bootkube.sh "+fixture("4.22")+"\n")
	assert.Regexp(t, `--- bootkube.sh \S+ lines \d+-\d+\n\+\+\+ scripts/07-etcd-bootstrap.sh \(bootlab's annotated script\)\n`, out)
	assert.Contains(t, out, "\n-    touch etcd-bootstrap.done\n+    mark_done etcd-bootstrap\n")

	e.out.Reset()
	require.NoError(t, execute(NewCmdDiff(e.f, nil), "08", "--bootkube", fixture("4.22")))
	out = e.out.String()
	assert.Regexp(t, `#   line \d+: konnectivity-certs \(marker konnectivity-certs.done; code in konnectivity.sh\)`, out)
	assert.Contains(t, out, "\n-konnectivity_setup\n")

	e.out.Reset()
	require.NoError(t, execute(NewCmdDiff(e.f, nil), "auth-api-bootstrap", "--bootkube", fixture("4.16")))
	assert.Contains(t, e.out.String(), "no step of this stage: the release does not have it")
	assert.Contains(t, e.out.String(), "(nothing)")

	node := bootstrapNode(t, "4.19", "4.19.7")
	var cmd *cobra.Command
	cmd = NewCmdDiff(e.f, func(o *DiffOptions) error { o.Target.Node = node; return runDiff(cmd, e.f, o) })
	e.out.Reset()
	require.NoError(t, execute(cmd, "-f", e.spec, "13"))
	assert.True(t, strings.HasPrefix(e.out.String(), "# stage 13 cb-bootstrap in the node's bootkube.sh (4.19.7)\n"), e.out.String())
}
