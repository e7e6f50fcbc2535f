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

// prefetchCommand prints, for each path, a header (missing, or its stat
// line) and a regular file's content, whose size the stat line gives.
func prefetchCommand(paths []string) string {
	var b strings.Builder
	for i, p := range paths {
		q := ShellQuote(p)
		fmt.Fprintf(&b, "if [ ! -e %[1]s ]; then echo '%[2]s %[3]d missing'; "+
			"elif [ -f %[1]s ]; then printf '%[2]s %[3]d file %%s\\n' \"$(stat -L -c '%%a %%s %%F' -- %[1]s)\" && cat -- %[1]s && echo; "+
			"else printf '%[2]s %[3]d other %%s\\n' \"$(stat -L -c '%%a %%s %%F' -- %[1]s)\"; fi || exit 1\n", q, prefetchTag, i)
	}
	fmt.Fprintf(&b, "echo '%s end'\n", prefetchTag)
	return b.String()
}

// parsePrefetch reads prefetchCommand's output; ok is false for anything
// that does not match it exactly (a file that changed size while read).
func parsePrefetch(out []byte, paths []string) (map[string]prefetchedFile, bool) {
	files := map[string]prefetchedFile{}
	for i, p := range paths {
		line, rest, found := bytes.Cut(out, []byte("\n"))
		if !found {
			return nil, false
		}
		head, ok := strings.CutPrefix(string(line), fmt.Sprintf("%s %d ", prefetchTag, i))
		if !ok {
			return nil, false
		}
		out = rest
		kind, stat, _ := strings.Cut(head, " ")
		if kind == "missing" {
			files[p] = prefetchedFile{missing: true}
			continue
		}
		info, err := parseStat(p, stat)
		if err != nil || (kind != "file" && kind != "other") {
			return nil, false
		}
		f := prefetchedFile{info: info}
		if kind == "file" {
			if int64(len(out)) < info.Size+1 || out[info.Size] != '\n' {
				return nil, false
			}
			f.regular, f.data, out = true, bytes.Clone(out[:info.Size]), out[info.Size+1:]
		}
		files[p] = f
	}
	return files, string(out) == prefetchTag+" end\n"
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
