package userfile

import (
	"errors"
	"io/fs"
	"os"
)

// CheckOutput says whether bootlab may write a new file at path for the
// user (a cache export, a lab spec): nothing is there, or a regular file
// and replace is set (--force). Whatever replace says, a directory, FIFO,
// device, socket or symbolic link is never replaced: a rename over it
// would put a tar where a pipe or a device node was, or replace a link the
// user meant to write through. The writer still renames without replacing
// when replace is unset (atomicfile.File.Commit), so a file made meanwhile
// is kept too.
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
		return &Error{Path: path, Msg: "is " + fileKind(fi.Mode()) + ", not a regular file: bootlab writes its output only to a new file (or, with --force, over a regular one); give another path"}
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
