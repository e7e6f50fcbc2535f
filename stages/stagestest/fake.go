// Package stagestest has a recording fake node.Node for unit tests: files
// live under a directory on the workstation, commands are answered by
// handlers and every call is recorded.
package stagestest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/stages"
)

// Reply is a canned answer to a command.
type Reply struct {
	Stdout string
	Code   int
}

// Node is a fake bootstrap node rooted at Root.
type Node struct {
	Root string
	// Replies answer commands containing the key (first match in key order).
	Replies map[string]Reply
	// Script answers a stage script run by the runner. Default: exit 0.
	Script func(script string, stdout io.Writer) int

	mu    sync.Mutex
	Calls []string
	// Scripts holds every stage script run.
	Scripts []string
}

// New returns a fake node whose files live in root.
func New(root string) *Node { return &Node{Root: root, Replies: map[string]Reply{}} }

func (n *Node) String() string { return "fake-node" }

func (n *Node) host(p string) string { return filepath.Join(n.Root, filepath.FromSlash(p)) }

// Run records cmd and answers it: scripts under /run/bootlab with Script, `ls -A1 -- DIR`
// and node.Prefetch's command from the files, anything else from Replies
// (exit 127 when unknown).
func (n *Node) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	n.mu.Lock()
	n.Calls = append(n.Calls, cmd)
	n.mu.Unlock()
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if p, ok := strings.CutPrefix(cmd, "bash '"+stages.ReplayDir+"/"); ok {
		p = stages.ReplayDir + "/" + strings.TrimSuffix(p, "' </dev/null")
		data, err := os.ReadFile(n.host(p))
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 127, nil
		}
		n.mu.Lock()
		n.Scripts = append(n.Scripts, string(data))
		n.mu.Unlock()
		if n.Script == nil {
			return 0, nil
		}
		return n.Script(string(data), stdout), nil
	}
	if strings.Contains(cmd, prefetchTag) {
		return n.prefetch(ctx, cmd, stdout, stderr)
	}
	if d, ok := strings.CutPrefix(cmd, "ls -A1 -- "); ok {
		entries, err := os.ReadDir(n.host(strings.Trim(d, "'")))
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2, nil
		}
		for _, e := range entries {
			fmt.Fprintln(stdout, e.Name())
		}
		return 0, nil
	}
	keys := make([]string, 0, len(n.Replies))
	for k := range n.Replies {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.Contains(cmd, k) {
			r := n.Replies[k]
			_, _ = io.WriteString(stdout, r.Stdout)
			return r.Code, nil
		}
	}
	fmt.Fprintf(stderr, "fake node: no reply for %q\n", cmd)
	return 127, nil
}

// prefetchTag marks the output, and so the command, of node.Prefetch.
const prefetchTag = "@@bootlab-prefetch"

// prefetch runs node.Prefetch's command with bash on the files under Root:
// the paths it names (each one quoted) moved under Root, and back in what
// it says of them.
func (n *Node) prefetch(ctx context.Context, cmd string, stdout, stderr io.Writer) (int, error) {
	root, err := filepath.Abs(n.Root)
	if err != nil || strings.ContainsRune(root, '\'') {
		return -1, fmt.Errorf("fake node: root %q cannot be quoted", n.Root)
	}
	var out bytes.Buffer
	c := exec.CommandContext(ctx, "bash", "-c", strings.ReplaceAll(cmd, "'/", "'"+root+"/"))
	c.Stdout, c.Stderr = &out, stderr
	var ee *exec.ExitError
	if err := c.Run(); errors.As(err, &ee) {
		return ee.ExitCode(), nil
	} else if err != nil {
		return -1, err
	}
	head, content, _ := bytes.Cut(out.Bytes(), []byte(prefetchTag+" content\n"))
	head = bytes.ReplaceAll(head, []byte(root+"/"), []byte("/"))
	_, err = fmt.Fprintf(stdout, "%s%s content\n%s", head, prefetchTag, content)
	return 0, err
}

// ReadFile reads Root/path.
func (n *Node) ReadFile(ctx context.Context, p string) ([]byte, error) {
	n.mu.Lock()
	n.Calls = append(n.Calls, "read "+p)
	n.mu.Unlock()
	data, err := os.ReadFile(n.host(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	return data, err
}

// WriteFile writes Root/path.
func (n *Node) WriteFile(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	n.mu.Lock()
	n.Calls = append(n.Calls, "write "+p)
	n.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(n.host(p)), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(n.host(p), data, mode); err != nil {
		return err
	}
	return os.Chmod(n.host(p), mode)
}

// Stat describes Root/path.
func (n *Node) Stat(ctx context.Context, p string) (node.FileInfo, error) {
	n.mu.Lock()
	n.Calls = append(n.Calls, "stat "+p)
	n.mu.Unlock()
	fi, err := os.Stat(n.host(p))
	if errors.Is(err, fs.ErrNotExist) {
		return node.FileInfo{}, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
	if err != nil {
		return node.FileInfo{}, err
	}
	return node.FileInfo{Mode: fi.Mode().Perm(), Size: fi.Size(), IsDir: fi.IsDir()}, nil
}

// Touch creates empty files (markers) under Root.
func (n *Node) Touch(paths ...string) error {
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(n.host(p)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(n.host(p), nil, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// FinishBefore makes the node show every stage of c before stage number
// as finished, as bootkube leaves it (stages.Stage.Proof): their markers,
// and a successful service record of a last step without marker.
func (n *Node) FinishBefore(c stages.Catalog, number int) error {
	var recs []map[string]string
	for _, s := range c {
		if s.Number >= number {
			break
		}
		markers, record := s.Proof()
		for _, m := range markers {
			if err := n.Touch(stages.AssetDir + "/" + m); err != nil {
				return err
			}
		}
		if record != "" {
			recs = append(recs, map[string]string{"phase": stages.PhaseEnd, "stage": record, "result": string(stages.ResultSuccess)})
		}
	}
	if len(recs) == 0 {
		return nil
	}
	data, err := json.Marshal(recs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(n.host(stages.ServiceRecords)), 0o755); err != nil {
		return err
	}
	return os.WriteFile(n.host(stages.ServiceRecords), data, 0o644)
}

// Lists counts the listings of dir asked of the node: an ls, or a
// node.Prefetch that lists it.
func (n *Node) Lists(dir string) int {
	return n.count(func(c string) bool {
		return c == "ls -A1 -- "+node.ShellQuote(dir) || prefetchLine(c, "for d in ", dir)
	})
}

// Reads counts the reads of file p asked of the node: one of its own, or
// a node.Prefetch that reads it.
func (n *Node) Reads(p string) int {
	return n.count(func(c string) bool { return c == "read "+p || prefetchLine(c, "set -- ", p) })
}

func (n *Node) count(match func(string) bool) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	for _, c := range n.Calls {
		if match(c) {
			k++
		}
	}
	return k
}

// prefetchLine reports whether cmd is node.Prefetch's and its line that
// starts with prefix names p.
func prefetchLine(cmd, prefix, p string) bool {
	if !strings.Contains(cmd, prefetchTag) {
		return false
	}
	for _, l := range strings.Split(cmd, "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			return slices.Contains(strings.Fields(strings.TrimSuffix(rest, "; do")), node.ShellQuote(p))
		}
	}
	return false
}

// CallsWith returns the recorded calls that start with prefix.
func (n *Node) CallsWith(prefix string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, c := range n.Calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

var _ node.Node = (*Node)(nil)
