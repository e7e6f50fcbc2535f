package shims

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/journal"
)

// crictl's flags come before or after the arguments; what is not played
// is refused, naming the flag.
func TestParseCrictlFlags(t *testing.T) {
	t.Parallel()
	f, err := parseCrictlFlags([]string{"--tail", "20", "abc", "-f", "--timestamps"})
	require.NoError(t, err)
	assert.Equal(t, 20, f.tail)
	assert.True(t, f.follow)
	assert.True(t, f.timestamps)
	assert.Equal(t, []string{"abc"}, f.args)
	f, err = parseCrictlFlags([]string{"-a", "-o", "json", "--name=^etcd$", "-l", "-q"})
	require.NoError(t, err)
	assert.True(t, f.all && f.latest && f.quiet)
	assert.Equal(t, "json", f.output)
	assert.Equal(t, "^etcd$", f.name)
	f, _ = parseCrictlFlags(nil)
	assert.Equal(t, -1, f.tail, "all lines unless --tail")

	for _, bad := range [][]string{{"--tail", "x"}, {"--tail"}, {"--since", "1h"}, {"-o", "yaml"}} {
		_, err := parseCrictlFlags(bad)
		assert.Error(t, err, bad)
	}
}

// A crictl command that is not played says so and fails; an unknown
// container is named in the error.
func TestCrictlRefusesWhatItDoesNotPlay(t *testing.T) {
	t.Parallel()
	tl := &Tools{KubeletState: filepath.Join(t.TempDir(), "none.json")}
	var out, errb bytes.Buffer
	assert.Equal(t, 1, tl.crictlMain([]string{"exec", "abc", "sh"}, &out, &errb))
	assert.Contains(t, errb.String(), "crictl (bootlab rehearsal stand-in): `crictl exec` is not played")
	errb.Reset()
	assert.Equal(t, 1, tl.crictlMain([]string{"logs", "etcd"}, &out, &errb))
	assert.Contains(t, errb.String(), `no container "etcd"`)
	errb.Reset()
	assert.Equal(t, 0, tl.crictlMain([]string{"ps", "-a"}, &out, &errb), "no kubelet state yet: an empty list")
	assert.Contains(t, out.String(), "CONTAINER")
}

// journalctl's flags as the guide and the gather use them, short flags
// combined included.
func TestParseJournalctlFlags(t *testing.T) {
	t.Parallel()
	f, err := parseJournalctlFlags([]string{"-b", "-u", "bootkube.service", "--no-pager", "-n", "20"})
	require.NoError(t, err)
	assert.True(t, f.bootSet)
	assert.Zero(t, f.boot)
	assert.Equal(t, []string{"bootkube.service"}, f.units)
	assert.Equal(t, 20, f.lines)
	f, err = parseJournalctlFlags([]string{"--boot", "--no-pager", "--output=short", "--unit=kubelet"})
	require.NoError(t, err)
	assert.Equal(t, []string{"kubelet.service"}, f.units)
	assert.False(t, f.linesGiven, "every line unless -n")
	f, err = parseJournalctlFlags([]string{"-xeu", "kubelet"})
	require.NoError(t, err)
	assert.Equal(t, []string{"kubelet.service"}, f.units)
	assert.Equal(t, 1000, f.lines)
	f, err = parseJournalctlFlags([]string{"-b", "-1", "-f"})
	require.NoError(t, err)
	assert.Equal(t, -1, f.boot)
	assert.True(t, f.follow)
	assert.Equal(t, 10, f.lines, "-f shows the last ten first")
	for _, bad := range [][]string{{"--since", "today"}, {"-u"}, {"-o", "verbose"}, {"-b", "2"}, {"-n", "x"}} {
		_, err := parseJournalctlFlags(bad)
		assert.Error(t, err, bad)
	}
}

// journalctl prints the units' entries of this boot in the short form, the
// last N with -n, "-- No entries --" when there are none.
func TestJournalctl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tl := &Tools{JournalDir: dir}
	w := journal.NewWriter(dir, "bootkube.service", "bootkube.sh", 7)
	for _, l := range []string{"one", "two", "three"} {
		w.Print(journal.PriInfo, l)
	}
	var out, errb bytes.Buffer
	require.Equal(t, 0, tl.journalctlMain([]string{"-b", "-u", "bootkube.service", "-n", "2", "--no-pager"}, &out, &errb), errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	host, _ := os.Hostname()
	assert.Regexp(t, `^[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d `+host+` bootkube\.sh\[7\]: three$`, lines[1])
	assert.Contains(t, errb.String(), "journalctl (bootlab rehearsal stand-in)")
	out.Reset()
	require.Equal(t, 0, tl.journalctlMain([]string{"-u", "crio"}, &out, &errb))
	assert.Equal(t, "-- No entries --\n", out.String())
	out.Reset()
	require.Equal(t, 0, tl.journalctlMain([]string{"-u", "bootkube", "-o", "cat"}, &out, &errb))
	assert.Equal(t, "one\ntwo\nthree\n", out.String())
}

// bootlab-journal runs a command with its output copied to its own and
// to the unit's journal, and exits with the command's status, which
// systemd's line on the unit gives.
func TestUnitRun(t *testing.T) {
	// Not parallel: it sets the process's umask to an SSH login's.
	defer syscall.Umask(syscall.Umask(0o077))
	dir := t.TempDir()
	tl := &Tools{JournalDir: dir}
	var out, errb bytes.Buffer
	code := tl.unitRunMain([]string{"--unit", "bootkube", "--identifier", "bootkube.sh", "--", "sh", "-c", "echo out; umask >&2; echo err >&2; printf last; exit 3"}, &out, &errb)
	assert.Equal(t, 3, code)
	assert.Equal(t, "out\nlast", out.String())
	assert.Equal(t, "0022\nerr\n", errb.String(), "the command runs with systemd's default UMask")
	es, err := journal.Read(dir, journal.Query{Units: []string{"bootkube.service"}})
	require.NoError(t, err)
	var msgs []string
	for _, e := range es {
		msgs = append(msgs, e.Identifier+": "+e.Message)
	}
	assert.ElementsMatch(t, []string{"bootkube.sh: out", "bootkube.sh: 0022", "bootkube.sh: err", "bootkube.sh: last", "systemd: bootkube.service: Main process exited, code=exited, status=3/FAILURE"}, msgs)

	for _, bad := range [][]string{{"--unit", "x", "--", "true"}, {"--identifier", "x", "--", "true"}, {"--unit", "x", "--identifier", "y"}, {"--bogus", "x"}} {
		errb.Reset()
		assert.Equal(t, 2, tl.unitRunMain(bad, &out, &errb), bad)
		assert.Contains(t, errb.String(), "usage: bootlab-journal")
	}
}
