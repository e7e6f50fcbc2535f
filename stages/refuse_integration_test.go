//go:build integration

package stages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/scripts"
	"github.com/bootlab/bootlab/stages"
)

// The refusals of issue 21 (item 7), each against the real scripts under
// real bash in the sandbox: what a real bootstrap node must never be left
// with, by `bootlab stage run` or by a script run by hand.

// finishBefore lays down what bootkube leaves once every stage before
// number has finished: their markers (Stage.Proof) and, for a last step
// without marker, its successful service record.
func (s *sandbox) finishBefore(t *testing.T, number int) {
	t.Helper()
	recs := []map[string]string{{"phase": "service start"}}
	for _, st := range stages.Default() {
		if st.Number >= number {
			break
		}
		markers, record := st.Proof()
		for _, m := range markers {
			require.NoError(t, os.WriteFile(filepath.Join(s.root, "opt", "openshift", m), nil, 0o644))
		}
		if record != "" {
			recs = append(recs, map[string]string{"phase": "stage end", "stage": record, "result": "success"})
		}
	}
	data, err := json.Marshal(recs)
	require.NoError(t, err)
	dir := filepath.Join(s.root, "var", "log", "openshift")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bootkube.json"), data, 0o644))
}

func (s *sandbox) exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(s.root, p))
	if os.IsNotExist(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// byHand runs the rendered script of stage n as a learner would on the
// node, with bash, and returns its exit code and output.
func (s *sandbox) byHand(t *testing.T, n string, vars stages.Vars, env ...string) (int, string) {
	t.Helper()
	st, err := stages.Default().Lookup(n)
	require.NoError(t, err)
	script, err := stages.RenderScript(scripts.FS, st, vars)
	require.NoError(t, err)
	var out bytes.Buffer
	code, err := s.run(context.Background(), strings.Join(append(env, "bash -s"), " "), bytes.NewReader(script), &out, &out)
	require.NoError(t, err)
	return code, out.String()
}

func sandboxRunner(sb *sandbox, version string, out *bytes.Buffer) *stages.Runner {
	vars := testVars(version)
	vars.ReleaseImage = "quay.io/example/release:" + version + ".10"
	return &stages.Runner{Catalog: stages.Default(), Scripts: scripts.FS, Node: sb.node(), Vars: vars, Output: out}
}

// Stage 15 before 13 and 14 would write .bootkube.done: bootkube.service
// would never start and approve-csr would stop approving.
func TestSandboxStage15EarlyIsRefused(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.finishBefore(t, 13)
	var out bytes.Buffer
	r := sandboxRunner(sb, "4.19", &out)
	sel, err := r.Catalog.Select(stages.Selection{Only: []string{"15"}})
	require.NoError(t, err)
	records := len(sb.serviceRecords(t))

	_, err = r.Run(context.Background(), sel, stages.Options{})
	var re *stages.RefusedError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, err.Error(), "stage 15 (check-api-url) needs stage 13 (cb-bootstrap) first: run bootlab stage run 13")
	assert.False(t, sb.exists(t, "opt/openshift/.bootkube.done"), "no .bootkube.done")

	// By hand, the script refuses too, before it records anything.
	code, text := sb.byHand(t, "15", r.Vars)
	assert.Equal(t, 1, code, text)
	assert.Contains(t, text, "stage 15 (check-api-url) needs stage 13 (cb-bootstrap) first: run bootlab stage run 13, or scripts/13-cb-bootstrap.sh (cb-bootstrap.done missing)")
	assert.False(t, sb.exists(t, "opt/openshift/.bootkube.done"), "no .bootkube.done")
	assert.Len(t, sb.serviceRecords(t), records, "nothing recorded")

	// With 13 done but 14's wait-for-ceo never a success, still refused.
	require.NoError(t, os.WriteFile(filepath.Join(sb.root, "opt", "openshift", "cb-bootstrap.done"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sb.root, "opt", "openshift", "cvo-overrides.done"), nil, 0o644))
	code, text = sb.byHand(t, "15", r.Vars)
	assert.Equal(t, 1, code, text)
	assert.Contains(t, text, "needs stage 14 (cvo-overrides) first: run bootlab stage run 14, or scripts/14-cvo-overrides.sh (no successful wait-for-ceo in bootkube.json)")
	assert.False(t, sb.exists(t, "opt/openshift/.bootkube.done"))
}

// A forced rerun whose output a later stage already used is refused,
// through bootlab and by hand (BOOTLAB_FORCE=1); nothing changes.
func TestSandboxUnsafeForceIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, stage string
		done        int    // stages before this one finished
		want        string // through bootlab
		wantByHand  string
		untouched   string // a file the rerun would have written
		noCall      string // a container the rerun would have run
	}{
		{name: "12 after 14 brings back the MCS", stage: "12", done: 15,
			want:       "--force 12 (mco-bootstrap) refused: stage 13 (cb-bootstrap) has run since (cb-bootstrap.done) and used what 12 made",
			wantByHand: "BOOTLAB_FORCE=1 on stage 12 refused: stage 13 (cb-bootstrap) has run since (cb-bootstrap.done)",
			untouched:  "etc/kubernetes/manifests/machineconfigoperator-bootstrap-pod.yaml", noCall: "--name mco-render"},
		{name: "01 after 03 overwrites the feature gates", stage: "01", done: 4,
			want:       "--force 01 (openshift-manifests) refused: stage 03 (api-bootstrap) has run since (api-bootstrap.done)",
			wantByHand: "BOOTLAB_FORCE=1 on stage 01 refused: stage 03 (api-bootstrap) has run since (api-bootstrap.done)",
			untouched:  "opt/openshift/manifests/99_feature-gate.yaml"},
		{name: "13 after its success restarts a control plane", stage: "13", done: 15,
			want:       "--force 13 (cb-bootstrap) refused: cb-bootstrap.done exists",
			wantByHand: "BOOTLAB_FORCE=1 on stage 13 refused: cb-bootstrap.done exists",
			untouched:  "etc/kubernetes/manifests/kube-apiserver-pod.yaml", noCall: "--name cluster-bootstrap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t)
			sb.finishBefore(t, tc.done)
			var out bytes.Buffer
			r := sandboxRunner(sb, "4.19", &out)
			sel, err := r.Catalog.Select(stages.Selection{Only: []string{tc.stage}})
			require.NoError(t, err)
			records := len(sb.serviceRecords(t))

			_, err = r.Run(context.Background(), sel, stages.Options{Force: true})
			var re *stages.RefusedError
			require.ErrorAs(t, err, &re)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, re.Redo)
			assert.Empty(t, out.String(), "no script ran")

			vars := r.Vars
			vars.Force = true
			code, text := sb.byHand(t, tc.stage, vars)
			assert.Equal(t, 1, code, text)
			assert.Contains(t, text, tc.wantByHand)
			assert.Len(t, sb.serviceRecords(t), records, "nothing recorded")
			assert.False(t, sb.exists(t, tc.untouched), "the rerun did not write %s", tc.untouched)
			if tc.noCall != "" {
				calls, _ := os.ReadFile(sb.calls)
				assert.Empty(t, callLine(string(calls), tc.noCall), "no %s container", tc.noCall)
			}
		})
	}
}

// Run by hand, the scripts take the node's release, not 4.19, and refuse
// an OPENSHIFT_VERSION the node contradicts.
func TestSandboxHandRunReadsTheNodeRelease(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.env = append(sb.env, "SANDBOX_VERSION=4.21.3")
	dir, err := filepath.Abs(filepath.Join("..", "scripts"))
	require.NoError(t, err)
	hand := func(env, script string) (int, string) {
		var out bytes.Buffer
		code, err := sb.run(context.Background(), env+" RELEASE_IMAGE=quay.io/example/release:4.21.3 bash "+filepath.Join(dir, script), nil, &out, &out)
		require.NoError(t, err)
		return code, out.String()
	}
	code, text := hand("", "01-openshift-manifests.sh")
	require.Equal(t, 0, code, text)
	assert.Contains(t, text, "OpenShift 4.21.3 (read from the node)")
	code, text = hand("", "03-api-bootstrap.sh")
	require.Equal(t, 0, code, text)
	data, err := os.ReadFile(sb.calls)
	require.NoError(t, err)
	assert.Contains(t, callLine(string(data), "--name api-render"), "--log-driver=k8s-file", "rendered with 4.21's flags")

	code, text = hand("OPENSHIFT_VERSION=4.19", "05-config-bootstrap.sh")
	assert.Equal(t, 1, code, text)
	assert.Contains(t, text, "OPENSHIFT_VERSION=4.19 contradicts the node, whose release is 4.21.3")
	assert.False(t, sb.exists(t, "opt/openshift/config-bootstrap.done"))
}

// A release image other than the node's would render part of the control
// plane from a second payload: refused where the node has release-image.sh.
func TestSandboxReleaseImageOverrideIsRefused(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.installNodeScript(t, "4.19")
	var out bytes.Buffer
	r := sandboxRunner(sb, "4.19", &out)
	r.Vars.ReleaseImage = "quay.io/other/release:4.19.10"
	sel, err := r.Catalog.Select(stages.Selection{Only: []string{"01"}})
	require.NoError(t, err)
	_, err = r.Run(context.Background(), sel, stages.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "RELEASE_IMAGE=quay.io/other/release:4.19.10 differs from the node's release image (quay.io/example/release:fixture quay.io/example/release@sha256:0123")
	assert.Contains(t, err.Error(), "mix two payloads")
	assert.False(t, sb.exists(t, "opt/openshift/openshift-manifests.done"))

	// The node's own payload, named explicitly, is no mix.
	r.Vars.ReleaseImage = "quay.io/example/release@sha256:0123"
	_, err = r.Run(context.Background(), sel, stages.Options{})
	require.NoError(t, err, out.String())
	assert.True(t, sb.exists(t, "opt/openshift/openshift-manifests.done"))
}

// With cvo-overrides.done, the node's script replayed for 13 would skip
// that step by its guard and remove the bootstrap MCO pod (stage 14's
// work) before it stops: refused.
func TestSandboxNodeReplayOf13AfterCVOOverrides(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := newSandbox(t)
	sb.installNodeScript(t, "4.19")
	ns, err := stages.ReadNodeScript(ctx, sb.node(), stages.Default())
	require.NoError(t, err)
	var out bytes.Buffer
	r := nodeRunner(sb, &out)
	cb, err := r.Catalog.Lookup("13")
	require.NoError(t, err)
	_, err = r.RunNodeScript(ctx, cb, ns, stages.Options{})
	require.NoError(t, err, out.String())
	pod := "etc/kubernetes/manifests/machineconfigoperator-bootstrap-pod.yaml"
	require.True(t, sb.exists(t, pod), "stage 12 started the bootstrap MCS")

	require.NoError(t, os.WriteFile(filepath.Join(sb.root, "opt", "openshift", "cvo-overrides.done"), nil, 0o644))
	records := len(sb.serviceRecords(t))
	_, err = r.RunNodeScript(ctx, cb, ns, stages.Options{})
	var re *stages.RefusedError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, err.Error(), "stage 13 (cb-bootstrap) is behind this node: stage 14 (cvo-overrides) has run (cvo-overrides.done exists)")
	assert.True(t, sb.exists(t, pod), "the bootstrap MCO pod is still there: no stage 14 work")
	assert.Len(t, sb.serviceRecords(t), records, "nothing ran")
}
