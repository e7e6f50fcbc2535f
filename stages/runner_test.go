package stages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/scripts"
	"github.com/bootlab/bootlab/stages"
	"github.com/bootlab/bootlab/stages/stagestest"
)

func testVars(v string) stages.Vars {
	return stages.Vars{Version: stages.MustVersion(v), APIURL: "api.ocp.lab.local", APIIntURL: "api-int.ocp.lab.local"}
}

type recorder struct{ recs []stages.Record }

func (r *recorder) Record(rec stages.Record) error { r.recs = append(r.recs, rec); return nil }

func (r *recorder) phases() []string {
	var out []string
	for _, rec := range r.recs {
		out = append(out, fmt.Sprintf("%02d %s %s", rec.Number, rec.Phase, rec.Result))
	}
	return out
}

func newRunner(t *testing.T, node node.Node, version string) (*stages.Runner, *recorder, *bytes.Buffer) {
	t.Helper()
	rec := &recorder{}
	out := &bytes.Buffer{}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &stages.Runner{
		Catalog: stages.Default(), Scripts: scripts.FS, Node: node, Vars: testVars(version),
		Output: out, Records: rec,
		Now: func() time.Time { clock = clock.Add(time.Second); return clock },
	}, rec, out
}

func scriptStage(script string) string {
	// The rendered script names its stage on its second line.
	line := strings.SplitN(script, "\n", 3)[1]
	return strings.Fields(strings.TrimPrefix(line, "# bootlab stage "))[0]
}

func TestRunOrderSkipsAndMarkers(t *testing.T) {
	t.Parallel()
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.Touch("/opt/openshift/openshift-manifests.done", "/opt/openshift/api-bootstrap.done"))
	r, rec, _ := newRunner(t, node, "4.18")
	sel, err := r.Catalog.Select(stages.Selection{From: "01", To: "05"})
	require.NoError(t, err)

	outcomes, err := r.Run(context.Background(), sel, stages.Options{})
	require.NoError(t, err)

	var got []string
	for _, o := range outcomes {
		got = append(got, fmt.Sprintf("%02d %s", o.Number, o.Result))
	}
	assert.Equal(t, []string{"01 skipped", "02 success", "03 skipped", "04 skipped", "05 success"}, got)
	assert.Contains(t, outcomes[0].Reason, "openshift-manifests.done")
	assert.Contains(t, outcomes[3].Reason, "auth-api-bootstrap arrived in 4.19")

	require.Len(t, node.Scripts, 2, "only the stages with work left run a script")
	assert.Equal(t, "02", scriptStage(node.Scripts[0]))
	assert.Equal(t, "05", scriptStage(node.Scripts[1]))

	assert.Equal(t, []string{
		"01 stage skip skipped", "02 stage start ", "02 stage end success",
		"03 stage skip skipped", "04 stage skip skipped", "05 stage start ", "05 stage end success",
	}, rec.phases())
	assert.Equal(t, 1.0, rec.recs[2].DurationSeconds)
	assert.Equal(t, "fake-node", rec.recs[1].Node)
}

func TestRunVersionGateOnNewestRelease(t *testing.T) {
	t.Parallel()
	node := stagestest.New(t.TempDir())
	r, _, _ := newRunner(t, node, "4.19")
	require.NoError(t, node.FinishBefore(r.Catalog, 4))
	sel, err := r.Catalog.Select(stages.Selection{Only: []string{"auth-api-bootstrap"}})
	require.NoError(t, err)
	outcomes, err := r.Run(context.Background(), sel, stages.Options{})
	require.NoError(t, err)
	require.Len(t, outcomes, 1)
	assert.Equal(t, stages.ResultSuccess, outcomes[0].Result, "4.19 has auth-api-bootstrap")
}

func TestRunForceRerunsDoneStages(t *testing.T) {
	t.Parallel()
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.Touch("/opt/openshift/etcd-bootstrap.done"))
	r, _, _ := newRunner(t, node, "4.19")
	require.NoError(t, node.FinishBefore(r.Catalog, 7))
	sel, err := r.Catalog.Select(stages.Selection{Only: []string{"07"}})
	require.NoError(t, err)

	outcomes, err := r.Run(context.Background(), sel, stages.Options{})
	require.NoError(t, err)
	assert.Equal(t, stages.ResultSkipped, outcomes[0].Result)
	assert.Equal(t, "already done: etcd-bootstrap.done exists (--force reruns)", outcomes[0].Reason)
	assert.Empty(t, node.Scripts)

	outcomes, err = r.Run(context.Background(), sel, stages.Options{Force: true})
	require.NoError(t, err)
	assert.Equal(t, stages.ResultSuccess, outcomes[0].Result)
	require.Len(t, node.Scripts, 1)
	assert.Contains(t, node.Scripts[0], "\nBOOTLAB_FORCE=1\n")
	assert.Equal(t, []string{"write /run/bootlab/stages/07-etcd-bootstrap.sh"}, node.CallsWith("write "))
	assert.Equal(t, []string{"bash '/run/bootlab/stages/07-etcd-bootstrap.sh' </dev/null"}, node.CallsWith("bash "))
}

func TestRunFailureIsWrappedAndStops(t *testing.T) {
	t.Parallel()
	node := stagestest.New(t.TempDir())
	node.Script = func(script string, stdout io.Writer) int {
		if scriptStage(script) == "07" {
			fmt.Fprintln(stdout, "Rendering CEO Manifests...")
			fmt.Fprintln(stdout, "Error: open /assets/manifests/cluster-config.yaml: no such file")
			return 1
		}
		fmt.Fprintln(stdout, "fine")
		return 0
	}
	r, rec, out := newRunner(t, node, "4.19")
	require.NoError(t, node.FinishBefore(r.Catalog, 6))
	sel, err := r.Catalog.Select(stages.Selection{From: "06", To: "08"})
	require.NoError(t, err)

	outcomes, err := r.Run(context.Background(), sel, stages.Options{})
	require.Error(t, err)
	var se *stages.StageError
	require.True(t, errors.As(err, &se))
	assert.Equal(t, 7, se.Stage.Number)
	assert.True(t, strings.HasPrefix(err.Error(), "stage 07 (etcd-bootstrap): 07-etcd-bootstrap.sh exited 1 on fake-node"), err.Error())
	assert.Contains(t, err.Error(), "cluster-config.yaml: no such file")
	assert.Contains(t, err.Error(), "bootlab stage explain 07")

	require.Len(t, outcomes, 2, "stage 08 never starts")
	assert.Len(t, node.Scripts, 2)
	assert.Contains(t, out.String(), "[06 cvo-bootstrap] fine\n")
	assert.Contains(t, out.String(), "[07 etcd-bootstrap] Rendering CEO Manifests...\n")

	last := rec.recs[len(rec.recs)-1]
	assert.Equal(t, stages.PhaseEnd, last.Phase)
	assert.Equal(t, stages.ResultFailure, last.Result)
	assert.Equal(t, "etcd-bootstrap", last.Stage)
	assert.Contains(t, last.ErrorMessage, "exited 1")
	assert.Equal(t, "exit status 1", last.ErrorLine)
}

func TestRunValidateAfterEachStage(t *testing.T) {
	t.Parallel()
	node := stagestest.New(t.TempDir())
	r, _, _ := newRunner(t, node, "4.19")
	require.NoError(t, node.FinishBefore(r.Catalog, 5))
	sel, err := r.Catalog.Select(stages.Selection{Only: []string{"05"}})
	require.NoError(t, err)
	// The fake script "succeeds" but leaves nothing behind.
	_, err = r.Run(context.Background(), sel, stages.Options{Validate: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stage 05 (config-bootstrap): the script succeeded but 3 check(s) failed: /opt/openshift/config-bootstrap.done is missing")

	node.Script = func(string, io.Writer) int {
		_ = node.Touch("/opt/openshift/config-bootstrap.done")
		_ = node.WriteFile(context.Background(), "/opt/openshift/config-bootstrap/config", []byte("x: 1\n"), 0o644)
		_ = node.WriteFile(context.Background(), "/opt/openshift/config-bootstrap/cloud-provider-config-generated.yaml", []byte("x: 1\n"), 0o644)
		return 0
	}
	outcomes, err := r.Run(context.Background(), sel, stages.Options{Validate: true})
	require.NoError(t, err)
	assert.Equal(t, stages.ResultSuccess, outcomes[0].Result)
}

func TestRunRefusesUnsupportedVersion(t *testing.T) {
	t.Parallel()
	r, _, _ := newRunner(t, stagestest.New(t.TempDir()), "4.15")
	_, err := r.Run(context.Background(), r.Catalog, stages.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "4.16 through 4.22")
}

func TestDryRunNeedsNoNode(t *testing.T) {
	t.Parallel()
	r, rec, _ := newRunner(t, nil, "4.17")
	var out bytes.Buffer
	outcomes, err := r.Run(context.Background(), r.Catalog, stages.Options{DryRun: true, DryRunOut: &out})
	require.NoError(t, err)
	assert.Len(t, outcomes, 15)
	assert.Empty(t, rec.recs, "a dry run records nothing")
	assert.Contains(t, out.String(), "# stage 04 auth-api-bootstrap skipped: OpenShift 4.17 has no such step")
	assert.Equal(t, 14, strings.Count(out.String(), "#!/usr/bin/env bash\n"))
}

func TestSelect(t *testing.T) {
	t.Parallel()
	c := stages.Default()
	ids := func(sel stages.Selection) ([]string, error) {
		got, err := c.Select(sel)
		var out []string
		for _, s := range got {
			out = append(out, s.ID())
		}
		return out, err
	}
	got, err := ids(stages.Selection{From: "03", To: "render-etcd"})
	require.NoError(t, err)
	assert.Equal(t, []string{"03", "04", "05", "06", "07"}, got)

	got, err = ids(stages.Selection{From: "12", Skip: []string{"cb-bootstrap"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"12", "14", "15"}, got)

	got, err = ids(stages.Selection{Only: []string{"render-etcd", "01"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"01", "07"}, got, "catalog order, whatever the argument order")

	_, err = ids(stages.Selection{From: "08", To: "03"})
	assert.ErrorContains(t, err, "comes after")
	_, err = ids(stages.Selection{From: "99"})
	assert.ErrorContains(t, err, "--from: no stage \"99\"")
	_, err = ids(stages.Selection{Only: []string{"07"}, From: "03"})
	assert.Error(t, err)

	// --skip names whole stages: one step of a shared stage is refused
	// rather than silently taking its neighbours (the MCS) along.
	_, err = ids(stages.Selection{From: "11", Skip: []string{"cco-bootstrap"}})
	assert.ErrorContains(t, err, "--skip cco-bootstrap: cco-bootstrap is one step of stage 12 mco-bootstrap (mco-bootstrap, resolve-api-url, resolve-api-int-url, cco-bootstrap)")
	assert.ErrorContains(t, err, "--skip 12")
	_, err = ids(stages.Selection{Skip: []string{"node-tuning-bootstrap"}})
	assert.ErrorContains(t, err, "stage 11 ingress-operator-bootstrap")
	got, err = ids(stages.Selection{From: "11", To: "14", Skip: []string{"start-mcs", "wait-for-ceo", "13-cb-bootstrap.sh"}})
	require.NoError(t, err, "a stage's number, slug, script or file name skips it whole")
	assert.Equal(t, []string{"11"}, got)
}

func TestLookupByEveryName(t *testing.T) {
	t.Parallel()
	c := stages.Default()
	for arg, want := range map[string]int{
		"07": 7, "7": 7, "etcd-bootstrap": 7, "render-etcd": 7, "07-etcd-bootstrap.sh": 7,
		"node-tuning-bootstrap": 11, "start-bootstrap": 13, "wait-for-etcd": 13, "wait-for-ceo": 14,
		"cco-bootstrap": 12, "resolve-api-int-url": 12, "check-api-int-url": 15, "image-for": 2,
	} {
		s, err := c.Lookup(arg)
		require.NoError(t, err, arg)
		assert.Equal(t, want, s.Number, arg)
	}
	_, err := c.Lookup("network-bootstrap")
	assert.ErrorContains(t, err, "bootlab stage list")
}

// bootkubeSteps are the named steps the bootkube.sh of release v records,
// in order (konnectivity enabled from 4.22): the baseline of reference §3.2,
// without auth-api-bootstrap before 4.19, with the konnectivity steps of
// installer #10344 from 4.22.
func bootkubeSteps(v string) []string {
	ver := stages.MustVersion(v)
	at := func(since string) bool { return !ver.Less(stages.MustVersion(since)) }
	var out []string
	add := func(names ...string) { out = append(out, names...) }
	add("openshift-manifests", "api-bootstrap")
	if at("4.19") {
		add("auth-api-bootstrap")
	}
	add("config-bootstrap", "cvo-bootstrap", "etcd-bootstrap")
	if at("4.22") {
		add("konnectivity-certs", "konnectivity-server-bootstrap", "konnectivity-agent-manifest")
	}
	add("kube-apiserver-bootstrap", "kube-controller-manager-bootstrap",
		"kube-scheduler-bootstrap", "ingress-operator-bootstrap", "node-tuning-bootstrap", "mco-bootstrap",
		"resolve-api-url", "resolve-api-int-url", "cco-bootstrap", "wait-for-etcd", "cb-bootstrap")
	if at("4.22") {
		add("konnectivity-cleanup")
	}
	add("cvo-overrides", "wait-for-ceo", "check-api-url", "check-api-int-url")
	return out
}

func TestCatalogCoversBootkubeInOrder(t *testing.T) {
	t.Parallel()
	c := stages.Default()
	require.Len(t, c, 15)
	var named []string
	for i, s := range c {
		assert.Equal(t, i+1, s.Number)
		assert.NotEmpty(t, s.Script, s.Label())
		assert.NotEmpty(t, s.Checks, s.Label())
		_, err := scripts.FS.Open(s.ScriptFile())
		assert.NoError(t, err, "every stage has its script")
		for _, st := range s.Steps {
			if !strings.HasPrefix(st.Name, "(") {
				named = append(named, st.Name)
			}
		}
	}
	assert.Equal(t, bootkubeSteps(stages.Newest.String()), named, "every bootkube step in exactly one stage, in bootkube's order")
	for _, n := range []string{"cb-bootstrap", "etcd-bootstrap", "kube-apiserver-bootstrap"} {
		s, err := c.Lookup(n)
		require.NoError(t, err)
		assert.Equal(t, n, s.Slug)
	}
}

func TestJSONLinesRecord(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	j := &stages.JSONLines{W: &b}
	require.NoError(t, j.Record(stages.Record{Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Phase: stages.PhaseEnd, Stage: "etcd-bootstrap", Number: 7, Result: stages.ResultSuccess, DurationSeconds: 2.5}))
	require.NoError(t, j.Record(stages.Record{Phase: stages.PhaseStart, Stage: "cb-bootstrap", Number: 13}))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &m))
	assert.Equal(t, map[string]any{"timestamp": "2026-01-02T03:04:05Z", "phase": "stage end", "stage": "etcd-bootstrap", "number": 7.0, "result": "success", "durationSeconds": 2.5}, m)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// Run reads the node's state for its own preflight unless the caller has
// just done it (stage run, before its checkpoint): the same check, once.
func TestRunPreflightsUnlessPreflighted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		preflighted bool
		wantLists   int
	}{
		{name: "Run preflights itself", wantLists: 1},
		{name: "the caller preflighted", preflighted: true, wantLists: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := stagestest.New(t.TempDir())
			r, _, _ := newRunner(t, node, "4.19")
			require.NoError(t, node.FinishBefore(r.Catalog, 3))
			sel, err := r.Catalog.Select(stages.Selection{Only: []string{"03"}})
			require.NoError(t, err)
			outcomes, err := r.Run(context.Background(), sel, stages.Options{Preflighted: tc.preflighted})
			require.NoError(t, err)
			require.Len(t, outcomes, 1)
			assert.Equal(t, stages.ResultSuccess, outcomes[0].Result)
			assert.Equal(t, tc.wantLists, node.Lists(stages.AssetDir))
		})
	}
}

// A stage run asks about the node's state several times before anything
// runs on it (prerequisites, preflight, the checkpoint's decision, each
// stage's markers): it is read once, one SSH session each, not once per
// question.
func TestRunReadsTheNodeOnceUntilAScriptRuns(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.Touch("/opt/openshift/openshift-manifests.done"))
	r, _, _ := newRunner(t, node, "4.18")
	sel, err := r.Catalog.Select(stages.Selection{From: "01", To: "03"})
	require.NoError(t, err)

	_, err = r.Pending(ctx, sel)
	require.NoError(t, err)
	require.NoError(t, r.Preflight(ctx, sel, stages.Options{}))
	st, err := r.NodeState(ctx)
	require.NoError(t, err)
	run, why := st.RunIf(sel[0])
	assert.False(t, run, "stage 01's marker exists")
	assert.Contains(t, why, "openshift-manifests.done exists")
	outcomes, err := r.Run(ctx, sel, stages.Options{Preflighted: true})
	require.NoError(t, err)
	require.Len(t, outcomes, 3)
	assert.Equal(t, stages.ResultSkipped, outcomes[0].Result)
	assert.Equal(t, stages.ResultSuccess, outcomes[1].Result)

	var before []string
	for _, c := range node.Calls {
		if strings.HasPrefix(c, "write ") {
			break
		}
		before = append(before, c)
	}
	require.Len(t, before, 1, "one read of the node before the first script, however often it is asked: %q", before)
	assert.Contains(t, before[0], "for d in '/opt/openshift'", "the markers' directory listed")
	assert.Contains(t, before[0], "set -- '"+stages.ServiceRecords+"'", "and the records read, in the same command")
	assert.Contains(t, node.Calls[len(before):], "stat /opt/openshift/api-bootstrap.done",
		"after a script ran, the next stage's markers are read from the node again")
}

// What was read does not outlive Run: the next run sees what changed on
// the node in between.
func TestRunDoesNotKeepTheNodeStateAfterItReturns(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.Touch("/opt/openshift/openshift-manifests.done"))
	r, _, _ := newRunner(t, node, "4.18")
	sel, err := r.Catalog.Select(stages.Selection{Only: []string{"01"}})
	require.NoError(t, err)
	require.NoError(t, r.Preflight(ctx, sel, stages.Options{}))
	outcomes, err := r.Run(ctx, sel, stages.Options{Preflighted: true})
	require.NoError(t, err)
	assert.Equal(t, stages.ResultSkipped, outcomes[0].Result)

	require.NoError(t, os.Remove(filepath.Join(node.Root, "opt/openshift/openshift-manifests.done")))
	outcomes, err = r.Run(ctx, sel, stages.Options{})
	require.NoError(t, err)
	assert.Equal(t, stages.ResultSuccess, outcomes[0].Result, "the marker removed after the first run is seen missing")
}

func TestNodeStateRunIfAgreesWithTheNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tests := []struct {
		name    string
		markers []string
	}{
		{"fresh node", nil},
		{"some stages done", []string{"openshift-manifests.done", "api-bootstrap.done", "etcd-bootstrap.done"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := stagestest.New(t.TempDir())
			for _, m := range tt.markers {
				require.NoError(t, node.Touch("/opt/openshift/"+m))
			}
			c := stages.Default()
			st, err := stages.ReadNodeState(ctx, node, c)
			require.NoError(t, err)
			for _, s := range c {
				want, wantWhy, err := s.RunIf(ctx, node)
				require.NoError(t, err)
				got, why := st.RunIf(s)
				assert.Equal(t, want, got, "stage %s", s.ID())
				assert.Equal(t, wantWhy, why, "stage %s", s.ID())
			}
		})
	}
}

// A script whose session ends without an exit status (the node rebooted
// under it) is recorded as interrupted, never as success, and the
// progress shows it failed, saying to run it again.
func TestRunInterruptedByARebootIsRecordedSo(t *testing.T) {
	t.Parallel()
	node := stagestest.New(t.TempDir())
	node.Script = func(script string, stdout io.Writer) int {
		if scriptStage(script) == "07" {
			return -1 // what the SSH client returns when a signal ended the session
		}
		return 0
	}
	r, rec, _ := newRunner(t, node, "4.19")
	require.NoError(t, node.FinishBefore(r.Catalog, 7))
	sel, err := r.Catalog.Select(stages.Selection{From: "07", To: "07"})
	require.NoError(t, err)
	_, err = r.Run(context.Background(), sel, stages.Options{})
	require.Error(t, err)

	last := rec.recs[len(rec.recs)-1]
	assert.Equal(t, stages.PhaseEnd, last.Phase)
	assert.Equal(t, stages.ResultInterrupted, last.Result)
	assert.Contains(t, last.ErrorMessage, "run the stage again")
	p := stages.FoldRecords(rec.recs)
	assert.Equal(t, stages.ProgressFailed, p[6].State)
	assert.Contains(t, p[6].Message, "did the node reboot?")
}
