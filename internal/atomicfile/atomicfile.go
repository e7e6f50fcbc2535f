// Package atomicfile replaces a file whole: a reader sees the old content
// or the new, never a part, and the new file has exactly the mode asked
// for. It is the one way bootlab writes state, keys, kubeconfigs and the
// files its agent hands to the kubelet stand-in.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to a new temporary file beside path and renames it
// over path. The temporary file is made by this call alone (never an old
// one left by a crash, whose mode could be wider), is named
// ".<base>.<random>.tmp" (a dot-file, which directory watchers such as
// the kubelet stand-in skip, ending in .tmp, which the cache's listing
// knows), starts 0600 and is given perm only once its content is all
// written, so a secret is never readable by others even for a moment.
// On failure the temporary file is removed and path is untouched. path's
// directory must exist.
//
// Write does not fsync: the rename is atomic for readers and writers on
// the running system, which is what bootlab's files need; none of them
// must survive a power cut.
func Write(path string, data []byte, perm fs.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm.Perm()); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
