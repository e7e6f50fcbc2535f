package stages_test

import (
	"io/fs"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/scripts"
	"github.com/bootlab/bootlab/stages"
)

// Every modelled release says how it is known, and only the releases whose
// bootkube.sh was read are verified: 4.20 is not silently 4.19.
func TestReleasesSayWhatWasRead(t *testing.T) {
	t.Parallel()
	rels := stages.Releases()
	require.NotEmpty(t, rels)
	assert.Equal(t, stages.Oldest, rels[0].Version)
	assert.Equal(t, stages.Newest, rels[len(rels)-1].Version)
	for i, r := range rels {
		assert.NotEmpty(t, r.Source, "%s has its evidence", r.Version)
		if i > 0 {
			assert.Equal(t, stages.Version{Major: 4, Minor: rels[i-1].Version.Minor + 1}, r.Version, "no release is skipped")
		}
		wantVerified := !stages.MustVersion("4.19").Less(r.Version)
		assert.Equal(t, wantVerified, r.Verified, "%s", r.Version)
	}
	r420, ok := stages.ReleaseOf(stages.MustVersion("4.20"))
	require.True(t, ok)
	assert.Equal(t, "inferred", r420.Word())
	assert.Contains(t, r420.Source, "modelled as 4.19")
	assert.Contains(t, r420.Source, "not read")
	_, ok = stages.ReleaseOf(stages.MustVersion("4.23"))
	assert.False(t, ok, "4.23 is not modelled")
	assert.Equal(t, "verified 4.16, 4.17, 4.18, 4.19; inferred 4.20, 4.21, 4.22", stages.VerifiedReleases())
}

// Every gate names its evidence, none claims to be read in a release that
// was not, and every step that arrived in a release has its gate.
func TestGatesCarryEvidence(t *testing.T) {
	t.Parallel()
	all := append([]stages.Gate{}, stages.CommonGates()...)
	for _, s := range stages.Default() {
		for _, g := range s.Gates {
			all = append(all, g)
			assert.NotEmpty(t, g.What, "stage %s", s.ID())
			rel, ok := stages.ReleaseOf(g.Since)
			require.True(t, ok, "stage %s gate %q: %s is modelled", s.ID(), g.What, g.Since)
			if !rel.Verified {
				assert.False(t, g.Verified, "stage %s gate %q: %s was not read, so the gate cannot be verified", s.ID(), g.What, g.Since)
			}
		}
		for _, st := range s.Steps {
			if st.Since.IsZero() {
				continue
			}
			found := false
			for _, g := range s.Gates {
				found = found || g.Since == st.Since
			}
			assert.True(t, found, "stage %s: step %s (since %s) has a gate", s.ID(), st.Name, st.Since)
		}
	}
	for _, g := range all {
		assert.NotEmpty(t, g.Source, "gate %q has its evidence", g.What)
	}
}

// Each `version_at_least X` in a stage script is a gate of that stage, and
// each one in the shared library is a gate somewhere: the data explain and
// list show cannot drift from what the scripts do.
func TestScriptGatesAreInTheCatalog(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`version_at_least ([0-9]+\.[0-9]+)`)
	has := func(gates []stages.Gate, v stages.Version) bool {
		for _, g := range gates {
			if g.Since == v {
				return true
			}
		}
		return false
	}
	var everyGate []stages.Gate
	everyGate = append(everyGate, stages.CommonGates()...)
	for _, s := range stages.Default() {
		everyGate = append(everyGate, s.Gates...)
		text, err := fs.ReadFile(scripts.FS, s.ScriptFile())
		require.NoError(t, err)
		for _, m := range re.FindAllStringSubmatch(string(text), -1) {
			assert.True(t, has(s.Gates, stages.MustVersion(m[1])), "%s gates on %s: stage %s needs a gate since %s", s.ScriptFile(), m[1], s.ID(), m[1])
		}
	}
	lib, err := fs.ReadFile(scripts.FS, "lib/bootkube.sh")
	require.NoError(t, err)
	matches := re.FindAllStringSubmatch(string(lib), -1)
	require.NotEmpty(t, matches)
	for _, m := range matches {
		assert.True(t, has(everyGate, stages.MustVersion(m[1])), "lib/bootkube.sh gates on %s", m[1])
	}
}

func TestGateReleases(t *testing.T) {
	t.Parallel()
	v := stages.MustVersion
	for _, tc := range []struct {
		gate stages.Gate
		want string
		in   []string
		out  []string
	}{
		{stages.Gate{Since: v("4.18")}, "4.18+", []string{"4.18", "4.22"}, []string{"4.17"}},
		{stages.Gate{Since: v("4.16"), Until: v("4.17")}, "4.16-4.17", []string{"4.16", "4.17"}, []string{"4.18"}},
		{stages.Gate{Since: v("4.18"), Until: v("4.18")}, "4.18", []string{"4.18"}, []string{"4.17", "4.19"}},
	} {
		assert.Equal(t, tc.want, tc.gate.Releases())
		for _, r := range tc.in {
			assert.True(t, tc.gate.In(v(r)), "%s in %s", r, tc.want)
		}
		for _, r := range tc.out {
			assert.False(t, tc.gate.In(v(r)), "%s not in %s", r, tc.want)
		}
	}
	s13, err := stages.Default().Lookup("13")
	require.NoError(t, err)
	for _, tc := range []struct{ release, want string }{
		{"4.16", "2 master Nodes"}, {"4.17", "2 master Nodes"}, {"4.18", "unless single-node, waits up to 30 minutes"},
		{"4.19", "HA control plane"}, {"4.22", "HA control plane"},
	} {
		gates := s13.GatesFor(v(tc.release))
		require.Len(t, gates, 1, "one cluster-bootstrap behaviour in %s", tc.release)
		assert.Contains(t, gates[0].What, tc.want, tc.release)
		assert.True(t, gates[0].Verified, "cluster-bootstrap's branches were read")
	}
}
