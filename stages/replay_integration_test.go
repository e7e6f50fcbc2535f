//go:build integration

package stages_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/scripts"
	"github.com/bootlab/bootlab/stages"
)

// fixtureVersion is the release a fixture's node reports: "4.22.3".
func fixtureVersion(release string) string {
	return strings.TrimSuffix(release, "-unknown") + ".3"
}

// installNodeScript puts a release's bootkube.sh and its helpers in the
// sandbox's /usr/local/bin, and what they read in /opt/openshift, and makes
// the release image report the release.
func (s *sandbox) installNodeScript(t *testing.T, release string) {
	t.Helper()
	bin := filepath.Join(s.root, "usr", "local", "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	for _, d := range []string{fixtureDir("common"), fixtureDir(release)} {
		entries, err := os.ReadDir(d)
		require.NoError(t, err)
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(d, e.Name()))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(bin, e.Name()), data, 0o755))
		}
	}
	oo := filepath.Join(s.root, "opt", "openshift")
	for name, text := range map[string]string{
		"konnectivity-server-pod.yaml":      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: konnectivity-server\nspec:\n  containers:\n  - image: ${KONNECTIVITY_IMAGE}\n",
		"konnectivity-namespace.yaml":       "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: openshift-bootstrap-konnectivity\n",
		"konnectivity-agent-daemonset.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: konnectivity-agent\n  namespace: openshift-bootstrap-konnectivity\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(oo, name), []byte(text), 0o644))
	}
	s.env = append(s.env, "SANDBOX_VERSION="+fixtureVersion(release))
}

// endedSince returns the names of the steps bootkube.json ended from record
// index from on, and whether every one succeeded.
func endedSince(t *testing.T, sb *sandbox, from int) []string {
	t.Helper()
	var out []string
	for _, rec := range sb.serviceRecords(t)[from:] {
		if rec["phase"] == "stage end" {
			assert.Equal(t, "success", rec["result"], rec["stage"])
			out = append(out, rec["stage"])
		}
	}
	return out
}

// expectedSteps are the non-single-node steps of the script that keep
// passes, in script order.
func expectedSteps(ns *stages.NodeScript, keep func(stages.ScriptStep) bool) []string {
	var out []string
	for _, st := range ns.Script.Steps {
		if !st.SingleNode && keep(st) {
			out = append(out, st.Name)
		}
	}
	return out
}

func nodeRunner(sb *sandbox, out *bytes.Buffer) *stages.Runner {
	return &stages.Runner{Catalog: stages.Default(), Scripts: scripts.FS, Node: sb.node(), Vars: testVars("4.19"), Output: out}
}

// `stage run 07 --source node` runs the node's script through the etcd
// block and everything pending before it, stops before the first step of
// stage 08, and bootkube.service run afterwards skips what it did.
func TestSandboxNodeScriptStage07ThenHandoff(t *testing.T) {
	t.Parallel()
	for _, release := range scriptShapes {
		t.Run(release, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			sb := newSandbox(t)
			sb.installNodeScript(t, release)
			node := sb.node()
			ns, err := stages.ReadNodeScript(ctx, node, stages.Default())
			require.NoError(t, err)
			require.NotNil(t, ns, "the sandbox has /usr/local/bin/bootkube.sh")
			ns.Release, err = stages.NodeRelease(ctx, node)
			require.NoError(t, err)
			assert.Equal(t, fixtureVersion(release), ns.Release, "read from the release image")

			var out bytes.Buffer
			r := nodeRunner(sb, &out)
			etcd, err := r.Catalog.Lookup("07")
			require.NoError(t, err)
			oc, err := r.RunNodeScript(ctx, etcd, ns, stages.Options{})
			require.NoError(t, err, out.String())
			assert.Equal(t, stages.ResultSuccess, oc.Result)
			assert.Equal(t, "node's bootkube.sh ("+fixtureVersion(release)+")", oc.Reason)

			through07 := expectedSteps(ns, func(st stages.ScriptStep) bool { return st.Stage <= 7 })
			assert.Contains(t, through07, "etcd-bootstrap")
			assert.Equal(t, through07, endedSince(t, sb, 0), "exactly the steps of stages 01-07, in script order")
			assert.Contains(t, out.String(), "[07 etcd-bootstrap] Rendering CEO Manifests...\n")
			next := ns.StopBefore(etcd)
			require.NotEmpty(t, next)
			assert.Contains(t, []string{"kube-apiserver-bootstrap", "konnectivity-certs"}, next[0], "stage 08's first step")
			assert.Contains(t, out.String(), "stopping before "+next[0])
			// The stop is recorded as one: bootkube is not finished.
			recs := sb.serviceRecords(t)
			last := recs[len(recs)-1]
			assert.Equal(t, "service end", last["phase"])
			assert.Equal(t, "stopped", last["result"], "never success for a half-done bootstrap")
			assert.Contains(t, last["errorMessage"], "stopped bootkube.sh after stage 07 etcd-bootstrap, before "+next[0])
			assert.Contains(t, last["errorMessage"], "bootkube is not finished (no .bootkube.done); not run yet: "+strings.Join(next, " "))
			for _, st := range ns.Script.Steps {
				if st.Marker == "" || st.SingleNode {
					continue
				}
				_, err := os.Stat(filepath.Join(sb.root, "opt", "openshift", st.Marker))
				assert.Equal(t, st.Stage <= 7, err == nil, "marker %s of stage %02d", st.Marker, st.Stage)
			}
			copyData, err := os.ReadFile(filepath.Join(sb.root, "run", "bootlab", "bootkube-07.sh"))
			require.NoError(t, err, "the copy stays on the node to read")
			assert.Contains(t, string(copyData), "BOOTLAB_STOP_BEFORE=' "+next[0]+" ")

			// bootkube.service after `stage handoff`: the node's script, whole.
			before := len(sb.serviceRecords(t))
			var whole bytes.Buffer
			code, err := sb.run(ctx, "cd /opt/openshift && SERVICE_NAME=bootkube bash /usr/local/bin/bootkube.sh", nil, &whole, &whole)
			require.NoError(t, err)
			require.Equal(t, 0, code, whole.String())
			assert.Equal(t, expectedSteps(ns, func(st stages.ScriptStep) bool { return st.Stage > 7 || st.Marker == "" }), endedSince(t, sb, before),
				"bootkube skips every step the stages did and runs the rest")
			assert.NotContains(t, whole.String(), "Rendering CEO Manifests")
			recs = sb.serviceRecords(t)
			assert.Equal(t, map[string]string{"phase": "service end", "result": "success"},
				map[string]string{"phase": recs[len(recs)-1]["phase"], "result": recs[len(recs)-1]["result"]},
				"bootkube finished: now the service ends with success")
			_, err = os.Stat(filepath.Join(sb.root, "opt", "openshift", ".bootkube.done"))
			assert.NoError(t, err)
		})
	}
}

// Every stage, run in turn with the node's script, ends exactly its own
// steps: each stops where the next begins.
func TestSandboxNodeScriptEveryStopPoint(t *testing.T) {
	t.Parallel()
	for _, release := range scriptShapes {
		t.Run(release, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			sb := newSandbox(t)
			sb.installNodeScript(t, release)
			ns, err := stages.ReadNodeScript(ctx, sb.node(), stages.Default())
			require.NoError(t, err)
			var out bytes.Buffer
			r := nodeRunner(sb, &out)
			for _, s := range r.Catalog {
				before := 0
				if _, err := os.Stat(filepath.Join(sb.root, "var", "log", "openshift", "bootkube.json")); err == nil {
					before = len(sb.serviceRecords(t))
				}
				_, err := r.RunNodeScript(ctx, s, ns, stages.Options{})
				require.NoError(t, err, "stage %s:\n%s", s.Label(), out.String())
				// Its own steps, and earlier ones without a marker: those
				// rerun, as when bootkube.service restarts.
				want := expectedSteps(ns, func(st stages.ScriptStep) bool {
					return st.Stage == s.Number || (st.Stage < s.Number && st.Marker == "")
				})
				assert.Equal(t, want, endedSince(t, sb, before), "stage %s", s.Label())
				if next := ns.StopBefore(s); len(next) > 0 {
					assert.Contains(t, out.String(), "stopping before "+next[0], "stage %s", s.Label())
				}
			}
			_, err = os.Stat(filepath.Join(sb.root, "opt", "openshift", ".bootkube.done"))
			assert.NoError(t, err, "stage 15 runs the script to its end")
		})
	}
}

// A test that fails when bootlab's annotated scripts and the node script of
// the same release disagree on a step's name, marker or order: both run in
// a sandbox and their service records and markers are compared.
func TestSandboxAnnotatedScriptsMatchNodeScript(t *testing.T) {
	t.Parallel()
	compared := 0
	for _, release := range scriptShapes {
		v := stages.MustVersion(fixtureVersion(release))
		if v.CheckSupported() != nil {
			continue
		}
		compared++
		t.Run(release, func(t *testing.T) {
			t.Parallel() // each release has sandboxes of its own
			ctx := context.Background()
			node := newSandbox(t)
			node.installNodeScript(t, release)
			code, err := node.run(ctx, "cd /opt/openshift && SERVICE_NAME=bootkube bash /usr/local/bin/bootkube.sh", nil, &bytes.Buffer{}, &bytes.Buffer{})
			require.NoError(t, err)
			require.Equal(t, 0, code)

			annotated := newSandbox(t)
			annotated.env = append(annotated.env, "SANDBOX_VERSION="+fixtureVersion(release))
			if !v.Less(stages.MustVersion("4.22")) {
				// The node of this release has the installer's konnectivity
				// inputs (installNodeScript lays them down): so does this one.
				annotated.konnectivityAssets(t)
			}
			var out bytes.Buffer
			vars := testVars(v.String())
			vars.ReleaseImage = "quay.io/example/release:" + fixtureVersion(release)
			r := &stages.Runner{Catalog: stages.Default(), Scripts: scripts.FS, Node: annotated.node(), Vars: vars, Output: &out}
			_, err = r.Run(ctx, r.Catalog, stages.Options{})
			require.NoError(t, err, out.String())

			assert.Equal(t, endedSince(t, node, 0), endedSince(t, annotated, 0), "the same steps in the same order")
			assert.Equal(t, markers(t, node), markers(t, annotated), "the same .done markers")
		})
	}
	assert.GreaterOrEqual(t, compared, 2, "at least two fixture releases are modelled by the catalog")
}

func markers(t *testing.T, sb *sandbox) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(sb.root, "opt", "openshift"))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".done") {
			out = append(out, e.Name())
		}
	}
	return out
}
