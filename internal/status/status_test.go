package status

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPlainLines(t *testing.T) {
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
	var b bytes.Buffer
	s := New(&b, true)
	s.Start("Starting haproxy")
	s.End(true)
	out := b.String()
	assert.Contains(t, out, "\r\x1b[K ✓ Starting haproxy (")
	assert.True(t, strings.HasSuffix(out, ")\n"))
}

func TestNilAndDiscardAreSilent(t *testing.T) {
	var s *Status
	s.Start("x")
	s.Infof("y")
	s.End(true)
	d := Discard()
	d.Start("x")
	d.End(false)
}
