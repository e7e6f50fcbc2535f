package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"syscall"
)

// Prefetched is a node whose answers about a few files were read in one
// command: ReadFile and Stat of those paths come from that read, anything
// else (and every Run and WriteFile) goes to the node. Over SSH each
// command is a session with a sudo and a bash on the node, about 0.3 to
// 0.5 s on a TCG guest, and a stage run's checks read a handful of files
// before anything runs. The answers are not refreshed: use it only while
// nothing changes those files (the checks before a stage runs), then go
// back to the node itself.
type Prefetched struct {
	Node
	files map[string]prefetchedFile
	// dirs are the listings read; a path not here was not listed.
	dirs map[string]prefetchedDir
}

type prefetchedDir struct {
	// err is why the path could not be listed (missing, not a directory).
	err   error
	names []string
}

// Paths are what Prefetch reads: Files are described (a stat) and read
// when regular; Dirs are listed, as `ls -A` lists them.
type Paths struct {
	Files []string
	Dirs  []string
}

type prefetchedFile struct {
	missing bool
	info    FileInfo
	// regular: data is the file's content; anything else (a directory)
	// ReadFile asks the node about.
	regular bool
	data    []byte
}

// prefetchTag starts each header line of the prefetch command's output.
const prefetchTag = "@@bootlab-prefetch"

// Prefetch reads want on n in one command. A node that cannot run it (no
// stat, an output it cannot parse) still gets a Prefetched, one that
// answers everything from the node: the prefetch saves time, it is not
// needed for a right answer. A Prefetched n that read all of want already
// is returned as it is, with no command.
func Prefetch(ctx context.Context, n Node, want Paths) (*Prefetched, error) {
	if p, ok := n.(*Prefetched); ok && p.covers(want) {
		return p, nil
	}
	p := &Prefetched{Node: n}
	var out, errb bytes.Buffer
	code, err := n.Run(ctx, prefetchCommand(want), nil, &out, &errb)
	if err != nil {
		// The node cannot be reached: the next call would fail the same way.
		return nil, err
	}
	if code != 0 {
		return p, nil
	}
	if files, dirs, ok := parsePrefetch(out.Bytes(), want); ok {
		p.files, p.dirs = files, dirs
	}
	return p, nil
}

// covers reports whether p read every path of want.
func (p *Prefetched) covers(want Paths) bool {
	for _, f := range want.Files {
		if _, ok := p.files[f]; !ok {
			return false
		}
	}
	for _, d := range want.Dirs {
		if _, ok := p.dirs[d]; !ok {
			return false
		}
	}
	return true
}

// prefetchCommand lists the directories and which files exist (with
// builtins: globs and tests), describes the files with one stat and
// prints the regular files' contents with one cat, in the order asked,
// their sizes from the stat: two processes on the node however many paths
// (each process is most of a command's cost on a TCG guest).
func prefetchCommand(want Paths) string {
	return fmt.Sprintf(`set -- %[2]s
command -v stat >/dev/null || exit 1
for d in %[3]s; do
  [ -e "$d" ] || { printf '%[1]s missing %%s\n' "$d"; continue; }
  [ -d "$d" ] || { printf '%[1]s notdir %%s\n' "$d"; continue; }
  printf '%[1]s list %%s\n' "$d"
  for e in "$d"/* "$d"/.*; do
    n=${e##*/}
    case $n in .|..) continue ;; esac
    { [ -e "$e" ] || [ -L "$e" ]; } && printf '%[1]s name %%s\n' "$n"
  done
done
there=(); for p; do [ -e "$p" ] && there+=("$p") && printf '%[1]s exists %%s\n' "$p"; done
[ ${#there[@]} -eq 0 ] || stat -L -c '%%n	%%a %%s %%F' -- "${there[@]}" 2>/dev/null
printf '%[1]s content\n'
regular=(); for p in "${there[@]}"; do [ -f "$p" ] && regular+=("$p"); done
[ ${#regular[@]} -eq 0 ] || cat -- "${regular[@]}" || exit 1
printf '\n%[1]s end\n'
`, prefetchTag, quoteAll(want.Files), quoteAll(want.Dirs))
}

func quoteAll(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = ShellQuote(p)
	}
	return strings.Join(q, " ")
}

// parsePrefetch reads prefetchCommand's output; ok is false for anything
// that does not match it exactly (a file that changed while read).
func parsePrefetch(out []byte, want Paths) (map[string]prefetchedFile, map[string]prefetchedDir, bool) {
	head, content, found := bytes.Cut(out, []byte(prefetchTag+" content\n"))
	if !found {
		return nil, nil, false
	}
	exists, stats := map[string]bool{}, map[string]FileInfo{}
	regular := map[string]bool{}
	dirs, dir := map[string]prefetchedDir{}, ""
	for _, l := range strings.SplitAfter(string(head), "\n") {
		l, ok := strings.CutSuffix(l, "\n")
		if !ok {
			if l != "" {
				return nil, nil, false
			}
			continue
		}
		if p, ok := strings.CutPrefix(l, prefetchTag+" exists "); ok {
			exists[p] = true
			continue
		}
		if d, ok := strings.CutPrefix(l, prefetchTag+" missing "); ok {
			dirs[d], dir = prefetchedDir{err: &fs.PathError{Op: "list", Path: d, Err: fs.ErrNotExist}}, ""
			continue
		}
		if d, ok := strings.CutPrefix(l, prefetchTag+" notdir "); ok {
			dirs[d], dir = prefetchedDir{err: &fs.PathError{Op: "list", Path: d, Err: syscall.ENOTDIR}}, ""
			continue
		}
		if d, ok := strings.CutPrefix(l, prefetchTag+" list "); ok {
			dirs[d], dir = prefetchedDir{names: []string{}}, d
			continue
		}
		if name, ok := strings.CutPrefix(l, prefetchTag+" name "); ok && dir != "" {
			pd := dirs[dir]
			pd.names = append(pd.names, name)
			dirs[dir] = pd
			continue
		}
		p, st, ok := strings.Cut(l, "\t")
		info, err := parseStat(p, st)
		if !ok || err != nil {
			return nil, nil, false
		}
		stats[p], regular[p] = info, strings.HasSuffix(st, "regular file") || strings.HasSuffix(st, "regular empty file")
	}
	files, ok := prefetchedFiles(content, want.Files, exists, stats, regular)
	return files, dirs, ok
}

// prefetchedFiles cuts content (what cat printed) into the regular files
// of paths, in order, by their sizes.
func prefetchedFiles(content []byte, paths []string, exists map[string]bool, stats map[string]FileInfo, regular map[string]bool) (map[string]prefetchedFile, bool) {
	files := map[string]prefetchedFile{}
	for _, p := range paths {
		info, described := stats[p]
		switch {
		case !exists[p]:
			files[p] = prefetchedFile{missing: true}
			continue
		case !described:
			return nil, false
		}
		f := prefetchedFile{info: info}
		if regular[p] {
			if int64(len(content)) < info.Size {
				return nil, false
			}
			f.regular, f.data, content = true, bytes.Clone(content[:info.Size]), content[info.Size:]
		}
		files[p] = f
	}
	return files, string(content) == "\n"+prefetchTag+" end\n"
}

// ReadFile answers from the prefetch for a path it read.
func (p *Prefetched) ReadFile(ctx context.Context, path string) ([]byte, error) {
	f, ok := p.files[path]
	switch {
	case ok && f.missing:
		return nil, &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	case ok && f.regular:
		return bytes.Clone(f.data), nil
	}
	return p.Node.ReadFile(ctx, path)
}

// Stat answers from the prefetch for a path it read.
func (p *Prefetched) Stat(ctx context.Context, path string) (FileInfo, error) {
	f, ok := p.files[path]
	switch {
	case !ok:
		return p.Node.Stat(ctx, path)
	case f.missing:
		return FileInfo{}, &fs.PathError{Op: "stat", Path: path, Err: fs.ErrNotExist}
	}
	return f.info, nil
}

// List answers from the prefetch for a directory it listed.
func (p *Prefetched) List(ctx context.Context, dir string) ([]string, error) {
	d, ok := p.dirs[dir]
	switch {
	case !ok:
		return List(ctx, p.Node, dir)
	case d.err != nil:
		return nil, d.err
	}
	return slices.Clone(d.names), nil
}

// Run runs cmd on the node.
func (p *Prefetched) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return p.Node.Run(ctx, cmd, stdin, stdout, stderr)
}
