package class

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/preflight"
)

func TestPlace(t *testing.T) {
	t.Parallel()
	const gib = uint64(1) << 30
	lab := preflight.Needs{MemoryBytes: 3 * gib / 2, DiskBytes: gib}
	room := func(memGiB, diskGiB float64) *preflight.Needs {
		return &preflight.Needs{MemoryBytes: uint64(memGiB * float64(gib)), DiskBytes: uint64(diskGiB * float64(gib))}
	}
	labs := func(n int, on ...int) []PlaceLab {
		out := make([]PlaceLab, n)
		for i := range out {
			out[i] = PlaceLab{Name: "l" + string(rune('a'+i)), Needs: lab, Host: -1}
			if i < len(on) {
				out[i].Host = on[i]
			}
		}
		return out
	}
	capped := func(n int) *int { return &n }
	down := errors.New("dial tcp 10.0.0.3:22: connect: connection refused")

	for _, tc := range []struct {
		name  string
		mode  Placement
		hosts []PlaceHost
		labs  []PlaceLab
		want  []int
		err   string
	}{
		{
			name:  "spread alternates over equal hosts",
			mode:  PlacementSpread,
			hosts: []PlaceHost{{Name: "a", Free: room(12, 100)}, {Name: "b", Free: room(12, 100)}},
			labs:  labs(4),
			want:  []int{0, 1, 0, 1},
		},
		{
			name:  "spread follows capacity: a host twice as large takes twice the labs",
			mode:  PlacementSpread,
			hosts: []PlaceHost{{Name: "big", Free: room(12, 100)}, {Name: "small", Free: room(6, 100)}},
			labs:  labs(6),
			want:  []int{0, 1, 0, 1, 0, 0},
		},
		{
			name:  "spread over hosts nothing measures: one each in turn",
			mode:  PlacementSpread,
			hosts: []PlaceHost{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			labs:  labs(4),
			want:  []int{0, 1, 2, 0},
		},
		{
			name:  "pack fills the first host, then the next",
			mode:  PlacementPack,
			hosts: []PlaceHost{{Name: "a", Free: room(4.5, 100)}, {Name: "b", Free: room(12, 100)}},
			labs:  labs(4),
			want:  []int{0, 0, 0, 1},
		},
		{
			name:  "maxLabs caps a host; 0 takes none",
			mode:  PlacementSpread,
			hosts: []PlaceHost{{Name: "a", MaxLabs: capped(1), Free: room(12, 100)}, {Name: "b", MaxLabs: capped(0)}, {Name: "c", Free: room(12, 100)}},
			labs:  labs(4),
			want:  []int{0, 2, 2, 2},
		},
		{
			name:  "labs already placed stay, and count against their host",
			mode:  PlacementSpread,
			hosts: []PlaceHost{{Name: "a", Free: room(12, 100)}, {Name: "b", Free: room(12, 100)}},
			labs:  labs(4, 1, 1),
			want:  []int{1, 1, 0, 0},
		},
		{
			name:  "a lab placed on a host that is down stays there; new labs avoid it",
			mode:  PlacementSpread,
			hosts: []PlaceHost{{Name: "a", Free: room(12, 100)}, {Name: "b", Down: down}},
			labs:  labs(3, -1, 1),
			want:  []int{0, 1, 0},
		},
		{
			name:  "a built lab's memory is in use already; an unbuilt placed lab's is taken",
			mode:  PlacementPack,
			hosts: []PlaceHost{{Name: "a", Free: room(3, 100)}, {Name: "b", Free: room(12, 100)}},
			labs: func() []PlaceLab {
				l := labs(3, 0, 0)
				l[0].Built = true
				return l
			}(),
			want: []int{0, 0, 0},
		},
		{
			name:  "everything placed already: nothing to decide",
			mode:  PlacementSpread,
			hosts: []PlaceHost{{Name: "a", Down: down}},
			labs:  labs(2, 0, 0),
			want:  []int{0, 0},
		},
		{
			name: "not fitting: how many fit on each host, in all, and what stops each",
			mode: PlacementSpread,
			hosts: []PlaceHost{
				{Name: "rack1", Free: room(3.5, 100)},
				{Name: "rack2", MaxLabs: capped(1), Free: room(12, 100)},
				{Name: "rack3", Down: down},
				{Name: "rack4", Free: room(12, 1.5), DiskDir: "/var/lib/libvirt/images"},
			},
			labs: labs(5),
			err:  "5 labs to place, only 4 fit: 2 on rack1 (memory: 3.5 GiB available, 1.5 GiB a lab); 1 on rack2 (maxLabs 1); 0 on rack3 (unreachable: dial tcp 10.0.0.3:22: connect: connection refused); 1 on rack4 (disk: 1.5 GiB free on /var/lib/libvirt/images, 1.0 GiB a lab); add hosts, raise maxLabs, lower learners, give the template smaller nodes, or free memory and disk (nothing was created)",
		},
		{
			name:  "not fitting beside labs already placed",
			mode:  PlacementPack,
			hosts: []PlaceHost{{Name: "rack1", MaxLabs: capped(2), Free: room(12, 100)}},
			labs:  labs(3, 0),
			err:   "2 labs to place beside the 1 already placed, only 1 fits: 1 on rack1 (maxLabs 2, 1 of the class there already); add hosts, raise maxLabs, lower learners, give the template smaller nodes, or free memory and disk (nothing was created)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Place(tc.mode, tc.hosts, tc.labs)
			if tc.err != "" {
				require.Error(t, err)
				var nf *NotFitError
				require.ErrorAs(t, err, &nf)
				assert.Equal(t, tc.err, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// Place reads nothing but its arguments: the hosts' rooms are not changed.
func TestPlaceLeavesItsArgumentsAlone(t *testing.T) {
	t.Parallel()
	free := &preflight.Needs{MemoryBytes: 4 << 30, DiskBytes: 4 << 30}
	hosts := []PlaceHost{{Name: "a", Free: free}}
	_, err := Place(PlacementSpread, hosts, []PlaceLab{{Name: "x", Needs: preflight.Needs{MemoryBytes: 1 << 30}, Host: -1}})
	require.NoError(t, err)
	assert.Equal(t, uint64(4<<30), free.MemoryBytes)
}
