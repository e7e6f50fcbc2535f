// Package atomicfile replaces a file whole: a reader sees the old content
// or the new, never a part, and the new file has exactly the mode asked
// for. It is the one way bootlab writes state, keys, kubeconfigs, the
// files its agent hands to the kubelet stand-in and the files it writes
// for a user (a cache export).
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Write writes data to a new temporary file beside path and renames it
// over path (see Create). On failure the temporary file is removed and
// path is untouched. path's directory must exist.
//
// Write does not fsync: the rename is atomic for readers and writers on
// the running system, which is what bootlab's files need; none of them
// must survive a power cut.
func Write(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit(perm, true)
}

// File is a file being written in place of path: a temporary file beside
// it that Commit renames to path and Abort removes. Write to it as to an
// *os.File.
type File struct {
	*os.File
	path string
}

// Create starts a file that will replace path. The temporary file is made
// by this call alone (never an old one left by a crash, whose mode could
// be wider), is named ".<base>.<random>.tmp" (a dot-file, which directory
// watchers such as the kubelet stand-in skip, ending in .tmp, which the
// cache's listing knows) and starts 0600, so a secret is never readable by
// others even for a moment. path's directory must exist.
func Create(path string) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &File{File: f, path: path}, nil
}

// Commit closes the file, gives it perm and renames it to path. With
// replace unset, a file at path (one made since the caller checked) is
// kept and Commit fails with an error that is fs.ErrExist. On failure the
// temporary file is removed and path is untouched.
func (f *File) Commit(perm fs.FileMode, replace bool) (err error) {
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", f.path, err)
		}
	}()
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm.Perm()); err != nil {
		return err
	}
	if replace {
		return os.Rename(tmp, f.path)
	}
	return renameNoReplace(tmp, f.path)
}

// Abort closes and removes the temporary file; path is untouched.
func (f *File) Abort() {
	_ = f.Close()
	_ = os.Remove(f.Name())
}

// renameNoReplace renames oldpath to newpath unless newpath exists, in one
// step (renameat2 RENAME_NOREPLACE); on a file system without it, a hard
// link does the same (it fails on an existing name), then oldpath goes.
func renameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		if err != nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
		}
		return nil
	}
	if err := os.Link(oldpath, newpath); err != nil {
		return err
	}
	return os.Remove(oldpath)
}
