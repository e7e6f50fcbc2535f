package cachecmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/gobuild"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/release"
)

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &out, ErrOut: &errOut}, Status: status.New(&errOut, false)}
	cmd := NewCmdCache(f, nil)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
}

func TestFlags(t *testing.T) {
	var got Options
	var which string
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	cmd := NewCmdCache(f, func(name string, o *Options) error { which, got = name, *o; return nil })
	cmd.SetArgs([]string{"prune", "--cache-dir", "/c", "--home", "/h", "--older-than", "48h", "--dry-run"})
	require.NoError(t, cmd.Execute())
	require.Equal(t, "prune", which)
	require.Equal(t, Options{Dir: "/c", Home: "/h", Output: "table", OlderThan: 48 * time.Hour, DryRun: true, OpenShiftVersion: spec.DefaultOpenShiftVersion}, got)

	cmd.SetArgs([]string{"build", "kubernetes", "--openshift-version", "4.20"})
	require.NoError(t, cmd.Execute())
	require.Equal(t, "build", which)
	require.Equal(t, "kubernetes", got.Program)
	require.Equal(t, "4.20", got.OpenShiftVersion)
	require.Empty(t, got.Source, "neither flag: download when pinned and reachable, else build")
	for flag, want := range map[string]string{"--build": "build", "--download": "download"} {
		cmd := NewCmdCache(f, func(name string, o *Options) error { got = *o; return nil })
		cmd.SetArgs([]string{"build", "etcd", flag})
		require.NoError(t, cmd.Execute())
		require.Equal(t, want, got.Source, flag)
	}
	for args, want := range map[string]string{
		"build kubelet":                             `cache build "kubelet": bootlab gets kubernetes or etcd`,
		"build etcd --build --download":             "--build and --download: choose one",
		"build kubernetes --openshift-version 3.11": "--openshift-version: OpenShift 3.11 has no pinned",
		"build": "",
		"build kubernetes --openshift-version 4.16 --x": "unknown flag",
	} {
		_, _, err := run(t, strings.Fields(args)...)
		require.ErrorContains(t, err, want, args)
	}

	_, _, err := run(t, "list", "-o", "yaml")
	require.ErrorContains(t, err, `-o must be one of [table json], not "yaml"`)
	_, _, err = run(t, "export")
	require.Error(t, err)
}

func TestListJSON(t *testing.T) {
	root := t.TempDir()
	write(t, root, "clients/4.19.0/oc", "oc")
	write(t, root, "gobuild/kubernetes/1.32.13-0123456789abcdef/hyperkube", "elf")
	out, _, err := run(t, "list", "--cache-dir", root, "-o", "json")
	require.NoError(t, err)
	var doc struct {
		Kind      string        `json:"kind"`
		Dir       string        `json:"dir"`
		TotalSize int64         `json:"totalSize"`
		Entries   []cache.Entry `json:"entries"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Equal(t, "CacheList", doc.Kind)
	require.Equal(t, root, doc.Dir)
	require.Equal(t, int64(5), doc.TotalSize)
	require.Len(t, doc.Entries, 2)
	require.Equal(t, cache.KindClient, doc.Entries[0].Kind)
	require.Equal(t, "4.19.0", doc.Entries[0].Version)
	require.Empty(t, doc.Entries[0].Name)
	require.Equal(t, cache.Entry{Kind: cache.KindGoBinary, Name: "kubernetes", Version: "1.32.13"},
		cache.Entry{Kind: doc.Entries[1].Kind, Name: doc.Entries[1].Name, Version: doc.Entries[1].Version})

	out, _, err = run(t, "list", "--cache-dir", root)
	require.NoError(t, err)
	rows := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		rows[f[len(f)-1]] = f[:3]
	}
	require.Equal(t, []string{"KIND", "NAME", "VERSION"}, rows["PATH"])
	require.Equal(t, []string{"client", "-", "4.19.0"}, rows["clients/4.19.0/oc"])
	require.Equal(t, []string{"go-binary", "kubernetes", "1.32.13"}, rows["gobuild/kubernetes/1.32.13-0123456789abcdef/hyperkube"])
}

func TestExportImportTamper(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, a, "probe/0123456789abcdef/vmlinuz", "kernel-bytes")
	file := filepath.Join(t.TempDir(), "cache.tar")
	_, errOut, err := run(t, "export", file, "--cache-dir", a, "--home", t.TempDir())
	require.NoError(t, err, errOut)
	out, _, err := run(t, "import", file, "--cache-dir", b)
	require.NoError(t, err)
	require.Equal(t, "probe/0123456789abcdef/vmlinuz\n", out)

	data, err := os.ReadFile(file)
	require.NoError(t, err)
	i := bytes.Index(data, []byte("kernel-bytes"))
	require.Positive(t, i)
	data[i] = 'K'
	require.NoError(t, os.WriteFile(file, data, 0o644))
	_, _, err = run(t, "import", file, "--cache-dir", c)
	require.ErrorContains(t, err, "probe/0123456789abcdef/vmlinuz has sha256")
	require.NoFileExists(t, filepath.Join(c, "probe/0123456789abcdef/vmlinuz"))
}

func TestExportRefusesALabInsideTheCache(t *testing.T) {
	root := t.TempDir()
	write(t, root, "agent/bootlab-probe", "agent")
	_, _, err := run(t, "export", filepath.Join(t.TempDir(), "c.tar"), "--cache-dir", root, "--home", filepath.Join(root, "home"))
	require.ErrorContains(t, err, "lab directories hold keys and pull secrets")
}

func TestPruneKeepsWhatLabsBoot(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	for _, h := range []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"} {
		write(t, root, "probe/"+h+"/vmlinuz", "k")
		write(t, root, "probe/"+h+"/initramfs.img", "i")
	}
	used := filepath.Join(root, "probe", "aaaaaaaaaaaaaaaa")
	s := &spec.Spec{Name: "p1", Profile: spec.ProfileProbe, Topology: spec.Topology{Masters: 1},
		Network: spec.Network{CIDR: "10.77.0.0/24"}, LabDir: filepath.Join(home, "labs", "p1"),
		Image: spec.Image{Kernel: filepath.Join(used, "vmlinuz"), Initrd: filepath.Join(used, "initramfs.img")}}
	s.Defaults()
	require.NoError(t, (&labdir.State{Spec: s}).Save(s.LabDir))

	out, errOut, err := run(t, "prune", "--cache-dir", root, "--home", home, "--dry-run")
	require.NoError(t, err)
	require.Contains(t, out, filepath.Join(root, "probe", "bbbbbbbbbbbbbbbb"))
	require.NotContains(t, out, "aaaaaaaaaaaaaaaa")
	require.Contains(t, errOut, "would remove 1 probe image(s)")
	require.DirExists(t, filepath.Join(root, "probe", "bbbbbbbbbbbbbbbb"))

	_, _, err = run(t, "prune", "--cache-dir", root, "--home", home)
	require.NoError(t, err)
	require.NoDirExists(t, filepath.Join(root, "probe", "bbbbbbbbbbbbbbbb"))
	require.DirExists(t, used)
}

// A cached build is found and printed with no go on PATH, saying it was
// built before; a release whose Kubernetes can be neither downloaded (no
// checksums pinned) nor built says why before anything runs; --download
// refuses what it cannot check.
func TestBuildCachedRunsNoGo(t *testing.T) {
	root := t.TempDir()
	rel, err := release.For("4.19")
	require.NoError(t, err)
	c, err := gobuild.Kubernetes(rel.Kubernetes)
	require.NoError(t, err)
	bin := filepath.Join(c.Dir(root), "hyperkube")
	write(t, root, strings.TrimPrefix(bin, root+"/"), "elf")
	t.Setenv("PATH", t.TempDir())
	out, errOut, err := run(t, "build", "kubernetes", "--openshift-version", "4.19", "--cache-dir", root, "--build")
	require.NoError(t, err)
	require.Equal(t, bin+"\n", out)
	require.Contains(t, errOut, "cached: built from the Go module proxy before; nothing downloaded or built")

	_, _, err = run(t, "build", "kubernetes", "--openshift-version", "4.16", "--cache-dir", root, "--build")
	require.ErrorContains(t, err, "kubernetes 1.29.6 is built from the Go module proxy and is not in the cache "+root)
	_, _, err = run(t, "build", "etcd", "--openshift-version", "4.19", "--cache-dir", root, "--build")
	require.ErrorContains(t, err, "etcd 3.5.21 is built from the Go module proxy and is not in the cache "+root)
	_, _, err = run(t, "build", "etcd", "--openshift-version", "4.19", "--cache-dir", root, "--download")
	require.ErrorContains(t, err, "OpenShift 4.19: etcd 3.5.26 cannot be downloaded: lab/release/checksums.txt pins no checksum for etcd-v3.5.26-linux-amd64.tar.gz")
}
