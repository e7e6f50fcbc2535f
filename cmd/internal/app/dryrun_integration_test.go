//go:build integration

package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab"
)

// libvirtSnapshot lists the names of every network, pool and domain (with
// its run state) of uri, and the snapshots of each domain, of the labs these
// tests make (bootlab-h21*). Other tests and labs share the daemon and may
// change or delete their own objects meanwhile (go test runs packages side by
// side), so nothing of theirs is looked up further: a domain listed and then
// undefined by another package's test would fail the snapshot lookup.
func libvirtSnapshot(t *testing.T, uri string) []string {
	t.Helper()
	const ours = "bootlab-h21"
	ctx := context.Background()
	hv, err := lab.ConnectLibvirt(ctx, uri, nil)
	require.NoError(t, err)
	defer hv.Close()
	var out []string
	nets, err := hv.Networks(ctx)
	require.NoError(t, err)
	for _, n := range nets {
		if strings.HasPrefix(n.Name, ours) {
			out = append(out, "network "+n.Name)
		}
	}
	pools, err := hv.Pools(ctx)
	require.NoError(t, err)
	for _, p := range pools {
		if !strings.HasPrefix(p.Name, ours) {
			continue
		}
		out = append(out, fmt.Sprintf("pool %s active=%v", p.Name, p.Active))
		vols, err := hv.Volumes(ctx, p.Name)
		if err == nil {
			for _, v := range vols {
				out = append(out, "volume "+p.Name+"/"+v.Name)
			}
		}
	}
	doms, err := hv.Domains(ctx)
	require.NoError(t, err)
	for _, d := range doms {
		if !strings.HasPrefix(d.Name, ours) {
			continue
		}
		out = append(out, fmt.Sprintf("domain %s active=%v", d.Name, d.Active))
		snaps, err := hv.Snapshots(ctx, d.Name)
		require.NoError(t, err)
		for _, s := range snaps {
			out = append(out, "snapshot "+d.Name+"/"+s.Name)
		}
	}
	sort.Strings(out)
	return out
}

// dryRunEnv is a bootlab home, cache and pool directory of the test's own,
// and a kernel and initrd so a probe lab builds without the probe image.
type dryRunEnv struct {
	home, cache, pools, boot string
}

func newDryRunEnv(t *testing.T) dryRunEnv {
	t.Helper()
	// libvirtd keeps test:///default's objects only while a connection to
	// it is open: this one keeps them across the commands' own connections.
	hv, err := lab.ConnectLibvirt(context.Background(), "test:///default", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = hv.Close() })
	e := dryRunEnv{home: t.TempDir(), cache: t.TempDir(), pools: t.TempDir(), boot: t.TempDir()}
	t.Setenv("BOOTLAB_HOME", e.home)
	t.Setenv("BOOTLAB_CACHE", e.cache)
	t.Setenv(cmdutil.EnvLab, "")
	for _, f := range []string{"vmlinuz", "initrd"} {
		require.NoError(t, os.WriteFile(filepath.Join(e.boot, f), []byte(f), 0o644))
	}
	return e
}

func (e dryRunEnv) roots() []string { return []string{e.home, e.cache, e.pools} }

// spec writes a probe lab spec on test:///default; image adds the boot files.
func (e dryRunEnv) spec(t *testing.T, name, cidr string, image bool) string {
	t.Helper()
	y := fmt.Sprintf("name: %s\nprofile: probe\naccelerator: tcg\nlibvirt: {uri: \"test:///default\"}\nnetwork: {cidr: %s}\n"+
		"topology: {masters: 1, workers: 0}\nstorage: {poolDir: %s}\n", name, cidr, filepath.Join(e.pools, name))
	if image {
		y += fmt.Sprintf("image: {kernel: %s, initrd: %s}\n", filepath.Join(e.boot, "vmlinuz"), filepath.Join(e.boot, "initrd"))
	}
	p := filepath.Join(t.TempDir(), name+".yaml")
	require.NoError(t, os.WriteFile(p, []byte(y), 0o644))
	return p
}

// `lab up --dry-run` of a lab never built writes nothing (no lab directory,
// no lock, no key, no cache) and defines nothing in libvirt, while its plan
// names everything up would make, the probe image build included.
func TestUpDryRunWritesNothing(t *testing.T) {
	e := newDryRunEnv(t)
	spec := e.spec(t, "h21dry-new", "10.239.1.0/24", false)
	fsBefore, lvBefore := testutil.Tree(t, e.roots()...), libvirtSnapshot(t, "test:///default")

	code, out, errOut := run(t, "lab", "up", "--dry-run", "-f", spec)
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	for _, want := range []string{"sshKey", "pki", "probeImage", "would build: no probe image is cached", "ignition",
		"define    network      bootlab-h21dry-new", "define    domain       bootlab-h21dry-new-master-0"} {
		assert.Contains(t, out, want)
	}
	code, out, errOut = run(t, "lab", "up", "--dry-run", "-f", spec, "-o", "json")
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	assert.Contains(t, out, `"kind": "UpPlan"`)
	assert.Equal(t, fsBefore, testutil.Tree(t, e.roots()...), "a dry run writes nothing")

	// A lab directory that exists (made by hand, or kept by down) gets no lock either.
	labDir := filepath.Join(e.home, "labs", "h21dry-new")
	require.NoError(t, os.MkdirAll(labDir, 0o755))
	fsBefore = testutil.Tree(t, e.roots()...)
	code, _, errOut = run(t, "lab", "up", "--dry-run", "-f", spec)
	require.Equal(t, cmdutil.ExitOK, code, errOut)

	assert.Equal(t, fsBefore, testutil.Tree(t, e.roots()...), "a dry run writes nothing")
	assert.NoFileExists(t, filepath.Join(labDir, "lock"))
	assert.Equal(t, lvBefore, libvirtSnapshot(t, "test:///default"), "a dry run defines nothing in libvirt")
}

// Every destructive verb's --dry-run prints what it would remove or change
// and changes neither a file nor a libvirt object; class down asks first.
func TestDestructiveDryRunsChangeNothing(t *testing.T) {
	e := newDryRunEnv(t)
	const uri = "test:///default"
	spec := e.spec(t, "h21dry-built", "10.239.2.0/24", true)
	code, _, errOut := run(t, "lab", "up", "-f", spec, "--no-preflight")
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	t.Cleanup(func() { run(t, "lab", "down", "-f", spec) })
	code, _, errOut = run(t, "lab", "checkpoint", "save", "start", "-f", spec)
	require.Equal(t, cmdutil.ExitOK, code, errOut)

	classDir := t.TempDir()
	classSpec := filepath.Join(classDir, "class.yaml")
	require.NoError(t, os.WriteFile(classSpec, []byte(fmt.Sprintf(`name: h21c
template:
  profile: probe
  accelerator: tcg
  libvirt: {uri: "test:///default"}
  image: {kernel: %s, initrd: %s}
  topology: {masters: 1, workers: 0}
learners: [ann]
addressPool: 10.239.8.0/24
`, filepath.Join(e.boot, "vmlinuz"), filepath.Join(e.boot, "initrd"))), 0o644))
	code, _, errOut = run(t, "class", "up", "-f", classSpec, "--no-preflight")
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	t.Cleanup(func() { run(t, "class", "down", "--name", "h21c", "--yes") })

	archive := filepath.Join(t.TempDir(), "cache.tar")
	probeDir := filepath.Join(e.cache, "probe", "0123456789abcdef")
	require.NoError(t, os.MkdirAll(probeDir, 0o755))
	for _, f := range []string{"vmlinuz", "initramfs.img", "base.qcow2"} {
		require.NoError(t, os.WriteFile(filepath.Join(probeDir, f), []byte(f), 0o644))
	}
	code, _, errOut = run(t, "cache", "export", archive)
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	otherCache := filepath.Join(t.TempDir(), "other-cache")

	fsBefore := testutil.Tree(t, append(e.roots(), filepath.Dir(otherCache))...)
	lvBefore := libvirtSnapshot(t, uri)
	require.Contains(t, lvBefore, "snapshot bootlab-h21dry-built-master-0/bootlab-start")

	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lab", "up", "--dry-run", "-f", spec}, cmdutil.ExitOK, "nothing to change: lab h21dry-built already matches the spec"},
		{[]string{"lab", "down", "--dry-run", "-f", spec}, cmdutil.ExitOK, "remove    domain       bootlab-h21dry-built-master-0"},
		{[]string{"lab", "down", "--dry-run", "--all"}, cmdutil.ExitOK, "remove    network      bootlab-h21c-ann"},
		{[]string{"lab", "checkpoint", "restore", "start", "--dry-run", "-f", spec}, cmdutil.ExitOK, "revert    snapshot     bootlab-h21dry-built-master-0/bootlab-start"},
		{[]string{"lab", "checkpoint", "delete", "start", "--dry-run", "-f", spec}, cmdutil.ExitOK, "remove    snapshot     bootlab-h21dry-built-master-0/bootlab-start"},
		{[]string{"lab", "checkpoint", "restore", "nosuch", "--dry-run", "-f", spec}, cmdutil.ExitError, "has no checkpoint nosuch"},
		{[]string{"class", "down", "--dry-run", "--name", "h21c"}, cmdutil.ExitOK, "remove    domain       bootlab-h21c-ann-master-0"},
		{[]string{"class", "down", "--name", "h21c"}, cmdutil.ExitUsage, "pass --yes to confirm when not at a terminal"},
		{[]string{"class", "reset", "ann", "--dry-run", "--name", "h21c"}, cmdutil.ExitOK, "built again from its spec"},
		{[]string{"cache", "import", "--dry-run", "--cache-dir", otherCache, archive}, cmdutil.ExitOK, "probe/0123456789abcdef/vmlinuz"},
		{[]string{"cache", "prune", "--dry-run"}, cmdutil.ExitOK, probeDir},
	}
	for _, tc := range cases {
		code, out, errOut := run(t, tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, out+errOut, tc.want, "%v", tc.args)
		assert.Equal(t, fsBefore, testutil.Tree(t, append(e.roots(), filepath.Dir(otherCache))...), "%v wrote nothing", tc.args)
		assert.Equal(t, lvBefore, libvirtSnapshot(t, uri), "%v changed nothing in libvirt", tc.args)
	}
}

// A bridge that already exists on the host (its uplink) is refused by the
// dry run exactly as by preflight, before anything is made: up runs the
// same check. This needs the host's own libvirt: the test driver makes no
// host bridge, so nothing collides there.
func TestUpDryRunRefusesTheHostsUplinkAsBridge(t *testing.T) {
	e := newDryRunEnv(t)
	const uri = "qemu:///system"
	uplink := defaultRouteDev(t)
	y := fmt.Sprintf("name: h21dry-eth\nprofile: probe\naccelerator: tcg\nlibvirt: {uri: %q}\nnetwork: {cidr: 10.239.3.0/24, bridge: %s}\n"+
		"topology: {masters: 1, workers: 0}\nstorage: {poolDir: %s}\n", uri, uplink, filepath.Join(e.pools, "eth"))
	spec := filepath.Join(t.TempDir(), "eth.yaml")
	require.NoError(t, os.WriteFile(spec, []byte(y), 0o644))
	fsBefore, lvBefore := testutil.Tree(t, e.roots()...), libvirtSnapshot(t, uri)

	code, _, dryErr := run(t, "lab", "up", "--dry-run", "-f", spec)
	assert.Equal(t, cmdutil.ExitInvalid, code, dryErr)
	assert.Contains(t, dryErr, "network.bridge: "+uplink+" is already an interface of this host and not this lab's bridge")
	pcode, pOut, pErr := run(t, "lab", "preflight", "-f", spec)
	assert.Equal(t, code, pcode, pErr)
	assert.Contains(t, pOut+pErr, "network.bridge: "+uplink+" is already an interface")

	assert.Equal(t, fsBefore, testutil.Tree(t, e.roots()...))
	assert.Equal(t, lvBefore, libvirtSnapshot(t, uri))
}

// defaultRouteDev is the interface of the host's default route (eth0 on
// the test machine), or lo on a host without one.
func defaultRouteDev(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/net/route")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 7 && f[1] == "00000000" && f[7] == "00000000" {
			return f[0]
		}
	}
	return "lo"
}
