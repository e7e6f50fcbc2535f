package gobuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/release"
)

// -update (internal/testutil) regenerates the pinned go.sum files (needs
// the Go module proxy).
var updateOnly = flag.String("update-only", "", "with -update, regenerate only this file of sums/ (kubernetes-v1.32.13.sum)")

func sample() Component {
	return Component{
		Name: "demo", Version: "1.2.3", GoVersion: "1.23",
		Requires: []Module{{"example.com/a", "v1.0.0"}, {"example.com/b", "2.0.0"}},
		Replaces: []Replace{{"k8s.io/api", Module{"k8s.io/api", "0.32.13"}}},
		Main:     []byte("package main\n\nfunc main() {}\n"),
		GoSum:    []byte("example.com/a v1.0.0 h1:x=\n"),
		Programs: []string{"demo", "demo-ctl"},
	}
}

func TestGoModPinsRequiresAndReplaces(t *testing.T) {
	t.Parallel()
	assert.Equal(t, `module bootlab.local/build/demo

go 1.23

require (
	example.com/a v1.0.0
	example.com/b v2.0.0
)

replace (
	k8s.io/api => k8s.io/api v0.32.13
)
`, string(sample().GoMod()))
}

// Every input of the binary but the toolchain changes where it is cached.
func TestRecipeChangesWithEveryInput(t *testing.T) {
	t.Parallel()
	base := sample()
	seen := map[string]string{base.Recipe(): "base"}
	for name, edit := range map[string]func(*Component){
		"version":  func(c *Component) { c.Version = "1.2.4" },
		"require":  func(c *Component) { c.Requires = []Module{{"example.com/a", "v1.0.1"}} },
		"replace":  func(c *Component) { c.Replaces = nil },
		"main":     func(c *Component) { c.Main = []byte("package main\n") },
		"go.sum":   func(c *Component) { c.GoSum = []byte("other\n") },
		"go line":  func(c *Component) { c.GoVersion = "1.24" },
		"the name": func(c *Component) { c.Name = "other" },
	} {
		c := sample()
		edit(&c)
		r := c.Recipe()
		require.NotContains(t, seen, r, "%s changes nothing", name)
		seen[r] = name
	}
	assert.Equal(t, base.Recipe(), sample().Recipe(), "the recipe is deterministic")
}

func TestCheckRefusesIncompleteComponents(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		edit func(*Component)
		want string
	}{
		"path in name":  {func(c *Component) { c.Name = "../x" }, "plain name"},
		"no version":    {func(c *Component) { c.Version = "" }, "version"},
		"no go.sum":     {func(c *Component) { c.GoSum = nil }, "no pinned go.sum"},
		"no main":       {func(c *Component) { c.Main = nil }, "no main package"},
		"no programs":   {func(c *Component) { c.Programs = nil }, "no program names"},
		"no go version": {func(c *Component) { c.GoVersion = "" }, "no go version"},
	} {
		c := sample()
		tc.edit(&c)
		assert.ErrorContains(t, c.Check(), tc.want, name)
		_, err := Ensure(context.Background(), t.TempDir(), c, nil)
		assert.ErrorContains(t, err, tc.want, name)
	}
}

// A cached binary is returned with its digest and go never runs: PATH
// has no go at all.
func TestEnsureCachedRunsNoGo(t *testing.T) {
	// Not parallel: t.Setenv (PATH) changes the whole process's environment.
	cache := t.TempDir()
	c := sample()
	p := filepath.Join(c.Dir(cache), "demo")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("binary"), 0o755))
	t.Setenv("PATH", t.TempDir())
	b, err := Ensure(context.Background(), cache, c, nil)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte("binary"))
	assert.Equal(t, hex.EncodeToString(sum[:]), b.SHA256)
	assert.Equal(t, p, b.Path)
	assert.False(t, b.Built)
	assert.True(t, strings.HasPrefix(filepath.Base(filepath.Dir(p)), "1.2.3-"))
}

func TestEnsureWithoutGoSaysWhatToInstall(t *testing.T) {
	// Not parallel: t.Setenv (PATH) changes the whole process's environment.
	t.Setenv("PATH", t.TempDir())
	cache := t.TempDir()
	_, err := Ensure(context.Background(), cache, sample(), nil)
	require.ErrorContains(t, err, "demo 1.2.3 is built from the Go module proxy and is not in the cache "+cache)
	assert.ErrorContains(t, err, "install Go")
	assert.ErrorContains(t, err, "bootlab cache import")
}

// A go.sum missing a module go needs fails the build, naming the line and
// how to regenerate: nothing is verified against a sum bootlab did not pin.
func TestNewLines(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"c v1 h1:z"}, newLines([]byte("a v1 h1:x\nb v1 h1:y\n"), []byte("a v1 h1:x\nc v1 h1:z\nb v1 h1:y\n")))
	assert.Empty(t, newLines([]byte("a\nb\n"), []byte("b\na\n")))
}

func TestKubernetesComponentForEveryRelease(t *testing.T) {
	t.Parallel()
	for _, r := range release.All() {
		c, err := Kubernetes(r.Kubernetes)
		if why := kubeSources()[r.Kubernetes].unbuildable; why != "" {
			assert.ErrorContains(t, err, "Kubernetes "+r.Kubernetes+" cannot be built by bootlab: "+why)
			assert.Contains(t, r.KubernetesNote, why, "%s: the release table says why its Kubernetes is not built", r.OpenShift)
			continue
		}
		require.NoError(t, err, "OpenShift %s pins Kubernetes %s", r.OpenShift, r.Kubernetes)
		require.NoError(t, c.Check())
		assert.Equal(t, "hyperkube", c.Programs[0])
		assert.True(t, strings.Contains(string(c.GoSum), "k8s.io/kubernetes v"+r.Kubernetes+" h1:"), "%s: the go.sum pins the module itself", r.OpenShift)
		mod := string(c.GoMod())
		assert.Contains(t, mod, "k8s.io/apiserver => k8s.io/apiserver v0."+strings.TrimPrefix(r.Kubernetes, "1.")+"\n")
		assert.Contains(t, strings.Join(c.buildFlags(), " "), "k8s.io/component-base/version.gitVersion=v"+r.Kubernetes)
		for _, m := range []string{"k8s.io/apiserver", "k8s.io/kubectl", "k8s.io/component-base"} {
			v := "0." + strings.TrimPrefix(r.Kubernetes, "1.")
			if n, ok := kubeSources()[r.Kubernetes].nearest[m]; ok {
				v = n
			}
			assert.True(t, strings.Contains(string(c.GoSum), m+" v"+v+" h1:"), "%s: the go.sum pins %s v%s, whose packages are built", r.OpenShift, m, v)
		}
	}
	for _, bad := range []string{"1.32.99", "1.32", "x"} {
		_, err := Kubernetes(bad)
		assert.ErrorContains(t, err, "is not one bootlab pins", bad)
	}
}

// The staging list follows k8s.io/kubernetes's go.mod: 31 modules from
// 1.32, with cri-client from 1.31 and without legacy-cloud-providers
// after 1.30.
func TestStagingModules(t *testing.T) {
	t.Parallel()
	for minor, want := range map[int]int{29: 30, 30: 30, 31: 30, 32: 31, 35: 31} {
		assert.Len(t, stagingModules(minor), want, "1.%d", minor)
	}
	assert.Contains(t, stagingModules(32), "k8s.io/externaljwt")
	assert.NotContains(t, stagingModules(31), "k8s.io/externaljwt")
	assert.Contains(t, stagingModules(30), "k8s.io/legacy-cloud-providers")
}

// Stamps reach the linker and the recipe; a component without stamps
// keeps the flags (and so the cache directory) it had before stamps.
func TestStampsInFlagsAndRecipe(t *testing.T) {
	t.Parallel()
	c := sample()
	assert.Equal(t, []string{"-trimpath", "-ldflags", "-s -w"}, c.buildFlags())
	before := c.Recipe()
	c.Stamps = []Stamp{{"example.com/v.version", "v1"}}
	assert.Equal(t, []string{"-trimpath", "-ldflags", "-s -w -X example.com/v.version=v1"}, c.buildFlags())
	assert.NotEqual(t, before, c.Recipe())
	c.Stamps = []Stamp{{"example.com/v.version", "v1 -X evil"}}
	assert.ErrorContains(t, c.Check(), "without spaces or quotes")
}

func TestEtcdComponentForEveryRelease(t *testing.T) {
	t.Parallel()
	for _, r := range release.All() {
		c, err := Etcd(r.Etcd.Module)
		require.NoError(t, err, "OpenShift %s pins etcd %s", r.OpenShift, r.Etcd.Module)
		require.NoError(t, c.Check())
		assert.Equal(t, []string{"etcd", "etcdctl"}, c.Programs)
		for _, m := range c.Requires {
			assert.Contains(t, string(c.GoSum), m.Path+" v"+r.Etcd.Module+" h1:", "%s: the go.sum pins the module itself", r.OpenShift)
		}
	}
	_, err := Etcd("3.4.23")
	assert.ErrorContains(t, err, "no pinned go.sum")
}

// TestPinnedSums regenerates sums/ with -update (go mod tidy through the
// module proxy); without it, it checks that every file there is one a
// release pins, so no stale pin lingers.
func TestPinnedSums(t *testing.T) {
	t.Parallel()
	want := map[string]bool{}
	for _, r := range release.All() {
		want["etcd-v"+r.Etcd.Module+".sum"] = true
		if kubeSources()[r.Kubernetes].unbuildable == "" {
			want["kubernetes-v"+r.Kubernetes+".sum"] = true
		}
	}
	if testutil.Updating() {
		for name := range want {
			if *updateOnly != "" && name != *updateOnly {
				continue
			}
			if strings.HasPrefix(name, "kubernetes-") {
				regenerateKubernetes(t, name)
				continue
			}
			regenerate(t, name)
		}
	}
	ents, err := sums.ReadDir("sums")
	require.NoError(t, err)
	have := map[string]bool{}
	for _, e := range ents {
		have[e.Name()] = true
	}
	assert.Equal(t, want, have)
}

func regenerate(t *testing.T, name string) {
	version := strings.TrimSuffix(strings.TrimPrefix(name, "etcd-v"), ".sum")
	c, err := Etcd(version)
	if err != nil { // a new pin: start from no sums
		c = Component{Name: "etcd", Version: version, GoVersion: "1.23", Main: []byte(etcdMain),
			Requires: []Module{{"go.etcd.io/etcd/etcdctl/v3", version}, {"go.etcd.io/etcd/server/v3", version}}}
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), c.GoMod(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), c.Main, 0o644))
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir, tidy.Env = dir, append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := tidy.CombinedOutput()
	require.NoError(t, err, "%s", out)
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("sums", name), sum, 0o644))
}

// regenerateKubernetes writes the smallest go.sum the build needs: the
// sums go adds while loading the main package's imports from an empty
// go.sum (go mod tidy would add the test dependencies of every package too).
func regenerateKubernetes(t *testing.T, name string) {
	version := strings.TrimSuffix(strings.TrimPrefix(name, "kubernetes-v"), ".sum")
	src, ok := kubeSources()[version]
	require.True(t, ok, "Kubernetes %s is pinned in lab/release but not in kubeSources", version)
	minor, err := kubeMinor(version)
	require.NoError(t, err)
	c := kubernetesComponent(version, minor, src)
	dir := t.TempDir()
	for file, data := range map[string][]byte{"go.mod": c.GoMod(), "main.go": c.Main, "go.sum": nil} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), data, 0o644))
	}
	list := exec.Command("go", "list", "-deps", ".")
	list.Dir, list.Env = dir, append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOOS="+targetOS, "GOARCH="+targetArch)
	var stderr bytes.Buffer
	list.Stderr = &stderr
	_, err = list.Output()
	require.NoError(t, err, "Kubernetes %s: %s", version, tail(stderr.String(), 12))
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("sums", name), sum, 0o644))
}

// A link that fails on a //go:linkname the toolchain refuses says so and
// what to do; other failures are passed on as they are.
func TestToolchainHint(t *testing.T) {
	t.Parallel()
	c := sample()
	hint := toolchainHint(c, "link: github.com/x/y: invalid reference to runtime.foo")
	assert.Contains(t, hint, "demo 1.2.3 uses //go:linkname references")
	assert.Contains(t, hint, "first on PATH")
	assert.Empty(t, toolchainHint(c, "main.go:3:2: undefined: x"))
}
