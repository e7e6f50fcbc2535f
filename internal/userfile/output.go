package userfile

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/bootlab/bootlab/internal/atomicfile"
)

// CheckOutput says whether bootlab may write a new file at path for the
// user (a cache export, a lab spec): nothing is there, or a regular file
// and replace is set (--force). Whatever replace says, a directory, FIFO,
// device, socket or symbolic link is never replaced: a rename over it
// would put a tar where a pipe or a device node was, or replace a link the
// user meant to write through. The writer still renames without replacing
// when replace is unset (WriteNew), so a file made meanwhile is kept too.
func CheckOutput(path string, replace bool) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return openError(path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return &Error{Path: path, Msg: "is a symbolic link: bootlab replaces no link; give the path of a new file, or of the file the link points to"}
	case !fi.Mode().IsRegular():
		return &Error{Path: path, Msg: "is " + fileKind(fi.Mode()) + ", not a regular file: bootlab writes its output to a new file or over a regular one only; give another path"}
	case !replace:
		return ExistsError(path)
	}
	return nil
}

// ExistsError is a path bootlab would write a new file to that already
// holds one, kept because --force was not given.
func ExistsError(path string) error {
	return &Error{Path: path, Msg: "exists, and is kept: give another path, or --force to replace it", Err: fs.ErrExist}
}

// WriteNew writes a file for the user at path: CheckOutput first, then
// what write writes goes to a temporary file beside path, renamed to path
// with mode perm once write returns nil (atomicfile): path is the whole
// new file or what it was before, never half of one, and without replace
// a file made at path meanwhile is kept too. On any failure the temporary
// file is removed.
func WriteNew(path string, perm fs.FileMode, replace bool, write func(io.Writer) error) error {
	if err := CheckOutput(path, replace); err != nil {
		return err
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Abort()
		return err
	}
	err = f.Commit(perm, replace)
	if errors.Is(err, fs.ErrExist) {
		return ExistsError(path) // made since it was checked
	}
	return err
}
