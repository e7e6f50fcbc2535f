package wire

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseConsole(t *testing.T) {
	t.Parallel()
	boot := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r1 := &Report{Node: "master-0", MAC: "m", Seq: 1, Boot: boot, Checks: []Check{{Name: "dhcp", Pending: true}}}
	r2 := &Report{Node: "master-0", MAC: "m", Seq: 2, Boot: boot, Checks: []Check{{Name: "dhcp", OK: true, Detail: "lease"}}}
	torn := string(r2.Line())[:40]
	log := "[    0.000000] Linux version 6.1\r\n" + string(r1.Line()) + "noise\n" + string(r2.Line()) +
		"[    3.1] random: crng init done\n" + torn + "\n"
	got, err := ParseConsole(strings.NewReader(log))
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, 2, got.Seq)
	assert.True(t, got.Complete())
	assert.Empty(t, got.Failed())

	none, err := ParseConsole(strings.NewReader("just kernel messages\n"))
	require.NoError(t, err)
	assert.Nil(t, none)

	// a later boot (new Boot time) wins even with a lower Seq
	r3 := &Report{Node: "master-0", MAC: "m", Seq: 1, Boot: boot.Add(time.Minute), Checks: []Check{{Name: "dhcp", OK: false, Detail: "no lease"}}}
	got, err = ParseConsole(strings.NewReader(log + string(r3.Line())))
	require.NoError(t, err)
	assert.Equal(t, 1, got.Seq)
	assert.Len(t, got.Failed(), 1)
	assert.False(t, r1.Complete())
}

func TestReadableConsole(t *testing.T) {
	t.Parallel()
	rep := &Report{Node: "master-0", Role: "master", MAC: "52:54:00:00:00:01", Seq: 3, UptimeMS: 12400, Checks: []Check{
		{Name: "dhcp", OK: true, Detail: "lease 10.0.0.11"},
		{Name: "ignition-fetch", Pending: true, Detail: "attempt 2: connection refused"},
		{Name: "dns api.ocp.lab.local", Detail: "no such host"},
	}}
	var out bytes.Buffer
	w := &ReadableConsole{W: &out}
	line := string(rep.Line())
	// Written in pieces, as a followed file arrives.
	for _, part := range []string{"[    1.2] kernel line\n", line[:20], line[20:], "bootlab-probe msg=\"serving\"\n"} {
		_, err := w.Write([]byte(part))
		require.NoError(t, err)
	}
	got := out.String()
	assert.Contains(t, got, "[    1.2] kernel line\n")
	assert.Contains(t, got, "── probe report #3 from master-0 (master), 12s after boot: 1/3 checks ok, 1 pending\n")
	assert.Contains(t, got, "   ✓ dhcp                     lease 10.0.0.11\n")
	assert.Contains(t, got, "   … ignition-fetch           attempt 2: connection refused\n")
	assert.Contains(t, got, "   ✗ dns api.ocp.lab.local    no such host\n")
	assert.NotContains(t, got, ReportPrefix, "no raw JSON line")
	assert.True(t, strings.HasSuffix(got, "bootlab-probe msg=\"serving\"\n"))
}
