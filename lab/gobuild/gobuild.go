package gobuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// recipeFormat is bumped when the way a component becomes a binary
// changes (flags, environment, layout), so caches rebuild.
const recipeFormat = "bootlab-gobuild/1"

// buildFlags are the flags of the component's build: no paths of the
// build host, no symbol tables (CGO_ENABLED=0 in the environment makes it
// static), and the component's version variables stamped.
func (c Component) buildFlags() []string {
	ld := "-s -w"
	for _, v := range c.Stamps {
		ld += " -X " + v.Var + "=" + v.Value
	}
	return []string{"-trimpath", "-ldflags", ld}
}

// The platform of the lab's nodes.
const (
	targetOS   = "linux"
	targetArch = "amd64"
)

// Module is a module path at a pinned version.
type Module struct {
	Path    string
	Version string
}

// Replace points a module path at a published module, as
// k8s.io/kubernetes needs for each of its staging modules.
type Replace struct {
	Old string
	New Module
}

// Stamp sets a string variable at link time (-ldflags -X), as upstream's
// release builds set the version a program reports.
type Stamp struct {
	// Var is the variable's import path and name:
	// "k8s.io/component-base/version.gitVersion".
	Var   string
	Value string
}

// Component is a program built from pinned modules.
type Component struct {
	// Name names the cache directory and, with Version, the component in
	// messages: "etcd".
	Name string
	// Version is the program's version, "3.5.21".
	Version string
	// GoVersion is the go directive of the generated go.mod.
	GoVersion string
	// Requires are the modules the main package imports, pinned.
	Requires []Module
	// Replaces apply to the generated module (a dependency's own replaces
	// are ignored by Go, so they must be repeated here).
	Replaces []Replace
	// Main is the source of the main package: a multi-call main dispatches
	// on the name it was called by.
	Main []byte
	// GoSum is the complete go.sum of the generated module: the build
	// verifies every module against it and fails if go wants to add one.
	GoSum []byte
	// Programs are the names the binary answers to; the first is its file
	// name, the others are links to it where it is installed.
	Programs []string
	// Stamps are the version variables set at link time.
	Stamps []Stamp
}

// Binary is a built (or cached) component.
type Binary struct {
	Component Component
	// Path is the binary in the cache.
	Path string
	// SHA256 is the binary's digest.
	SHA256 string
	// Built is false when the cache had it: go did not run.
	Built bool
	// Took is the build's wall time (0 when cached).
	Took time.Duration
}

// GoMod renders the generated module's go.mod.
func (c Component) GoMod() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "module bootlab.local/build/%s\n\ngo %s\n", c.Name, c.GoVersion)
	if len(c.Requires) > 0 {
		b.WriteString("\nrequire (\n")
		for _, m := range c.Requires {
			fmt.Fprintf(&b, "\t%s v%s\n", m.Path, strings.TrimPrefix(m.Version, "v"))
		}
		b.WriteString(")\n")
	}
	if len(c.Replaces) > 0 {
		b.WriteString("\nreplace (\n")
		for _, r := range c.Replaces {
			fmt.Fprintf(&b, "\t%s => %s v%s\n", r.Old, r.New.Path, strings.TrimPrefix(r.New.Version, "v"))
		}
		b.WriteString(")\n")
	}
	return b.Bytes()
}

// Recipe is the hash of everything the binary is made from but the Go
// toolchain: the module files, the main package, the flags and platform.
// A cached binary is found by it without running go.
func (c Component) Recipe() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s/%s\n%q\n%s %s\n", recipeFormat, targetOS, targetArch, c.buildFlags(), c.Name, c.Version)
	for _, part := range []struct {
		name string
		data []byte
	}{{"go.mod", c.GoMod()}, {"go.sum", c.GoSum}, {"main.go", c.Main}} {
		s := sha256.Sum256(part.data)
		fmt.Fprintf(h, "%s %x\n", part.name, s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Check refuses a component that cannot be built.
func (c Component) Check() error {
	switch {
	case c.Name == "" || strings.ContainsAny(c.Name, "/\\ ") || strings.HasPrefix(c.Name, "."):
		return fmt.Errorf("component name %q: want a plain name like etcd", c.Name)
	case c.Version == "" || strings.ContainsAny(c.Version, "/\\ "):
		return fmt.Errorf("component %s: version %q is empty or not a version", c.Name, c.Version)
	case c.GoVersion == "":
		return fmt.Errorf("component %s %s: no go version for its go.mod", c.Name, c.Version)
	case len(c.Requires) == 0 || len(c.Main) == 0:
		return fmt.Errorf("component %s %s: no modules or no main package", c.Name, c.Version)
	case len(c.GoSum) == 0:
		return fmt.Errorf("component %s %s: no pinned go.sum: a build would trust whatever the proxy serves", c.Name, c.Version)
	case len(c.Programs) == 0:
		return fmt.Errorf("component %s %s: no program names", c.Name, c.Version)
	}
	for _, st := range c.Stamps {
		if !strings.Contains(st.Var, ".") || strings.ContainsAny(st.Var+st.Value, " \t\n'\"") {
			return fmt.Errorf("component %s %s: stamp %s=%q: want importpath.name=value without spaces or quotes", c.Name, c.Version, st.Var, st.Value)
		}
	}
	return nil
}

// Dir is where the component's binary is cached under cacheDir.
func (c Component) Dir(cacheDir string) string {
	return filepath.Join(cacheDir, "gobuild", c.Name, c.Version+"-"+c.Recipe()[:16])
}

// CachedPath is where the component's binary is in cacheDir, and whether
// it is there: a stat, no go run and nothing read.
func (c Component) CachedPath(cacheDir string) (string, bool) {
	p := filepath.Join(c.Dir(cacheDir), c.Programs[0])
	fi, err := os.Stat(p)
	return p, err == nil && fi.Mode().IsRegular()
}

// Ensure returns the component's binary from cacheDir, building it the
// first time with the Go toolchain on PATH. Concurrent callers (test
// packages sharing a cache) wait for one build instead of racing two.
func Ensure(ctx context.Context, cacheDir string, c Component, log *slog.Logger) (*Binary, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	dir := c.Dir(cacheDir)
	b := &Binary{Component: c, Path: filepath.Join(dir, c.Programs[0])}
	if sum, err := fileSHA256(b.Path); err == nil {
		b.SHA256 = sum
		return b, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("%s %s is built from the Go module proxy and is not in the cache %s, and the Go toolchain (go) is not on PATH: install Go (https://go.dev/dl, or apt-get install golang-go) or import a cache that has it (bootlab cache import FILE)",
			c.Name, c.Version, cacheDir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("cache for %s: %w", c.Name, err)
	}
	unlock, err := Lock(ctx, dir+".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if sum, err := fileSHA256(b.Path); err == nil { // built while we waited
		b.SHA256 = sum
		return b, nil
	}
	log.Info("building from the Go module proxy (once; cached)", "component", c.Name, "version", c.Version, "into", dir)
	start := time.Now()
	if err := build(ctx, goBin, c, dir); err != nil {
		return nil, fmt.Errorf("build %s %s: %w", c.Name, c.Version, err)
	}
	b.Built, b.Took = true, time.Since(start)
	b.SHA256, err = fileSHA256(b.Path)
	return b, err
}

// build writes the module into a temporary directory, builds it and moves
// the binary into dir.
func build(ctx context.Context, goBin string, c Component, dir string) error {
	src, err := os.MkdirTemp("", "bootlab-gobuild-"+c.Name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	for name, data := range map[string][]byte{"go.mod": c.GoMod(), "go.sum": c.GoSum, "main.go": c.Main} {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out := filepath.Join(dir, c.Programs[0]+".tmp")
	args := append(append([]string{"build"}, c.buildFlags()...), "-o", out, ".")
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = src
	// GOFLAGS=-mod=mod lets go complete go.mod from the pinned graph; the
	// go.sum check below is what keeps it from adding anything.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+targetOS, "GOARCH="+targetArch,
		"GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		_ = os.Remove(out)
		return fmt.Errorf("go %s: %v: %s%s", strings.Join(args, " "), err, tail(stderr.String(), 6), toolchainHint(c, stderr.String()))
	}
	after, err := os.ReadFile(filepath.Join(src, "go.sum"))
	if err != nil {
		return err
	}
	if added := newLines(c.GoSum, after); len(added) > 0 {
		_ = os.Remove(out)
		return fmt.Errorf("the pinned go.sum lacks %d module sums go needed (first: %s): regenerate it with `go test ./lab/gobuild/ -run TestPinnedSums -update`", len(added), added[0])
	}
	if err := os.Chmod(out, 0o755); err != nil {
		return err
	}
	return os.Rename(out, filepath.Join(dir, c.Programs[0]))
}

// toolchainHint explains a build refused by the linker's //go:linkname
// restrictions (Go 1.23 on), which older releases of some programs trip.
func toolchainHint(c Component, stderr string) string {
	if !strings.Contains(stderr, "invalid reference to") && !strings.Contains(stderr, "go:linkname") {
		return ""
	}
	return fmt.Sprintf("\n%s %s uses //go:linkname references the Go toolchain on PATH (see go version) refuses: put the Go release of its time first on PATH (bootlab builds with GOTOOLCHAIN=local) or use an OpenShift release whose %s builds with this one",
		c.Name, c.Version, c.Name)
}

// Lock takes an exclusive flock on path, waiting until ctx is done, so
// that two labs filling the same cache entry (a class's) do it once.
func Lock(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cache lock: %w", err)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("cache lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another bootlab to fill the cache (lock %s): %w", path, ctx.Err())
		case <-tick.C:
		}
	}
}

// newLines returns the lines of after that are not in before.
func newLines(before, after []byte) []string {
	have := map[string]bool{}
	for _, l := range strings.Split(string(before), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var out []string
	for _, l := range strings.Split(string(after), "\n") {
		if l = strings.TrimSpace(l); l != "" && !have[l] {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// tail is the last n lines of s, for error messages.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
