package stages_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/stages"
)

// fixtureDir is testdata/bootkube/<release>/usr/local/bin.
func fixtureDir(release string) string {
	return filepath.Join("..", "testdata", "bootkube", release, "usr", "local", "bin")
}

// parseFixture parses a release's bootkube.sh with the helpers beside it
// and the common ones.
func parseFixture(t *testing.T, release string) *stages.BootkubeScript {
	t.Helper()
	dir := fixtureDir(release)
	data, err := os.ReadFile(filepath.Join(dir, "bootkube.sh"))
	require.NoError(t, err)
	helpers := map[string][]byte{}
	for _, d := range []string{fixtureDir("common"), dir} {
		entries, err := os.ReadDir(d)
		require.NoError(t, err)
		for _, e := range entries {
			if e.Name() == "bootkube.sh" {
				continue
			}
			h, err := os.ReadFile(filepath.Join(d, e.Name()))
			require.NoError(t, err)
			helpers["/usr/local/bin/"+e.Name()] = h
		}
	}
	b, err := stages.ParseBootkube(release+"/bootkube.sh", data, helpers)
	require.NoError(t, err)
	return b
}

// fixtureReleases are the releases under testdata/bootkube.
var fixtureReleases = []string{"4.16", "4.19", "4.21", "4.22", "4.23-unknown"}

// scriptShapes are the fixture releases whose bootkube.sh have steps of
// their own (TestMapScriptPerRelease maps each): 4.21's script has 4.19's
// steps and markers, with other lines inside them (podman's log driver, the
// image references), which the map test and TestSandboxVersionGating
// check, and TestScriptShapesCoverEveryFixture keeps this list true. Running its node script in a sandbox again, stage by stage, would
// prove nothing 4.19's does not, for seconds of bash per test.
var scriptShapes = []string{"4.16", "4.19", "4.22", "4.23-unknown"}

// mapLine prints one stage of a map: "07 etcd-bootstrap[etcd-bootstrap.done] konnectivity-certs[...]+new".
func mapLines(blocks []stages.StageBlock) []string {
	var out []string
	for _, blk := range blocks {
		parts := []string{blk.Stage.ID()}
		for _, st := range blk.Steps {
			p := st.Name + "[" + st.Marker + "]"
			if st.Guard != "" {
				p += "?" + st.Guard
			}
			if st.New {
				p += "+new"
			}
			if st.SingleNode {
				p += "+sno"
			}
			parts = append(parts, p)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func TestMapScriptPerRelease(t *testing.T) {
	t.Parallel()
	common := func(auth, konnectivity string, extra11, extra12 string, first string) []string {
		return []string{
			"01 " + first + "openshift-manifests[openshift-manifests.done]",
			"02",
			"03 api-bootstrap[api-bootstrap.done]",
			"04" + auth,
			"05 config-bootstrap[config-bootstrap.done]",
			"06 cvo-bootstrap[cvo-bootstrap.done]",
			"07 etcd-bootstrap[etcd-bootstrap.done]",
			"08" + konnectivity + " kube-apiserver-bootstrap[kube-apiserver-bootstrap.done]",
			"09 kube-controller-manager-bootstrap[kube-controller-manager-bootstrap.done]",
			"10 kube-scheduler-bootstrap[kube-scheduler-bootstrap.done]",
			"11 ingress-operator-bootstrap[ingress-operator-bootstrap.done]" + extra11 + " node-tuning-bootstrap[node-tuning-bootstrap.done] cmdbootline-nto-bootstrap[cmdbootline-nto-bootstrap.done]+sno",
			"12 mco-bootstrap[mco-bootstrap.done] resolve-api-url[api-dns-resolved.done] resolve-api-int-url[api-int-dns-resolved.done] cco-bootstrap[cco-bootstrap.done]" + extra12,
			"13 wait-for-etcd[]?stop-etcd.done cb-bootstrap[cb-bootstrap.done]",
			"14" + map[bool]string{true: " konnectivity-cleanup[konnectivity-cleanup.done]+new"}[konnectivity != ""] + " cvo-overrides[cvo-overrides.done] wait-for-ceo[]",
			"15 check-api-url[api-dns-check.done] check-api-int-url[api-int-dns-check.done]",
		}
	}
	auth := " auth-api-bootstrap[auth-api-bootstrap.done]"
	konn := " konnectivity-certs[konnectivity-certs.done]+new konnectivity-server-bootstrap[konnectivity-server-bootstrap.done]+new konnectivity-agent-manifest[konnectivity-agent-manifest.done]+new"
	for release, want := range map[string][]string{
		"4.16":         common("", "", "", "", ""),
		"4.19":         common(auth, "", "", "", ""),
		"4.21":         common(auth, "", "", "", ""),
		"4.22":         common(auth, konn, "", "", ""),
		"4.23-unknown": common(auth, konn, " dns-operator-bootstrap[dns-operator-bootstrap.done]+new", " insights-bootstrap[insights-bootstrap.done]+new", "prelude-check[prelude-check.done]+new "),
	} {
		t.Run(release, func(t *testing.T) {
			t.Parallel()
			b := parseFixture(t, release)
			c := stages.Default()
			// A step the catalog learns later is no longer new.
			for i, l := range want {
				for _, f := range strings.Fields(l)[1:] {
					if name, _, ok := strings.Cut(f, "["); ok && strings.HasSuffix(f, "+new") && c.StageOfStep(name) != nil {
						want[i] = strings.Replace(want[i], f, strings.TrimSuffix(f, "+new"), 1)
					}
				}
			}
			assert.Equal(t, want, mapLines(c.MapScript(b)))
		})
	}
}

func TestMapScriptLinesAndFiles(t *testing.T) {
	t.Parallel()
	b := parseFixture(t, "4.22")
	stages.Default().MapScript(b)
	lines := strings.Split(string(b.Data), "\n")
	for _, st := range b.Steps {
		require.Greater(t, st.Line, 0, st.Name)
		l := lines[st.Line-1]
		switch {
		case strings.HasPrefix(st.Name, "konnectivity-"):
			assert.Equal(t, "konnectivity.sh", st.File, st.Name)
			assert.Regexp(t, `^konnectivity_(setup|manifests|cleanup)$`, strings.TrimSpace(l), st.Name)
		case st.Name == "wait-for-ceo":
			assert.Contains(t, l, `record_service_stage_start "wait-for-ceo"`)
		default:
			assert.Contains(t, l, "if [ ! -f ", "%s starts at its guard, line %d", st.Name, st.Line)
		}
	}
}

func TestParseBootkubeRejectsOtherScripts(t *testing.T) {
	t.Parallel()
	_, err := stages.ParseBootkube("kubelet.sh", []byte("#!/bin/bash\nexec kubelet --config=/etc/kubernetes/kubelet.conf\n"), nil)
	assert.ErrorContains(t, err, "kubelet.sh: no bootkube steps found")
}

func TestCompareStepsWithCatalog(t *testing.T) {
	t.Parallel()
	c := stages.Default()
	assert.Empty(t, c.CompareSteps(parseFixture(t, "4.16"), stages.MustVersion("4.16")))
	assert.Empty(t, c.CompareSteps(parseFixture(t, "4.19"), stages.MustVersion("4.19")))
	diff := c.CompareSteps(parseFixture(t, "4.16"), stages.MustVersion("4.19"))
	assert.Contains(t, diff, "only in bootlab's 4.19 catalog: auth-api-bootstrap[auth-api-bootstrap.done]")
	diff = c.CompareSteps(parseFixture(t, "4.23-unknown"), stages.MustVersion("4.20"))
	assert.Contains(t, diff, "only in bootkube.sh: prelude-check[prelude-check.done]")
}

// A catalog step renamed or moved would break the replay's stage map: the
// fixtures of every modelled release must agree with the catalog.
func TestFixturesAgreeWithCatalog(t *testing.T) {
	t.Parallel()
	c := stages.Default()
	compared := 0
	for _, r := range fixtureReleases {
		v := stages.MustVersion(strings.TrimSuffix(r, "-unknown"))
		if v.CheckSupported() != nil {
			continue
		}
		compared++
		assert.Empty(t, c.CompareSteps(parseFixture(t, r), v), "fixture %s against the catalog", r)
	}
	assert.GreaterOrEqual(t, compared, 2)
}

// Shapes of older and hand-edited scripts: guards without records, markers
// with their directory, [[ ]] tests, one-line ifs, records named in comments.
func TestParseBootkubeShapes(t *testing.T) {
	t.Parallel()
	script := `#!/usr/bin/env bash
. /usr/local/bin/release-image.sh # the payload
# record_service_stage_start "not-a-step" in a comment
if [ ! -f openshift-manifests.done ]; then cp openshift/* manifests/; touch openshift-manifests.done; fi
if [[ ! -f "/opt/openshift/cvo-bootstrap.done" ]]
then
	echo "Rendering Cluster Version Operator Manifests..."
	touch /opt/openshift/cvo-bootstrap.done
fi
if [ ! -f mystery.done ]
then
	echo "a guard whose block writes no marker names no step"
fi
wait_for_it() {
	record_service_stage_start "wait-for-it"
	record_service_stage_success
}
if [ -f something ]; then wait_for_it; fi
`
	b, err := stages.ParseBootkube("old.sh", []byte(script), nil)
	require.NoError(t, err)
	var got []string
	for _, st := range b.Steps {
		got = append(got, st.Name+"["+st.Marker+"]@"+strconv.Itoa(st.Line))
	}
	assert.Equal(t, []string{"openshift-manifests[openshift-manifests.done]@4", "cvo-bootstrap[cvo-bootstrap.done]@5", "wait-for-it[]@18"}, got)
	assert.Equal(t, []string{"/usr/local/bin/release-image.sh"}, b.Sources)

	ns := &stages.NodeScript{Script: b, Blocks: stages.Default().MapScript(b)}
	s, err := stages.Default().Lookup("01")
	require.NoError(t, err)
	replay, err := ns.BuildReplay(s)
	require.NoError(t, err)
	assert.Contains(t, string(replay), ". /usr/local/bin/release-image.sh; bootlab_stop_hook # the payload\n")
	assert.Contains(t, string(replay), "BOOTLAB_STOP_BEFORE=' cvo-bootstrap wait-for-it '", "wait-for-it is new: it joins stage 06 of cvo-bootstrap")
}

// A function defined on the last line of a helper has no body: calling it
// is no step, not a slice-bounds panic (found by FuzzParseBootkube).
func TestParseBootkubeFunctionOnLastLine(t *testing.T) {
	t.Parallel()
	b, err := stages.ParseBootkube("bootkube.sh", []byte("copy_static_resources_fs_for [ ! -f 0 ]"), map[string][]byte{"/usr/local/bin/h.sh": []byte("copy_static_resources_fs_for()")})
	assert.Nil(t, b)
	assert.ErrorContains(t, err, "no bootkube steps found")
}

// A fixture release left out of scriptShapes maps, stage by stage, like
// one in it: the sandbox replays skip only releases whose steps they
// already run.
func TestScriptShapesCoverEveryFixture(t *testing.T) {
	t.Parallel()
	c := stages.Default()
	shapes := map[string]string{}
	for _, r := range scriptShapes {
		shapes[strings.Join(mapLines(c.MapScript(parseFixture(t, r))), "\n")] = r
	}
	for _, r := range fixtureReleases {
		_, ok := shapes[strings.Join(mapLines(c.MapScript(parseFixture(t, r))), "\n")]
		assert.True(t, ok, "fixture %s has steps no release of scriptShapes has: add it to scriptShapes", r)
	}
}
