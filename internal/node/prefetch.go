package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
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

// Prefetch reads paths on n in one command. A node that cannot run it (no
// stat, an output it cannot parse) still gets a Prefetched, one that
// answers everything from the node: the prefetch saves time, it is not
// needed for a right answer.
func Prefetch(ctx context.Context, n Node, paths ...string) (*Prefetched, error) {
	p := &Prefetched{Node: n}
	var out, errb bytes.Buffer
	code, err := n.Run(ctx, prefetchCommand(paths), nil, &out, &errb)
	if err != nil {
		// The node cannot be reached: the next call would fail the same way.
		return nil, err
	}
	if code != 0 {
		return p, nil
	}
	if files, ok := parsePrefetch(out.Bytes(), paths); ok {
		p.files = files
	}
	return p, nil
}

// prefetchCommand lists which paths exist (a builtin), describes them
// with one stat and prints the regular files' contents with one cat, in
// the order asked, their sizes from the stat: two processes on the node
// however many paths (each process is most of a command's cost on a TCG
// guest).
func prefetchCommand(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = ShellQuote(p)
	}
	return fmt.Sprintf(`set -- %[2]s
command -v stat >/dev/null || exit 1
for p; do [ -e "$p" ] && printf '%[1]s exists %%s\n' "$p"; done
stat -L -c '%%n	%%a %%s %%F' -- "$@" 2>/dev/null
printf '%[1]s content\n'
regular=(); for p; do [ -f "$p" ] && regular+=("$p"); done
[ ${#regular[@]} -eq 0 ] || cat -- "${regular[@]}" || exit 1
printf '\n%[1]s end\n'
`, prefetchTag, strings.Join(q, " "))
}

// parsePrefetch reads prefetchCommand's output; ok is false for anything
// that does not match it exactly (a file that changed while read).
func parsePrefetch(out []byte, paths []string) (map[string]prefetchedFile, bool) {
	head, content, found := bytes.Cut(out, []byte(prefetchTag+" content\n"))
	if !found {
		return nil, false
	}
	exists, stats := map[string]bool{}, map[string]FileInfo{}
	regular := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(string(head), "\n"), "\n") {
		if p, ok := strings.CutPrefix(l, prefetchTag+" exists "); ok {
			exists[p] = true
			continue
		}
		p, st, ok := strings.Cut(l, "\t")
		info, err := parseStat(p, st)
		if !ok || err != nil {
			return nil, false
		}
		stats[p], regular[p] = info, strings.HasSuffix(st, "regular file") || strings.HasSuffix(st, "regular empty file")
	}
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

// Run runs cmd on the node.
func (p *Prefetched) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return p.Node.Run(ctx, cmd, stdin, stdout, stderr)
}
