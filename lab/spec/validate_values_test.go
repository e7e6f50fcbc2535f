package spec

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Sizes, counts, bridge names and networks out of any sane range are field
// errors, never an overflow, a panic or a lab the host cannot make.
func TestValidateRefusesValuesOutOfRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(s *Spec)
		field string
		want  string
	}{
		{"huge memory", func(s *Spec) { s.Nodes[1].MemoryMiB = math.MaxInt64 }, "nodes[1].memoryMiB", "9223372036854775807 MiB is more than any lab host has: use at most 1048576 (1 TiB)"},
		{"negative memory", func(s *Spec) { s.Nodes[1].MemoryMiB = -1 }, "nodes[1].memoryMiB", "-1 MiB is below the probe profile's floor"},
		{"huge disk", func(s *Spec) { s.Nodes[0].DiskGiB = math.MaxInt64 }, "nodes[0].diskGiB", "is more than a lab disk needs: use at most 16384 (16 TiB)"},
		{"empty bridge", func(s *Spec) { s.Network.Bridge = "  " }, "network.bridge", "is empty: Linux names a bridge with 1-15 letters"},
		{"long bridge", func(s *Spec) { s.Network.Bridge = "bootlab-far-too-long" }, "network.bridge", `"bootlab-far-too-long" is 20 bytes, more than 15`},
		{"bridge with slash", func(s *Spec) { s.Network.Bridge = "br/0" }, "network.bridge", `"br/0" holds a character Linux or bootlab refuses`},
		{"bridge with colon", func(s *Spec) { s.Network.Bridge = "br:0" }, "network.bridge", `"br:0" holds a character`},
		{"bridge with space", func(s *Spec) { s.Network.Bridge = "br 0" }, "network.bridge", `"br 0" holds a character`},
		{"dot bridge", func(s *Spec) { s.Network.Bridge = "." }, "network.bridge", `"." is not a name`},
		{"dot-dot bridge", func(s *Spec) { s.Network.Bridge = ".." }, "network.bridge", `".." is not a name`},
		{"a /8 network", func(s *Spec) { s.Network.CIDR = "10.0.0.0/8" }, "network.cidr", `"10.0.0.0/8" is too large for a lab network: use a /16 to /27`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Spec{Name: "demo"}
			s.Defaults()
			tc.edit(s)
			err := s.Validate()
			var ve *ValidationError
			if !assert.ErrorAs(t, err, &ve) {
				return
			}
			i := indexOf(ve.Errs, tc.field)
			if assert.GreaterOrEqual(t, i, 0, "no error for %s in %v", tc.field, ve.Errs) {
				assert.Contains(t, ve.Errs[i].Msg, tc.want)
			}
		})
	}
}

// Counts so large that their sum wraps around are refused, not made
// (Defaults would otherwise loop appending nodes until memory runs out).
func TestHugeTopologyCountsDoNotWrapAround(t *testing.T) {
	t.Parallel()
	for _, topo := range []Topology{{Masters: math.MaxInt, Workers: 1}, {Masters: 3, Workers: math.MaxInt}, {Masters: math.MaxInt, Workers: math.MaxInt}} {
		s := &Spec{Name: "demo", Topology: topo, mastersGiven: true}
		s.Defaults()
		assert.Empty(t, s.Nodes)
		assert.ErrorContains(t, s.Validate(), "a lab holds at most 250 nodes in all")
	}
}

// The lab networks every default and fixture uses fit the range.
func TestNetworkPrefixRangeKeepsTheDefaults(t *testing.T) {
	t.Parallel()
	for _, cidr := range []string{"192.168.126.0/24", "10.231.0.0/16", "192.168.126.0/27"} {
		s := &Spec{Name: "demo", Network: Network{CIDR: cidr}}
		s.Defaults()
		assert.NoError(t, s.Validate(), cidr)
	}
}

func indexOf(errs []FieldError, field string) int {
	for i, e := range errs {
		if e.Field == field {
			return i
		}
	}
	return -1
}
