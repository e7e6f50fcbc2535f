package probe

// Writing the tools archive: the programs, the libraries their ELF headers
// ask for (what ldd would list), the static programs, and an RHCOS-like root.

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Layout of the tools in the rehearsal bootstrap: merged /usr, as RHCOS.
const (
	toolsBinDir = "usr/bin"
	toolsLibDir = "lib/x86_64-linux-gnu" // the loader's built-in multiarch path
)

// toolFile is a file of the tools archive.
type toolFile struct {
	data []byte
	mode uint32
}

// writeTools writes the tools archive to w, gzip'd at level: every program
// under a bin directory of toolRoots, the libraries they need (looked up in
// allRoots, recursively) and the dynamic loader, the static programs under
// their names, plus the users, groups and directories of an RHCOS-like
// root. It returns the program (and program link) and library paths it
// wrote.
func writeTools(w *bytes.Buffer, level int, toolRoots, allRoots []string, static ...staticProgram) ([]string, error) {
	out, queue, err := collectPrograms(toolRoots)
	if err != nil {
		return nil, err
	}
	if err := addLibraries(out, queue, allRoots); err != nil {
		return nil, err
	}
	gz, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		return nil, err
	}
	c := NewCPIOWriter(gz)
	writeRoot(c)
	var names []string
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		_ = c.File(n, out[n].mode, out[n].data)
	}
	for _, p := range static {
		names = append(names, path.Join(toolsBinDir, p.names[0]))
		_ = c.File(path.Join(toolsBinDir, p.names[0]), 0o755, p.data)
		for _, alias := range p.names[1:] {
			_ = c.Symlink(path.Join(toolsBinDir, alias), p.names[0])
			names = append(names, path.Join(toolsBinDir, alias))
		}
	}
	sort.Strings(names)
	if err := c.Close(); err != nil {
		return nil, fmt.Errorf("write tools archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return names, nil
}

// collectPrograms reads every regular file under a bin directory of roots,
// returning them by archive path and the list of them (ELF or not) whose
// libraries are still to resolve.
func collectPrograms(roots []string) (map[string]toolFile, []string, error) {
	out := map[string]toolFile{}
	var queue []string
	for _, root := range roots {
		for _, bin := range []string{"bin", "sbin", "usr/bin", "usr/sbin"} {
			ents, err := os.ReadDir(filepath.Join(root, bin))
			if err != nil {
				continue
			}
			for _, e := range ents {
				if !e.Type().IsRegular() {
					continue // rbash and the like: links
				}
				data, err := os.ReadFile(filepath.Join(root, bin, e.Name()))
				if err != nil {
					return nil, nil, err
				}
				dst := path.Join(toolsBinDir, e.Name())
				out[dst] = toolFile{data, 0o755}
				queue = append(queue, dst)
			}
		}
	}
	return out, queue, nil
}

// addLibraries adds to out the dynamic loader and the libraries the ELF
// files in queue need, found in roots, and theirs, recursively.
func addLibraries(out map[string]toolFile, queue []string, roots []string) error {
	seen := map[string]bool{}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		f, err := elf.NewFile(bytes.NewReader(out[name].data))
		if err != nil {
			continue // a shell script (egrep)
		}
		needs, err := f.ImportedLibraries()
		interp := ""
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				b := make([]byte, p.Filesz)
				_, _ = p.ReadAt(b, 0)
				interp = strings.TrimRight(string(b), "\x00")
			}
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if interp != "" && !seen[interp] {
			seen[interp] = true
			data, err := readIn(roots, interp)
			if err != nil {
				return fmt.Errorf("dynamic loader %s of %s: %w", interp, name, err)
			}
			out[strings.TrimPrefix(interp, "/")] = toolFile{data, 0o755}
		}
		for _, lib := range needs {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			data, err := findLib(roots, lib)
			if err != nil {
				return fmt.Errorf("%s needs %s: %w (add its package to probe.LibraryPackages)", name, lib, err)
			}
			dst := path.Join(toolsLibDir, lib)
			out[dst] = toolFile{data, 0o755}
			queue = append(queue, dst)
		}
	}
	return nil
}

// writeRoot writes the directories, links, users and groups of an
// RHCOS-like root.
func writeRoot(c *CPIOWriter) {
	for _, d := range []string{"usr", "usr/bin", "usr/local", "usr/local/bin", "lib64", toolsLibDir,
		"var", "var/home", "var/log", "opt", "etc/ssh", "etc/kubernetes", "etc/kubernetes/manifests"} {
		_ = c.Dir(d, 0o755)
	}
	_ = c.Dir("root", 0o700)
	_ = c.Dir(strings.TrimPrefix(CoreHome, "/"), 0o700)
	// etc/mtab as RHCOS has it: e2fsprogs' mke2fs reads it to refuse a mounted disk.
	for link, target := range map[string]string{"bin": "usr/bin", "sbin": "usr/bin", "usr/sbin": "bin", "home": "var/home", "usr/bin/sh": "bash",
		"etc/mtab": "../proc/self/mounts"} {
		_ = c.Symlink(link, target)
	}
	_ = c.File("etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/bin/bash\ncore:x:%d:%d:CoreOS Admin:%s:/bin/bash\n", CoreUID, CoreUID, CoreHome)))
	_ = c.File("etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nwheel:x:10:core\ncore:x:%d:\n", CoreUID)))
	_ = c.File("etc/shells", 0o644, []byte("/bin/sh\n/bin/bash\n/usr/bin/bash\n"))
	// Without it glibc asks DNS before /etc/hosts, and localhost goes to the lab's dnsmasq.
	_ = c.File("etc/nsswitch.conf", 0o644, []byte("passwd: files\ngroup: files\nhosts: files dns\n"))
}

// findLib finds a library by soname in the multiarch library directories
// of roots.
func findLib(roots []string, soname string) ([]byte, error) {
	for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"} {
		data, err := readIn(roots, path.Join(dir, soname))
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("not found in the packages' library directories: %w", fs.ErrNotExist)
}

// readIn reads the absolute path p inside the first of roots that has it,
// following symbolic links within that root (Debian's links are absolute:
// /lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2),
// and across roots, since a link and its target may ship apart.
func readIn(roots []string, p string) ([]byte, error) {
	for hops := 0; hops < 16; hops++ {
		var next string
		for _, root := range roots {
			fp := filepath.Join(root, p)
			fi, err := os.Lstat(fp)
			if err != nil {
				continue
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				return os.ReadFile(fp)
			}
			target, err := os.Readlink(fp)
			if err != nil {
				return nil, err
			}
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(p), target)
			}
			next = target
			break
		}
		if next == "" {
			return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
		}
		p = next
	}
	return nil, fmt.Errorf("%s: too many symbolic links", p)
}
