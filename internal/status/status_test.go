package status

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlainLines(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	s := New(&b, false)
	s.Start("Creating network %s", "bootlab-demo")
	s.Start("Creating domains")
	s.End(false)
	s.End(true) // nothing running: no output
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	assert.Len(t, lines, 4)
	assert.Equal(t, " • Creating network bootlab-demo ...", lines[0])
	assert.True(t, strings.HasPrefix(lines[1], " ✓ Creating network bootlab-demo ("), lines[1])
	assert.Equal(t, " • Creating domains ...", lines[2])
	assert.True(t, strings.HasPrefix(lines[3], " ✗ Creating domains ("), lines[3])
	assert.NotContains(t, b.String(), "\x1b", "no escape codes when not a terminal")
}

func TestTerminalSpinnerEndsWithMark(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	s := New(&b, true)
	s.Start("Starting haproxy")
	s.End(true)
	out := b.String()
	assert.Contains(t, out, "\r\x1b[K ✓ Starting haproxy (")
	assert.True(t, strings.HasSuffix(out, ")\n"))
}

func TestNilAndDiscardAreSilent(t *testing.T) {
	t.Parallel()
	var s *Status
	s.Start("x")
	s.Infof("y")
	s.End(true)
	d := Discard()
	d.Start("x")
	d.End(false)
}

func TestJSONStatusLines(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	s := NewJSON(&b)
	s.Start("Creating network %s", "bootlab-x")
	s.EndDetail(true, "defined, started")
	s.Start("Creating nodes")
	s.End(false)
	s.Infof("lab %s is up", "x")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3, "one line a step, at its end, and one an info line")
	for _, l := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		_, err := time.Parse(time.RFC3339, rec["time"].(string))
		require.NoError(t, err, "RFC 3339 time")
		assert.True(t, strings.HasPrefix(l, `{"time":`), "time first, as the logger writes: %s", l)
	}
	assert.Contains(t, lines[0], `"level":"info","msg":"Creating network bootlab-x"`)
	assert.Contains(t, lines[0], `"detail":"defined, started"`)
	assert.Contains(t, lines[0], `"ok":true`)
	assert.Contains(t, lines[1], `"level":"error"`)
	assert.Contains(t, lines[1], `"ok":false`)
	assert.Contains(t, lines[2], `"msg":"lab x is up"`)
	assert.NotContains(t, b.String(), "\x1b[", "no escape codes")
}

func TestUpdateShowsProgressOnATerminalOnly(t *testing.T) {
	t.Parallel()
	var tty bytes.Buffer
	s := New(&tty, true)
	s.Start("Verifying lab x")
	s.Update("%d/%d checks pass", 42, 104)
	time.Sleep(250 * time.Millisecond)
	s.End(true)
	assert.Contains(t, tty.String(), "Verifying lab x: 42/104 checks pass")
	final := tty.String()[strings.LastIndex(tty.String(), "\r\x1b[K"):]
	assert.True(t, strings.HasPrefix(final, "\r\x1b[K ✓ Verifying lab x ("), "%q", final)
	assert.NotContains(t, final, "42/104", "the step's final line has no progress")

	var plain bytes.Buffer
	p := New(&plain, false)
	p.Start("Verifying lab x")
	p.Update("%d/%d checks pass", 42, 104)
	p.End(true)
	assert.NotContains(t, plain.String(), "42/104", "plain output keeps one line a step")
}
