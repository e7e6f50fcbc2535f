package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/wire"
)

// A node whose last report says its agent is taking it down shows as
// rebooting (or powering off) until its next boot reports; no report, or
// a torn one after it, changes nothing.
func TestStatusShowsANodeGoingDown(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "bootstrap.log")
	boot := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	up := wire.Report{Node: "bootstrap", Boot: boot, Seq: 1}
	down := up
	down.Seq, down.Shutdown = 2, "reboot"
	next := wire.Report{Node: "bootstrap", Boot: boot.Add(time.Minute), Seq: 1}
	off := next
	off.Seq, off.Shutdown = 2, "poweroff"

	for _, tc := range []struct {
		lines [][]byte
		want  string
	}{
		{nil, ""},
		{[][]byte{up.Line()}, ""},
		{[][]byte{up.Line(), down.Line(), []byte("[    0.000000] Linux version\n"), []byte(wire.ReportPrefix + "{torn\n")}, "rebooting"},
		{[][]byte{up.Line(), down.Line(), next.Line()}, ""},
		{[][]byte{next.Line(), off.Line()}, "powering off"},
	} {
		var data []byte
		for _, l := range tc.lines {
			data = append(data, l...)
		}
		require.NoError(t, os.WriteFile(log, data, 0o600))
		assert.Equal(t, tc.want, goingDown(lastReport(context.Background(), nil, log)), "%s", data)
	}
	assert.Empty(t, goingDown(lastReport(context.Background(), nil, filepath.Join(t.TempDir(), "absent.log"))))
}
