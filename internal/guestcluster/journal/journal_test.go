package journal

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testWriter(dir, unit, ident string, at *time.Time) *Writer {
	w := NewWriter(dir, unit, ident, 42).WithClock(func() time.Time { *at = at.Add(time.Second); return *at })
	w.host, w.boot = "bootstrap", "b1"
	return w
}

// Entries come back by unit and boot, oldest first across units, in
// journalctl's short form; a line that is no entry is skipped.
func TestWriteAndRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := time.Date(2025, 5, 14, 10, 29, 50, 0, time.Local)
	bk := testWriter(dir, "bootkube.service", "bootkube.sh", &at)
	kl := testWriter(dir, "kubelet.service", "kubenswrapper", &at)
	bk.Print(PriInfo, "Starting etcd-bootstrap\nstill starting")
	kl.Print(PriWarning, "pod started")
	old := testWriter(dir, "bootkube.service", "bootkube.sh", &at)
	old.boot = "b0"
	old.Print(PriInfo, "from the boot before")
	f, err := os.OpenFile(FilePath(dir, "bootkube.service"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = f.WriteString("not json\n")
	require.NoError(t, f.Close())

	es, err := Read(dir, Query{Units: []string{"bootkube"}, Boot: "b1"})
	require.NoError(t, err)
	require.Len(t, es, 2)
	var b bytes.Buffer
	for _, e := range es {
		Short(&b, e)
	}
	assert.Equal(t, "May 14 10:29:51 bootstrap bootkube.sh[42]: Starting etcd-bootstrap\nMay 14 10:29:52 bootstrap bootkube.sh[42]: still starting\n", b.String())

	all, err := Read(dir, Query{})
	require.NoError(t, err)
	require.Len(t, all, 4)
	assert.Equal(t, "pod started", all[2].Message, "ordered by time across units")
	assert.Equal(t, "kubelet.service", all[2].Unit)
	assert.Equal(t, "4", all[2].Priority)

	none, err := Read(dir, Query{Units: []string{"crio.service"}})
	require.NoError(t, err)
	assert.Empty(t, none, "a unit that never wrote has no entries")
}

// A stream cuts its input at newlines, as journald reads a unit's output;
// Flush writes the rest.
func TestStream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := time.Date(2025, 5, 14, 10, 0, 0, 0, time.UTC)
	s := testWriter(dir, "bootkube.service", "bootkube.sh", &at).Stream(PriInfo)
	_, _ = s.Write([]byte("one\ntw"))
	_, _ = s.Write([]byte("o\nthree"))
	es, _ := Read(dir, Query{})
	assert.Len(t, es, 2)
	s.Flush()
	es, _ = Read(dir, Query{})
	require.Len(t, es, 3)
	assert.Equal(t, []string{"one", "two", "three"}, []string{es[0].Message, es[1].Message, es[2].Message})
}

// Tee writes a logger's records to the journal in klog's form and still
// to the logger it wraps.
func TestTee(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := time.Date(2025, 5, 14, 10, 0, 0, 0, time.UTC)
	var next bytes.Buffer
	log := Tee(slog.New(slog.NewTextHandler(&next, nil)), testWriter(dir, "kubelet.service", "kubenswrapper", &at))
	log.With("node", "bootstrap").Warn("kubelet stand-in: container exited", "pod", "openshift-etcd/etcd", "code", 1)
	es, err := Read(dir, Query{Units: []string{"kubelet"}})
	require.NoError(t, err)
	require.Len(t, es, 1)
	assert.Regexp(t, `^W\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ stand-in\] "kubelet stand-in: container exited" node="bootstrap" pod="openshift-etcd/etcd" code=1$`, es[0].Message)
	assert.Equal(t, "4", es[0].Priority)
	assert.Contains(t, next.String(), "container exited")
}

func TestUnitName(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "kubelet.service", UnitName("kubelet"))
	assert.Equal(t, "kubelet.service", UnitName("kubelet.service"))
	assert.Equal(t, "var-lib.mount", UnitName("var-lib.mount"))
}

// The journal is readable by every user whatever the writer's umask (the
// agent's is 077): core reads it without sudo.
func TestJournalIsReadable(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "log", "bootlab", "journal")
	NewWriter(dir, "kubelet.service", "kubelet", 1).Print(PriInfo, "x")
	for _, p := range []string{filepath.Dir(dir), dir} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), st.Mode().Perm(), p)
	}
	st, err := os.Stat(FilePath(dir, "kubelet.service"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
}

// A journal that cannot be written costs the entry, not the caller.
func TestUnwritableJournal(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	w := NewWriter(filepath.Join(file, "journal"), "kubelet.service", "kubenswrapper", 1)
	w.Print(PriInfo, "lost")
	var nilWriter *Writer
	nilWriter.Print(PriInfo, "nowhere")
	_, err := Read(filepath.Join(file, "journal"), Query{Units: []string{"kubelet"}})
	assert.True(t, err == nil || strings.Contains(err.Error(), "not a directory"))
}
