package class

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/preflight"
	"github.com/bootlab/bootlab/lab/spec"
)

// scaleHosts are the classroom server the paper sizes for: 64 GiB, of which
// 60 GiB is available to labs (the host's own use and page cache take
// the rest), 2 TB of disk for pools, and one twice its size for the real
// lab that does not fit on it.
var scaleHosts = []struct {
	name      string
	mem, disk uint64
}{
	{"64 GiB", 60 << 30, 2 << 40},
	{"256 GiB", 250 << 30, 4 << 40},
}

// scaleProfiles are the labs of a workshop, at the sizes preflight counts
// (spec defaults; the rehearsal's bootstrap and masters as measured with
// the real control plane, docs/rehearsal-lab.md).
var scaleProfiles = []struct {
	name string
	spec string
}{
	{"probe (1 bootstrap, 3 masters, 2 workers)", "profile: probe\ntopology: {masters: 3, workers: 2}\n"},
	{"rehearsal (1 bootstrap, 3 masters)", "profile: probe\ntopology: {masters: 3, workers: 0}\nopenshift: {manualBootstrap: true}\n"},
	{"openshift (1 bootstrap, 3 masters, 2 workers)", "profile: openshift\ntopology: {masters: 3, workers: 2}\nopenshift: {pullSecretFile: /dev/null}\n"},
}

// hostsNeeded is the fewest hosts of room free Place puts n labs of
// needs on, and how many labs one holds.
func hostsNeeded(t *testing.T, n int, needs preflight.Needs, free preflight.Needs) (int, int) {
	t.Helper()
	labs := make([]PlaceLab, n)
	for i := range labs {
		labs[i] = PlaceLab{Name: fmt.Sprint(i), Needs: needs, Host: -1}
	}
	for h := 1; h <= 1000; h++ {
		hosts := make([]PlaceHost, h)
		for i := range hosts {
			f := free
			hosts[i] = PlaceHost{Name: fmt.Sprint(i), Free: &f}
		}
		if _, err := Place(PlacementSpread, hosts, labs); err == nil {
			per := room(hosts[0], &free, 0, needs)
			return h, per
		}
	}
	return 0, 0
}

// TestScaleOnPaper is docs/class.md's table of the hosts a workshop
// needs: for 12, 30 and 100 learners and each profile, what Place asks
// of classroom servers, from what each lab needs (preflight.LabNeeds).
// `go test ./lab/class -run TestScaleOnPaper -update` rewrites it.
func TestScaleOnPaper(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	fmt.Fprintf(&b, "| Lab | Memory, disk a lab | Labs a host | 12 learners | 30 learners | 100 learners |\n|---|---|---|---|---|---|\n")
	for _, p := range scaleProfiles {
		s, err := spec.Parse([]byte("name: scale\n"+p.spec), "scale.yaml")
		require.NoError(t, err)
		s.Defaults()
		needs := preflight.LabNeeds(s)
		for _, h := range scaleHosts {
			free := preflight.Needs{MemoryBytes: h.mem, DiskBytes: h.disk}
			if needs.MemoryBytes > free.MemoryBytes {
				continue
			}
			var cells []string
			per := 0
			for _, n := range []int{12, 30, 100} {
				hosts, p := hostsNeeded(t, n, needs, free)
				per = p
				cells = append(cells, plural(hosts, "host"))
			}
			fmt.Fprintf(&b, "| %s | %s, %s | %d on %s | %s |\n", p.name, preflight.HumanBytes(needs.MemoryBytes), preflight.HumanBytes(needs.DiskBytes), per, h.name, strings.Join(cells, " | "))
			break
		}
	}
	testutil.Golden(t, "../../testdata/classes/scale.golden", []byte(b.String()))
}
