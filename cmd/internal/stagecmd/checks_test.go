package stagecmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/stages"
	"github.com/bootlab/bootlab/stages/stagestest"
)

// stage validate prints its checks with the shared printer: a failed
// marker check is ✗ under its stage, and the failure list at the end
// points at the stage's explain page.
func TestValidatePrintsChecks(t *testing.T) {
	e := newEnv(t)
	node := stagestest.New(t.TempDir())
	validate := func(args ...string) error { return validateOn(e, node, append([]string{"--no-live"}, args...)...) }

	err := validate("07")
	assert.Equal(t, cmdutil.ExitCheckFailed, exitCode(err), "%v", err)
	out := e.out.String()
	assert.Regexp(t, `(?m)^\s+STAGE\s+CHECK\s+DETAIL$`, out)
	assert.Regexp(t, `(?m)^✗  07 etcd-bootstrap  marker /opt/openshift/etcd-bootstrap.done\s+/opt/openshift/etcd-bootstrap.done is missing`, out)
	assert.Regexp(t, `\n6 of 6 failed:\n✗ 07 etcd-bootstrap marker /opt/openshift/etcd-bootstrap.done: /opt/openshift/etcd-bootstrap.done is missing`, out)
	assert.Equal(t, 1, strings.Count(out, "fix: "), "one fix line for the stage's failures:\n%s", out)
	assert.True(t, strings.HasSuffix(out, "\n    fix: "+"`bootlab stage explain 07` lists the common failures of stage 07 etcd-bootstrap\n"), out)

	e.out.Reset()
	err = validate("07", "-o", "json")
	assert.Equal(t, cmdutil.ExitCheckFailed, exitCode(err))
	var doc struct {
		Kind string `json:"kind"`
		check.Doc
	}
	require.NoError(t, json.Unmarshal(e.out.Bytes(), &doc), e.out.String())
	assert.Equal(t, "StageValidation", doc.Kind)
	assert.False(t, doc.OK)
	require.NotEmpty(t, doc.Checks)
	c := doc.Checks[0]
	assert.Equal(t, "07 etcd-bootstrap", c.Group)
	assert.Equal(t, "marker /opt/openshift/etcd-bootstrap.done", c.Name)
	assert.Contains(t, c.Detail, "is missing")
	assert.Contains(t, c.Fix, "bootlab stage explain 07")

	// With the stage's files in place its file checks pass, and a pass has
	// no fix.
	require.NoError(t, os.MkdirAll(filepath.Join(node.Root, "opt", "openshift"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(node.Root, "opt", "openshift", "etcd-bootstrap.done"), nil, 0o644))
	e.out.Reset()
	_ = validate("07", "-o", "json")
	doc.Checks = nil
	require.NoError(t, json.Unmarshal(e.out.Bytes(), &doc), e.out.String())
	assert.True(t, doc.Checks[0].Passed(), "%+v", doc.Checks[0])
	assert.Empty(t, doc.Checks[0].Fix)
}

// validateOn runs `stage validate -f SPEC ARGS...` against node.
func validateOn(e *env, node *stagestest.Node, args ...string) error {
	var cmd *cobra.Command
	cmd = NewCmdValidate(e.f, func(o *ValidateOptions) error {
		o.Target.Node = node
		return runValidate(cmd, e.f, o)
	})
	return execute(cmd, append([]string{"-f", e.spec}, args...)...)
}

// stage status prints one line per stage with the shared printer: ✓ done,
// … pending, with the markers in the detail, then the bootkube and next
// lines.
func TestStatusPrintsStagesAsChecks(t *testing.T) {
	e := newEnv(t)
	node := stagestest.New(t.TempDir())
	require.NoError(t, os.MkdirAll(filepath.Join(node.Root, "opt", "openshift"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(node.Root, "opt", "openshift", "openshift-manifests.done"), nil, 0o644))
	var cmd *cobra.Command
	cmd = NewCmdStatus(e.f, func(o *StatusOptions) error {
		o.Target.Node = node
		return runStatus(cmd, e.f, o)
	})
	require.NoError(t, execute(cmd, "-f", e.spec))
	out := e.out.String()
	assert.Regexp(t, `(?m)^\s+STAGE\s+DETAIL$`, out)
	assert.Regexp(t, `(?m)^✓  01 openshift-manifests\s+done: openshift-manifests.done$`, out)
	assert.Regexp(t, `(?m)^…  07 etcd-bootstrap\s+pending: missing etcd-bootstrap.done$`, out)
	assert.NotContains(t, out, "✗", "a pending stage is not a failure")
	assert.Regexp(t, `(?m)^✓  02 release-image\s+no marker: runs every time`, out)
	assert.Contains(t, out, "\nnext: stage 03 api-bootstrap (bootlab stage run 03)\n")
}

func TestStageStatusResult(t *testing.T) {
	for _, c := range []struct {
		ss   stages.StageStatus
		want check.Result
	}{
		{stages.StageStatus{Number: 7, Slug: "etcd-bootstrap", State: "done", Present: []string{"etcd-bootstrap.done"}},
			check.Result{Name: "07 etcd-bootstrap", State: check.StatePassed, Detail: "done: etcd-bootstrap.done"}},
		{stages.StageStatus{Number: 14, Slug: "wait-for-ceo", State: "pending", Present: []string{"a.done"}, Missing: []string{"b.done", "c.done"}, Reason: "b.done is missing"},
			check.Result{Name: "14 wait-for-ceo", State: check.StatePending, Detail: "pending: missing b.done,c.done, present a.done"}},
		{stages.StageStatus{Number: 2, Slug: "release-image", State: "skipped", Reason: "OpenShift 4.12 has no such step"},
			check.Result{Name: "02 release-image", State: check.StateSkipped, Detail: "skipped: OpenShift 4.12 has no such step"}},
		{stages.StageStatus{Number: 13, Slug: "x", State: "always", Reason: "no marker: runs every time, as in bootkube"},
			check.Result{Name: "13 x", State: check.StatePassed, Detail: "no marker: runs every time, as in bootkube"}},
	} {
		assert.Equal(t, c.want, c.ss.Result(), c.ss.Slug)
	}
}

// stage validate of several stages reads what all their checks read in
// one command, where each stage would read its own.
func TestValidateSeveralStagesReadsOnce(t *testing.T) {
	e := newEnv(t)
	validate := func(args ...string) *stagestest.Node {
		node := stagestest.New(t.TempDir())
		err := validateOn(e, node, append([]string{"--no-live"}, args...)...)
		assert.Equal(t, cmdutil.ExitCheckFailed, exitCode(err), "%v", err)
		return node
	}
	one := validate("07")
	assert.Equal(t, 1, prefetches(one), "one stage: its own read\n%s", strings.Join(one.Calls, "\n"))
	all := validate("--all")
	assert.Equal(t, 1, prefetches(all), "every stage: one read\n%s", strings.Join(all.Calls, "\n"))
	for _, p := range []string{"/opt/openshift/etcd-bootstrap.done", "/opt/openshift/mco-bootstrap.done", "/opt/openshift/.bootkube.done"} {
		assert.Contains(t, all.Calls[0], p, "the read asks for every stage's files")
	}
	assert.Equal(t, 1, prefetches(validate("07", "08", "12")))
}

// prefetches counts n's node.Prefetch commands.
func prefetches(n *stagestest.Node) int { return len(n.CallsWith("set -- ")) }

// Once a stage has waited for its live checks, the stages after it read
// afresh: what it waited for may have let their files appear.
func TestValidateStagesReadAfreshAfterAWait(t *testing.T) {
	e := newEnv(t)
	file := func(p string) stages.Check {
		return stages.Check{Name: "file " + p, Reads: []string{p, p + ".sig"}, Run: func(ctx context.Context, env *stages.CheckEnv) error {
			_, err := env.Node.Stat(ctx, p)
			return err
		}}
	}
	answers := 0
	live := stages.Check{Name: "answers on the second ask", Live: true, Run: func(context.Context, *stages.CheckEnv) error {
		if answers++; answers < 2 {
			return errors.New("not yet")
		}
		return nil
	}}
	run := []*stages.Stage{
		{Number: 1, Slug: "one", Checks: []stages.Check{file("/a"), live}},
		{Number: 2, Slug: "two", Checks: []stages.Check{file("/b")}},
		{Number: 3, Slug: "three", Checks: []stages.Check{file("/c")}},
	}
	for _, tc := range []struct {
		wait time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 2}} {
		node := stagestest.New(t.TempDir())
		node.Touch("/a", "/b", "/c")
		answers = 0
		res := validateStages(context.Background(), e.f, node, stages.Vars{}, run, &ValidateOptions{Wait: tc.wait})
		assert.Equal(t, tc.want, prefetches(node), "wait %s\n%s", tc.wait, strings.Join(node.Calls, "\n"))
		assert.Len(t, res, 4)
		if tc.wait > 0 {
			assert.Empty(t, check.Failed(res), "%+v", res)
			reads := node.CallsWith("set -- ")
			assert.Contains(t, reads[1], "'/b'", "the second read is of the stages after the wait")
			assert.NotContains(t, reads[1], "'/a'")
		}
	}
}
