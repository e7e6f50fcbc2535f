package userfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every kind of path a user may give by mistake is refused at once, with
// what it is and what to give instead; a FIFO without a writer must not
// block (today's hang) and /dev/zero must not be read to the end.
func TestReadRefusesSpecialAndLargeFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, make([]byte, 2048), 0o600))
	ok := filepath.Join(dir, "ok")
	require.NoError(t, os.WriteFile(ok, []byte("name: a\n"), 0o600))

	for _, tc := range []struct {
		path, want string
		notExist   bool
	}{
		{path: fifo, want: "is a FIFO (named pipe), not a regular file: give the path of a regular file"},
		{path: "/dev/zero", want: "is a character device, not a regular file"},
		{path: dir, want: "is a directory, not a regular file"},
		{path: big, want: "is larger than 1 KiB"},
		{path: filepath.Join(dir, "missing"), want: "not found: give the path of an existing file", notExist: true},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			start := time.Now()
			_, err := Read(tc.path, 1024)
			require.Error(t, err)
			assert.Less(t, time.Since(start), time.Second)
			var fe *Error
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.path, fe.Path)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, tc.notExist, fe.NotExist)
		})
	}
	data, err := Read(ok, 1024)
	require.NoError(t, err)
	assert.Equal(t, "name: a\n", string(data))
}

// An image may be large but must be a regular file; the descriptor
// returned is the file checked, in blocking mode again.
func TestOpenKeepsLargeFilesAndRefusesDevices(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "disk.img")
	require.NoError(t, os.WriteFile(p, make([]byte, 4<<20), 0o600))
	f, fi, err := Open(p)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, int64(4<<20), fi.Size())
	_, _, err = Open("/dev/null")
	assert.ErrorContains(t, err, "/dev/null: is a character device")
}

func TestReadStdinIsBoundedAndCancellable(t *testing.T) {
	t.Parallel()
	data, err := ReadStdin(context.Background(), strings.NewReader("name: a\n"), 16)
	require.NoError(t, err)
	assert.Equal(t, "name: a\n", string(data))

	_, err = ReadStdin(context.Background(), strings.NewReader(strings.Repeat("x", 2048)), 1024)
	assert.ErrorContains(t, err, "standard input (-f -): is larger than 1 KiB")

	// A reader nobody writes to (a terminal) gives way to Ctrl-C.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = ReadStdin(ctx, r, 1024)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// An output path is refused before anything is written: an existing file
// without replace, and a FIFO, device, directory or link whatever replace
// says; nothing there, or a regular file with replace, may be written.
func TestCheckOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	file := filepath.Join(dir, "pull-secret.json")
	require.NoError(t, os.WriteFile(file, []byte("{}"), 0o600))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(file, link))

	for _, tc := range []struct {
		path    string
		replace bool
		want    string
	}{
		{path: file, want: file + ": exists, and is kept: give another path, or --force to replace it"},
		{path: fifo, want: fifo + ": is a FIFO (named pipe), not a regular file: bootlab writes its output to a new file or over a regular one only; give another path"},
		{path: fifo, replace: true, want: "is a FIFO (named pipe), not a regular file"},
		{path: "/dev/null", replace: true, want: "/dev/null: is a character device, not a regular file"},
		{path: dir, replace: true, want: "is a directory, not a regular file"},
		{path: link, replace: true, want: link + ": is a symbolic link: bootlab replaces no link"},
	} {
		err := CheckOutput(tc.path, tc.replace)
		var fe *Error
		require.ErrorAs(t, err, &fe, tc.path)
		assert.Contains(t, err.Error(), tc.want)
	}
	assert.ErrorIs(t, CheckOutput(file, false), os.ErrExist)
	assert.NoError(t, CheckOutput(file, true))
	assert.NoError(t, CheckOutput(filepath.Join(dir, "new.tar"), false))
}

// OpenAppend appends to a regular file only: a FIFO without a reader is
// refused at once (never waited on), a missing file is not created.
func TestOpenAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	start := time.Now()
	_, err := OpenAppend(fifo)
	assert.ErrorContains(t, err, "is a FIFO (named pipe), not a regular file")
	assert.Less(t, time.Since(start), time.Second)

	missing := filepath.Join(dir, "known_hosts")
	_, err = OpenAppend(missing)
	var fe *Error
	require.ErrorAs(t, err, &fe)
	assert.True(t, fe.NotExist)
	assert.NoFileExists(t, missing)

	require.NoError(t, os.WriteFile(missing, []byte("a\n"), 0o600))
	f, err := OpenAppend(missing)
	require.NoError(t, err)
	_, err = f.WriteString("b\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := os.ReadFile(missing)
	require.NoError(t, err)
	assert.Equal(t, "a\nb\n", string(got))
}
