package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/labdir"
)

// saveConsoleLogs copies the console logs of the nodes named in only (all
// nodes when only is empty) into dir: from the lab directory, or read on a
// remote hypervisor's machine. A checkpoint of some nodes holds only their
// logs, so restoring it never rewinds what the other nodes reported.
func (r *labRun) saveConsoleLogs(ctx context.Context, dir string, only []string) error {
	if !r.host.Remote() && len(only) == 0 {
		return copyTree(labdir.Console(r.s), dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, n := range r.s.Nodes {
		if len(only) > 0 && !slices.Contains(only, n.Name) {
			continue
		}
		var (
			data []byte
			err  error
		)
		if r.host.Remote() {
			data, err = r.host.ReadFile(ctx, labdir.ConsoleLog(r.s, n))
		} else {
			data, err = os.ReadFile(labdir.ConsoleLog(r.s, n))
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, n.Name+".log"), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// restoreConsoleLogs puts the checkpoint's console logs (in from) back
// where virtlogd writes them, each rewritten in place (same inode:
// virtlogd's open descriptor appends after it).
func (r *labRun) restoreConsoleLogs(ctx context.Context, from string) error {
	if !r.host.Remote() {
		return restoreConsoleFiles(from, labdir.Console(r.s))
	}
	entries, err := os.ReadDir(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	to := filepath.Dir(labdir.ConsoleLog(r.s, spec.Node{Name: "x"}))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		// cat > truncates and rewrites the same file, as below.
		var errb strings.Builder
		code, err := r.host.Run(ctx, "cat > "+sshc.Quote(filepath.Join(to, e.Name())), bytes.NewReader(data), nil, &errb)
		if err == nil && code != 0 {
			err = fmt.Errorf("exit status %d: %s", code, strings.TrimSpace(errb.String()))
		}
		if err != nil {
			return fmt.Errorf("rewrite %s on %s: %w", filepath.Join(to, e.Name()), r.host.Name(), err)
		}
	}
	return nil
}

// restoreConsoleFiles rewrites each console log in from into to, in place.
func restoreConsoleFiles(from, to string) error {
	entries, err := os.ReadDir(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(to, e.Name()), os.O_WRONLY|os.O_TRUNC|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies a file or a directory tree, keeping modes; a missing
// source is nothing to copy.
func copyTree(src, dst string) error {
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case d.Type().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil // sockets, fifos: not lab state
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
