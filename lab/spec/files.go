package spec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxTextFileBytes bounds the small files a user names: lab and class
// specs, pull secrets, SSH public keys, bootkube.sh. The largest real one
// (a pull secret with many registries) is a few KiB; 1 MiB leaves room and
// keeps /dev/zero or a multi-GiB file from filling memory.
const MaxTextFileBytes = 1 << 20

// StdinPath is the file name that means standard input (`-f -`).
const StdinPath = "-"

// FileError is a path a user gave that cannot be used as an input file:
// missing, not a regular file, or too large. It never quotes the content.
type FileError struct {
	Path string
	// Msg says what is wrong and what to give instead.
	Msg string
	// NotExist is set when nothing is at Path.
	NotExist bool
}

func (e *FileError) Error() string { return e.Path + ": " + e.Msg }

// OpenRegular opens path for reading and makes sure it is a regular file.
// It opens with O_NONBLOCK, so a FIFO with no writer (or a device) does not
// block the open, and checks the opened descriptor (fstat), so the file
// checked is the file read. Large regular files (disk images) are fine;
// the caller bounds what it reads.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, openError(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, &FileError{Path: path, Msg: "cannot be read: " + err.Error()}
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &FileError{Path: path, Msg: "is " + fileKind(fi.Mode()) + ", not a regular file: give the path of a regular file"}
	}
	// O_NONBLOCK means nothing for a regular file's reads; clear it anyway
	// so the descriptor behaves as a plain open would.
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, nil, &FileError{Path: path, Msg: "cannot be read: " + err.Error()}
	}
	return f, fi, nil
}

// ReadRegular reads a regular file of at most limit bytes (see OpenRegular).
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, fi, err := OpenRegular(path)
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
		return nil, &FileError{Path: path, Msg: "cannot be read: " + err.Error()}
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
			return nil, &FileError{Path: "standard input (-f -)", Msg: "cannot be read: " + res.err.Error()}
		}
		if int64(len(res.data)) > limit {
			return nil, tooLarge("standard input (-f -)", limit)
		}
		return res.data, nil
	}
}

func tooLarge(path string, limit int64) error {
	return &FileError{Path: path, Msg: fmt.Sprintf("is larger than %d KiB, more than this file can hold: check that the path names the right file", limit>>10)}
}

func openError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &FileError{Path: path, Msg: "not found: give the path of an existing file", NotExist: true}
	case errors.Is(err, fs.ErrPermission):
		return &FileError{Path: path, Msg: "permission denied: make it readable by this user"}
	case errors.Is(err, syscall.ENXIO):
		// A socket, or a FIFO on some systems, refuses a non-blocking open.
		return &FileError{Path: path, Msg: "is a socket or pipe, not a regular file: give the path of a regular file"}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &FileError{Path: path, Msg: "cannot be opened: " + err.Error()}
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
