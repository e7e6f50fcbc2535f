package stages_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/scripts"
	"github.com/bootlab/bootlab/stages"
	"github.com/bootlab/bootlab/stages/stagestest"
)

func TestProof(t *testing.T) {
	t.Parallel()
	c := stages.Default()
	for _, tc := range []struct {
		stage   string
		markers []string
		record  string
	}{
		{"01", []string{"openshift-manifests.done"}, ""},
		{"02", nil, ""},
		{"08", []string{"kube-apiserver-bootstrap.done"}, ""},
		{"12", []string{"mco-bootstrap.done", "cco-bootstrap.done"}, ""},
		{"13", []string{"cb-bootstrap.done"}, ""},
		// 14's Done marker is 15's .bootkube.done: its own marked step and
		// the success of wait-for-ceo stand in.
		{"14", []string{"cvo-overrides.done"}, "wait-for-ceo"},
		{"15", []string{".bootkube.done"}, ""},
	} {
		s, err := c.Lookup(tc.stage)
		require.NoError(t, err)
		markers, record := s.Proof()
		assert.Equal(t, tc.markers, markers, tc.stage)
		assert.Equal(t, tc.record, record, tc.stage)
	}
}

// The library's table of stages (scripts/lib/bootkube.sh BOOTLAB_STAGES),
// which refuses hand runs out of order, is the catalog's.
func TestLibraryStageTable(t *testing.T) {
	t.Parallel()
	data, err := fs.ReadFile(scripts.FS, "lib/bootkube.sh")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)\nBOOTLAB_STAGES=\(\n(.*?)\n\)\n`).FindSubmatch(data)
	require.NotNil(t, m, "the library has a BOOTLAB_STAGES table")
	var got []string
	for _, l := range strings.Split(string(m[1]), "\n") {
		got = append(got, strings.Trim(strings.TrimSpace(l), `"`))
	}
	var want []string
	for _, s := range stages.Default() {
		since := stages.Oldest
		for since.Less(stages.Newest) && s.SkipReason(since) != "" {
			since.Minor++
		}
		line := s.ID() + " " + s.Slug + " " + since.String()
		markers, record := s.Proof()
		for _, mk := range markers {
			line += " " + mk
		}
		if record != "" {
			line += " record:" + record
		}
		want = append(want, line)
	}
	assert.Equal(t, want, got)
}

func refused(t *testing.T, err error) *stages.RefusedError {
	t.Helper()
	var re *stages.RefusedError
	require.True(t, errors.As(err, &re), "a RefusedError: %v", err)
	return re
}

func TestCheckOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		version string
		done    int // stages before this one are finished
		extra   []string
		sel     stages.Selection
		want    string // "" when allowed
	}{
		{name: "the next stage", version: "4.19", done: 7, sel: stages.Selection{Only: []string{"07"}}},
		{name: "15 early names the first stage missing", version: "4.19", done: 13, sel: stages.Selection{Only: []string{"15"}},
			want: "stage 15 (check-api-url) needs stage 13 (cb-bootstrap) first: run bootlab stage run 13 (cb-bootstrap.done missing)"},
		{name: "14's markers without wait-for-ceo's success", version: "4.19", done: 14, extra: []string{"cvo-overrides.done"},
			sel:  stages.Selection{Only: []string{"15"}},
			want: "stage 15 (check-api-url) needs stage 14 (cvo-overrides) first: run bootlab stage run 14 (no successful wait-for-ceo in /var/log/openshift/bootkube.json)"},
		{name: "a range brings its own earlier stages", version: "4.19", done: 3, sel: stages.Selection{From: "03", To: "07"}},
		{name: "a skipped stage in the range is needed", version: "4.19", done: 3, sel: stages.Selection{From: "03", To: "07", Skip: []string{"05"}},
			want: "stage 06 (cvo-bootstrap) needs stage 05 (config-bootstrap) first"},
		{name: "02 leaves no proof and is never needed", version: "4.19", done: 2, sel: stages.Selection{Only: []string{"03"}}},
		{name: "a stage the release lacks is not needed", version: "4.18", done: 5, sel: stages.Selection{Only: []string{"05"}}},
		{name: "--all on a fresh node", version: "4.19", done: 1, sel: stages.Selection{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			node := stagestest.New(t.TempDir())
			c := stages.Default()
			require.NoError(t, node.FinishBefore(c, tc.done))
			if tc.version == "4.18" {
				// 04 does not exist: its marker never appears.
				require.NoError(t, os.Remove(filepath.Join(node.Root, "opt", "openshift", "auth-api-bootstrap.done")))
			}
			for _, m := range tc.extra {
				require.NoError(t, node.Touch(stages.AssetDir+"/"+m))
			}
			st, err := stages.ReadNodeState(context.Background(), node, c)
			require.NoError(t, err)
			sel, err := c.Select(tc.sel)
			require.NoError(t, err)
			err = c.CheckOrder(st, sel, stages.MustVersion(tc.version))
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			re := refused(t, err)
			assert.Contains(t, re.Error(), tc.want)
			assert.Contains(t, re.Error(), "nothing ran")
			assert.NotNil(t, re.Needs)
		})
	}
}

func TestCheckForce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		done int // stages before this one are finished
		sel  stages.Selection
		want string
	}{
		{name: "the last stage that ran", done: 8, sel: stages.Selection{Only: []string{"07"}}},
		{name: "a stage with every later one that ran", done: 10, sel: stages.Selection{From: "07", To: "09"}},
		{name: "12 after 14 brings back the MCS", done: 15, sel: stages.Selection{Only: []string{"12"}},
			want: "--force 12 (mco-bootstrap) refused: stage 13 (cb-bootstrap) has run since (cb-bootstrap.done) and used what 12 made; it copies the bootstrap MCO pod back"},
		{name: "01 after 03 overwrites the feature gates", done: 4, sel: stages.Selection{Only: []string{"01"}},
			want: "--force 01 (openshift-manifests) refused: stage 03 (api-bootstrap) has run since (api-bootstrap.done)"},
		{name: "13 after its success", done: 14, sel: stages.Selection{Only: []string{"13"}},
			want: "--force 13 (cb-bootstrap) refused: cb-bootstrap.done exists, so cluster-bootstrap has handed the control plane to the masters"},
		{name: "a skipped later stage that ran", done: 10, sel: stages.Selection{From: "07", To: "09", Skip: []string{"08"}},
			want: "stage 08 (kube-apiserver-bootstrap) has run since"},
		{name: "14 after 15 is safe", done: 16, sel: stages.Selection{Only: []string{"14"}}},
		{name: "02 is safe", done: 16, sel: stages.Selection{Only: []string{"02"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			node := stagestest.New(t.TempDir())
			c := stages.Default()
			require.NoError(t, node.FinishBefore(c, tc.done))
			st, err := stages.ReadNodeState(context.Background(), node, c)
			require.NoError(t, err)
			sel, err := c.Select(tc.sel)
			require.NoError(t, err)
			err = c.CheckForce(st, sel, stages.MustVersion("4.19"))
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			re := refused(t, err)
			assert.Contains(t, re.Error(), tc.want)
			assert.True(t, re.Redo, "the way back is to redo the stage from before it")
		})
	}
}

// The runner refuses before any script runs, and records nothing.
func TestRunRefusesBeforeAnythingRuns(t *testing.T) {
	t.Parallel()
	node := stagestest.New(t.TempDir())
	r, rec, _ := newRunner(t, node, "4.19")
	require.NoError(t, node.FinishBefore(r.Catalog, 13))
	sel, err := r.Catalog.Select(stages.Selection{Only: []string{"15"}})
	require.NoError(t, err)
	_, err = r.Run(context.Background(), sel, stages.Options{})
	refused(t, err)
	assert.Empty(t, node.Scripts, "no script ran")
	assert.Empty(t, rec.recs, "nothing recorded")

	require.NoError(t, node.FinishBefore(r.Catalog, 16))
	sel, err = r.Catalog.Select(stages.Selection{Only: []string{"12"}})
	require.NoError(t, err)
	_, err = r.Run(context.Background(), sel, stages.Options{Force: true})
	assert.True(t, refused(t, err).Redo)
	assert.Empty(t, node.Scripts, "no script ran")
}

// What a selection needs first, all of it, in order: what `stage run 07`
// on a rehearsal lab runs before 07, and CheckOrder then allows.
func TestPrerequisites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		version string
		done    int
		sel     stages.Selection
		want    []string
	}{
		{"07 on a fresh node needs 01 and 03 to 06 (02 leaves no proof)", "4.19", 1, stages.Selection{Only: []string{"07"}}, []string{"01", "03", "04", "05", "06"}},
		{"07 after 04 needs 05 and 06", "4.19", 5, stages.Selection{Only: []string{"07"}}, []string{"05", "06"}},
		{"the next stage needs nothing", "4.19", 7, stages.Selection{Only: []string{"07"}}, nil},
		{"a range brings its own", "4.19", 3, stages.Selection{From: "03", To: "07"}, nil},
		{"4.18 has no 04", "4.18", 1, stages.Selection{Only: []string{"06"}}, []string{"01", "03", "05"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			node := stagestest.New(t.TempDir())
			c := stages.Default()
			require.NoError(t, node.FinishBefore(c, tc.done))
			st, err := stages.ReadNodeState(context.Background(), node, c)
			require.NoError(t, err)
			sel, err := c.Select(tc.sel)
			require.NoError(t, err)
			v := stages.MustVersion(tc.version)
			pre := c.Prerequisites(st, sel, v)
			var got []string
			for _, p := range pre {
				got = append(got, p.ID())
			}
			assert.Equal(t, tc.want, got)
			assert.NoError(t, c.CheckOrder(st, append(pre, sel...), v), "the prerequisites and the selection run in order")
		})
	}
}

// One listing of the asset directory answers for every marker (a stat each
// was one SSH session per marker); without one, the markers are looked at
// one by one and a failure says why.
func TestReadNodeStateListsTheAssetDirOnce(t *testing.T) {
	c := stages.Default()
	for _, tc := range []struct {
		name      string
		setup     func(t *testing.T, n *stagestest.Node)
		wantHas   map[string]bool
		wantLists int
		wantStats int
		wantErr   string
	}{
		{name: "stages 01 to 06 done", setup: func(t *testing.T, n *stagestest.Node) { require.NoError(t, n.FinishBefore(c, 7)) },
			wantHas:   map[string]bool{"openshift-manifests.done": true, "cvo-bootstrap.done": true, "etcd-bootstrap.done": false, stages.BootkubeDone: false},
			wantLists: 1},
		{name: "no asset directory yet", setup: func(*testing.T, *stagestest.Node) {},
			wantHas:   map[string]bool{"openshift-manifests.done": false, stages.BootkubeDone: false},
			wantLists: 1, wantStats: 0}, // the listing says it is missing
		{name: "an asset directory that cannot be listed", setup: func(t *testing.T, n *stagestest.Node) {
			require.NoError(t, os.MkdirAll(filepath.Join(n.Root, "opt"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(n.Root, "opt", "openshift"), nil, 0o644))
		}, wantLists: 1, wantStats: 2, wantErr: "check marker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := stagestest.New(t.TempDir())
			tc.setup(t, n)
			st, err := stages.ReadNodeState(context.Background(), n, c)
			assert.Equal(t, tc.wantLists, n.Lists(stages.AssetDir))
			assert.Len(t, n.CallsWith("stat "), tc.wantStats)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			for m, want := range tc.wantHas {
				assert.Equal(t, want, st.Has(m), m)
			}
		})
	}
}
