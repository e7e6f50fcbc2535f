package diagnose

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Every form of time the bundle's logs start their lines with is read,
// UTC; a line without one, or with one out of range, has none.
func TestLineTime(t *testing.T) {
	t.Parallel()
	at := func(mo, d, h, mi, s, ns int) time.Time {
		return time.Date(2025, time.Month(mo), d, h, mi, s, ns, time.UTC)
	}
	for line, want := range map[string]time.Time{
		"May 14 10:23:45 bootstrap bootkube.sh[2201]: x":                at(5, 14, 10, 23, 45, 0),
		"May 04 10:23:45.123456 bootstrap kubelet[1]: x":                at(5, 4, 10, 23, 45, 123456000),
		"Jun  4 01:02:03 master-0 crio[9]: x":                           at(6, 4, 1, 2, 3, 0),
		"Feb 14 10:23:45 b x":                                           at(2, 14, 10, 23, 45, 0),
		"2025-05-14T10:23:45.5+02:00 bootstrap bootkube.sh: x":          at(5, 14, 8, 23, 45, 500000000),
		"2025-05-14 10:23:45 something":                                 at(5, 14, 10, 23, 45, 0),
		"I0514 10:23:45.000001       1 server.go:150] Version":          at(5, 14, 10, 23, 45, 1000),
		"F0514 10:29:51.000000       1 x.go:1] Unable":                  at(5, 14, 10, 29, 51, 0),
		`{"level":"info","ts":"2025-05-14T10:07:00.000000Z","msg":"x"}`: at(5, 14, 10, 7, 0, 0),
		"Error: unhealthy cluster":                                      {},
		"Feb 30 25:61:61 y":                                             {},
		"May 99 10:00:00 x":                                             {},
		"Mayday 14 10:00:00 x":                                          {},
		"-- No entries --":                                              {},
		"   continuation of a line":                                     {},
		"":                                                              {},
	} {
		assert.Equal(t, want, lineTime(line, 2025), "%q", line)
	}
}
