package stages_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/stages"
	"github.com/bootlab/bootlab/stages/stagestest"
)

func nodeScript(t *testing.T, release string) *stages.NodeScript {
	t.Helper()
	b := parseFixture(t, release)
	return &stages.NodeScript{Script: b, Blocks: stages.Default().MapScript(b), Release: release + ".3"}
}

func TestStopBeforeEveryStage(t *testing.T) {
	t.Parallel()
	ns := nodeScript(t, "4.22")
	c := stages.Default()
	first := map[int]string{}
	for i := 1; i <= 15; i++ {
		s, err := c.Lookup(string(rune('0'+i/10)) + string(rune('0'+i%10)))
		require.NoError(t, err)
		stops := ns.StopBefore(s)
		if len(stops) > 0 {
			first[i] = stops[0]
		}
	}
	assert.Equal(t, map[int]string{
		1: "api-bootstrap", 2: "api-bootstrap", 3: "auth-api-bootstrap", 4: "config-bootstrap",
		5: "cvo-bootstrap", 6: "etcd-bootstrap", 7: "konnectivity-certs", // 4.22: stage 08 starts with konnectivity
		8: "kube-controller-manager-bootstrap", 9: "kube-scheduler-bootstrap",
		10: "ingress-operator-bootstrap", 11: "mco-bootstrap", 12: "wait-for-etcd",
		13: "konnectivity-cleanup", 14: "check-api-url",
	}, first, "stage 15 runs to the end")
}

func TestBuildReplayOnlyAddsTheStopHook(t *testing.T) {
	t.Parallel()
	ns := nodeScript(t, "4.19")
	s, err := stages.Default().Lookup("07")
	require.NoError(t, err)
	copyData, err := ns.BuildReplay(s)
	require.NoError(t, err)
	text := string(copyData)
	assert.Contains(t, text, "# A copy of the node's bootkube.sh (4.19.3), for stage 07 etcd-bootstrap.\n")
	assert.Contains(t, text, "BOOTLAB_STOP_BEFORE=' kube-apiserver-bootstrap kube-controller-manager-bootstrap ")
	assert.NotContains(t, text, "BOOTLAB_STOP_BEFORE=' etcd-bootstrap", "its own steps run")
	assert.Contains(t, text, ". /usr/local/bin/bootstrap-service-record.sh; bootlab_stop_hook\n")
	assert.Contains(t, text, ". /usr/local/bin/bootstrap-verify-api-server-urls.sh; bootlab_stop_hook\n",
		"a helper that sources the records file again gets the hook again")

	// Apart from the header and the hooked source lines, the copy is the node's script.
	_, body, ok := strings.Cut(text, "# ---- the node's script ----\n")
	require.True(t, ok)
	orig := strings.SplitN(string(ns.Script.Data), "\n", 2)[1]
	assert.Equal(t, orig, strings.ReplaceAll(body, "; bootlab_stop_hook", ""))

	last, err := stages.Default().Lookup("15")
	require.NoError(t, err)
	whole, err := ns.BuildReplay(last)
	require.NoError(t, err)
	assert.NotContains(t, string(whole), "bootlab_stop_hook")
	assert.Contains(t, string(whole), "No later stage: it runs whole")
}

func TestBuildReplayNeedsAHelper(t *testing.T) {
	t.Parallel()
	b, err := stages.ParseBootkube("old.sh", []byte("#!/bin/bash\nif [ ! -f etcd-bootstrap.done ]; then\n  record_service_stage_start \"etcd-bootstrap\"\n  touch etcd-bootstrap.done\nfi\nif [ ! -f kube-apiserver-bootstrap.done ]; then\n  record_service_stage_start \"kube-apiserver-bootstrap\"\n  touch kube-apiserver-bootstrap.done\nfi\n"), nil)
	require.NoError(t, err)
	ns := &stages.NodeScript{Script: b, Blocks: stages.Default().MapScript(b)}
	s, err := stages.Default().Lookup("07")
	require.NoError(t, err)
	_, err = ns.BuildReplay(s)
	assert.ErrorIs(t, err, stages.ErrNoStopHook)
	assert.ErrorContains(t, err, "--source bootlab")
}

func TestReadNodeScriptAndRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := stagestest.New(t.TempDir())
	ns, err := stages.ReadNodeScript(ctx, node, stages.Default())
	require.NoError(t, err)
	assert.Nil(t, ns, "no bootkube.sh: not a bootstrap node")

	b := parseFixture(t, "4.22")
	require.NoError(t, node.WriteFile(ctx, stages.NodeBootkube, b.Data, 0o755))
	ns, err = stages.ReadNodeScript(ctx, node, stages.Default())
	require.NoError(t, err)
	require.NotNil(t, ns)
	assert.NotContains(t, stages.StepNames(ns.Script.Steps), "konnectivity-certs", "konnectivity.sh is missing on the node: its steps are unseen")
	assert.NotEmpty(t, node.CallsWith("read /usr/local/bin/konnectivity.sh"), "the helpers it sources are read")

	node.Replies["oc adm release info"] = stagestest.Reply{Stdout: "4.22.1"}
	v, err := stages.NodeRelease(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, "4.22.1", v)
	require.NoError(t, node.WriteFile(ctx, stages.ImagesFile, []byte("VERSION=4.22.3\n"), 0o600))
	v, err = stages.NodeRelease(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, "4.22.3", v, "what stage 02 read from the release image")
}

// The replay's preflight asks whether a later step has run from the one
// listing of AssetDir that the node state reads, for the markers of a
// node script the catalog does not name too: on a real node a stat each
// was an SSH session per later marker (about twenty-five before stage 01)
// ahead of every stage run.
func TestPreflightNodeScriptAsksTheNodeOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := parseFixture(t, "4.23-unknown")
	c := stages.Default()
	ns := &stages.NodeScript{Script: b, Blocks: c.MapScript(b)}
	known := map[string]bool{}
	for _, s := range c {
		for _, m := range append(s.Markers(), s.Done...) {
			known[m] = true
		}
	}
	etcd, err := c.Lookup("07")
	require.NoError(t, err)
	var unnamed string
	for _, st := range ns.Script.Steps {
		if st.Stage > etcd.Number && st.Marker != "" && !st.SingleNode && !known[st.Marker] {
			unnamed = st.Marker
			break
		}
	}
	require.NotEmpty(t, unnamed, "the 4.23-unknown fixture has a later step whose marker the catalog does not name")

	for _, tc := range []struct {
		name, later, refused string
	}{
		{name: "nothing later has run"},
		{name: "a later stage of the catalog has run", later: "kube-apiserver-bootstrap.done",
			refused: "stage 08 (kube-apiserver-bootstrap) has run (kube-apiserver-bootstrap.done exists)"},
		{name: "a later step the catalog does not name has run", later: unnamed,
			refused: "(" + unnamed + " exists)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := stagestest.New(t.TempDir())
			require.NoError(t, n.FinishBefore(c, etcd.Number))
			if tc.later != "" {
				require.NoError(t, n.Touch(stages.AssetDir+"/"+tc.later))
			}
			r, _, _ := newRunner(t, n, "4.19")
			err := r.PreflightNodeScript(ctx, etcd, ns, stages.Options{})
			assert.Equal(t, 1, n.Lists(stages.AssetDir))
			assert.Empty(t, n.CallsWith("stat "), "no marker is asked about on its own")
			if tc.refused == "" {
				require.NoError(t, err)
				return
			}
			var re *stages.RefusedError
			require.ErrorAs(t, err, &re)
			assert.Contains(t, err.Error(), tc.refused)
		})
	}
}
