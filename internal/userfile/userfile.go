// Package userfile reads the files a user names (specs, pull secrets, keys,
// images, archives) safely: regular files only, opened without blocking on
// a FIFO, checked on the opened descriptor, and read up to a limit. It
// also checks the paths bootlab writes a file to for a user (an export, a
// spec, a known_hosts record): an existing file is replaced or appended to
// only when asked, and a special file never.
package userfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxTextBytes bounds the small files a user names: lab and class
// specs, pull secrets, SSH public keys, bootkube.sh. The largest real one
// (a pull secret with many registries) is a few KiB; 1 MiB leaves room and
// keeps /dev/zero or a multi-GiB file from filling memory.
const MaxTextBytes = 1 << 20

// StdinPath is the file name that means standard input (`-f -`).
const StdinPath = "-"

// Error is a path a user gave that cannot be used as an input file
// (missing, not a regular file, or too large) or as an output file (one
// that exists, a special file). It never quotes the content.
type Error struct {
	Path string
	// Msg says what is wrong and what to give instead.
	Msg string
	// NotExist is set when nothing is at Path.
	NotExist bool
	// Err is the system's error, if one was the cause.
	Err error
}

func (e *Error) Error() string { return e.Path + ": " + e.Msg }

// Unwrap lets errors.Is see the cause (fs.ErrNotExist for a missing file,
// fs.ErrExist for an output file kept).
func (e *Error) Unwrap() error { return e.Err }

// Open opens path for reading and makes sure it is a regular file.
// It opens with O_NONBLOCK, so a FIFO with no writer (or a device) does not
// block the open, and checks the opened descriptor (fstat), so the file
// checked is the file read (it is also stat'ed first, so a device is
// not even opened). Large regular files (disk images) are fine;
// the caller bounds what it reads.
func Open(path string) (*os.File, fs.FileInfo, error) {
	return open(path, os.O_RDONLY)
}

// OpenAppend opens an existing regular file to append to it (a
// known_hosts file a user named), with Open's checks: a FIFO, a device or
// a directory is refused at once, never written to or waited on, and
// nothing is created.
func OpenAppend(path string) (*os.File, error) {
	f, _, err := open(path, os.O_WRONLY|os.O_APPEND)
	return f, err
}

func open(path string, flag int) (*os.File, fs.FileInfo, error) {
	// Opening a device can act (a tape rewinds, a watchdog arms): refuse
	// what stat already shows is no regular file without opening it.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, nil, notRegular(path, fi.Mode())
	}
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, openError(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, &Error{Path: path, Msg: "cannot be read: " + err.Error()}
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, fi.Mode())
	}
	// O_NONBLOCK means nothing for a regular file's reads and writes;
	// clear it anyway so the descriptor behaves as a plain open would.
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, nil, &Error{Path: path, Msg: "cannot be read: " + err.Error()}
	}
	return f, fi, nil
}

// Read reads a regular file of at most limit bytes (see Open).
func Read(path string, limit int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, tooLarge(path, limit)
	}
	// The size can grow between fstat and read: read one byte past the
	// limit to notice.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &Error{Path: path, Msg: "cannot be read: " + err.Error()}
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, limit)
	}
	return data, nil
}

// ReadStdin reads at most limit bytes of r (standard input, `-f -`) and
// gives up when ctx ends: a terminal nobody types into must not outlast Ctrl-C.
func ReadStdin(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(r, limit+1))
		done <- result{data, err}
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-done:
		if res.err != nil {
			return nil, &Error{Path: "standard input (-f -)", Msg: "cannot be read: " + res.err.Error()}
		}
		if int64(len(res.data)) > limit {
			return nil, tooLarge("standard input (-f -)", limit)
		}
		return res.data, nil
	}
}

func notRegular(path string, m fs.FileMode) error {
	return &Error{Path: path, Msg: "is " + fileKind(m) + ", not a regular file: give the path of a regular file"}
}

func tooLarge(path string, limit int64) error {
	return &Error{Path: path, Msg: fmt.Sprintf("is larger than %d KiB, more than this file can hold: check that the path names the right file", limit>>10)}
}

func openError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &Error{Path: path, Msg: "not found: give the path of an existing file", NotExist: true, Err: err}
	case errors.Is(err, fs.ErrPermission):
		return &Error{Path: path, Msg: "permission denied: make it readable by this user", Err: err}
	case errors.Is(err, syscall.ENXIO):
		// A socket, or a FIFO on some systems, refuses a non-blocking open.
		return &Error{Path: path, Msg: "is a socket or pipe, not a regular file: give the path of a regular file"}
	}
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	return &Error{Path: path, Msg: "cannot be opened: " + msg, Err: err}
}

// fileKind names a non-regular file mode in the user's words.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}
