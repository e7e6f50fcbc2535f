package class

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/preflight"
	"github.com/bootlab/bootlab/lab/spec"
)

const fixtureDir = "../../testdata/classes"

// fakeHome fixes the bootlab home, so lab directories in goldens do not
// depend on who runs the test.
const fakeHome = "/home/trainer/bootlab"

// loadFixture reads a class fixture and the fake hosts its header
// comments declare: "# host-routes: PREFIX DEV", "# libvirt-networks: NAME
// PREFIX BRIDGE", "# lab: NAME CIDR [CLASS [URI]]" (a lab on the host,
// built), "# mem-available-mib: N", "# disk-free-gib: N" (without them
// capacity is not checked) for a class without hosts; for one with hosts,
// "# host: NAME mem-mib=N disk-gib=N cpus=N" or "# host: NAME down" per
// host (a host not named is reachable and not measured) and "# placed:
// LAB HOST" for a lab an earlier class up placed.
func loadFixture(t *testing.T, name string) (*Spec, Facts, error) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtureDir, name))
	require.NoError(t, err)
	var host Host
	var facts Facts
	var memMiB, diskGiB uint64
	for _, line := range strings.Split(string(raw), "\n") {
		key, val, ok := strings.Cut(strings.TrimPrefix(line, "# "), ": ")
		if !ok || !strings.HasPrefix(line, "# ") {
			continue
		}
		f := strings.Fields(val)
		switch key {
		case "host-routes":
			host.Routes = append(host.Routes, preflight.HostRoute{Prefix: netip.MustParsePrefix(f[0]), Dev: f[1]})
		case "libvirt-networks":
			host.Networks = append(host.Networks, hypervisor.NetworkInfo{Name: f[0], Prefixes: []netip.Prefix{netip.MustParsePrefix(f[1])}, Bridge: f[2]})
		case "lab":
			s := &spec.Spec{Name: f[0], Network: spec.Network{CIDR: f[1]}}
			if len(f) > 3 {
				s.Libvirt.URI = f[3]
			}
			s.Defaults()
			st := &labdir.State{Name: f[0], Spec: s}
			if len(f) > 2 {
				st.Class = f[2]
			}
			facts.Labs = append(facts.Labs, labdir.Ref{Name: f[0], Dir: s.LabDir, State: st})
			host.Networks = append(host.Networks, hypervisor.NetworkInfo{Name: s.NetworkName(), Prefixes: []netip.Prefix{netip.MustParsePrefix(f[1])}, Bridge: s.Network.Bridge})
			host.Routes = append(host.Routes, preflight.HostRoute{Prefix: netip.MustParsePrefix(f[1]), Dev: s.Network.Bridge})
		case "mem-available-mib":
			memMiB, _ = strconv.ParseUint(val, 10, 64)
		case "disk-free-gib":
			diskGiB, _ = strconv.ParseUint(val, 10, 64)
		case "host":
			h := Host{Name: f[0]}
			if len(f) > 1 && f[1] == "down" {
				h.Err = errors.New("dial tcp " + f[0] + ":22: connect: connection refused")
			} else {
				h.Capacity = &Capacity{DiskDir: "/var/lib/libvirt/images", CPUs: 8}
				for _, kv := range f[1:] {
					k, v, _ := strings.Cut(kv, "=")
					n, _ := strconv.ParseUint(v, 10, 64)
					switch k {
					case "mem-mib":
						h.Capacity.MemoryBytes, h.Capacity.MemoryTotalBytes = n<<20, n<<20
					case "disk-gib":
						h.Capacity.DiskBytes = n << 30
					case "cpus":
						h.Capacity.CPUs = int(n)
					}
				}
			}
			facts.Hosts = append(facts.Hosts, h)
		case "placed":
			if facts.Placed == nil {
				facts.Placed = map[string]string{}
			}
			facts.Placed[f[0]] = f[1]
		}
	}
	if memMiB > 0 {
		host.Capacity = &Capacity{MemoryBytes: memMiB << 20, DiskBytes: diskGiB << 30, DiskDir: "/var/lib/libvirt/images"}
	}
	// The machine's own routes and networks count on every host.
	if len(facts.Hosts) == 0 {
		facts.Hosts = []Host{host}
	} else {
		facts.Hosts = append(facts.Hosts, Host{Routes: host.Routes, Networks: host.Networks})
	}
	c, err := Parse(raw, name)
	return c, facts, err
}

func expandFixture(t *testing.T, name string) (*Plan, error) {
	t.Helper()
	c, facts, err := loadFixture(t, name)
	if err != nil {
		return nil, err
	}
	return Expand(c, name, facts)
}

// Every valid fixture expands, and its labs' effective specs are the golden.
func TestValidFixtures(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_HOME) changes the whole process's environment.
	t.Setenv("BOOTLAB_HOME", fakeHome)
	files, err := filepath.Glob(filepath.Join(fixtureDir, "valid-*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			plan, err := expandFixture(t, name)
			require.NoError(t, err)
			got, err := plan.Marshal()
			require.NoError(t, err)
			testutil.Golden(t, strings.TrimSuffix(f, ".yaml")+".golden", got)
		})
	}
}

// Every invalid fixture is refused with exactly the message in its .err
// golden, before anything could be created (Expand only reads).
func TestInvalidFixtures(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_HOME) changes the whole process's environment.
	t.Setenv("BOOTLAB_HOME", fakeHome)
	files, err := filepath.Glob(filepath.Join(fixtureDir, "invalid-*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			_, err := expandFixture(t, name)
			require.Error(t, err, "fixture must be refused")
			var ve *spec.ValidationError
			require.ErrorAs(t, err, &ve, "a class error is a validation error (exit 3)")
			got := err.Error() + "\n"
			testutil.Golden(t, strings.TrimSuffix(f, ".yaml")+".err", []byte(got))
		})
	}
}

func TestLabsAreDistinct(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_HOME) changes the whole process's environment.
	t.Setenv("BOOTLAB_HOME", fakeHome)
	plan, err := expandFixture(t, "valid-workshop.yaml")
	require.NoError(t, err)
	require.Len(t, plan.Labs, 3)
	seen := map[string]string{}
	for _, l := range plan.Labs {
		s := l.Spec
		assert.Equal(t, "ws-"+l.Learner, s.Name)
		for _, v := range []string{s.Network.CIDR, s.Network.Bridge, s.Network.APIAddress, s.LabDir, s.Storage.PoolDir} {
			assert.Empty(t, seen[v], "%s of %s is also %s's", v, s.Name, seen[v])
			seen[v] = s.Name
		}
		for _, n := range s.Nodes {
			assert.Empty(t, seen[n.MAC])
			seen[n.MAC] = s.Name
		}
	}
	// The routed 192.168.128.0/24 is skipped; the rest are carved in order.
	assert.Equal(t, "192.168.129.0/24", plan.Labs[0].Spec.Network.CIDR)
	assert.Equal(t, "192.168.131.0/24", plan.Labs[2].Spec.Network.CIDR)
	assert.True(t, plan.Labs[2].Spec.Rehearsal(), "carol's override makes her lab a rehearsal lab")
	assert.False(t, plan.Labs[0].Spec.Rehearsal())
}

// A built lab of the class keeps its network; the others avoid it.
func TestBuiltLabKeepsItsNetwork(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_HOME) changes the whole process's environment.
	t.Setenv("BOOTLAB_HOME", fakeHome)
	plan, err := expandFixture(t, "valid-count.yaml")
	require.NoError(t, err)
	got := map[string]string{}
	for _, l := range plan.Labs {
		got[l.Learner] = l.Spec.Network.CIDR
	}
	assert.Equal(t, map[string]string{"learner-1": "192.168.128.0/24", "learner-2": "192.168.140.0/24", "learner-3": "192.168.130.0/24"}, got)
	l, ok := plan.Lab("learner-2")
	require.True(t, ok)
	assert.True(t, l.Built)
}

func TestTemplateIsNotChangedByOverrides(t *testing.T) {
	t.Parallel()
	c := &Spec{Name: "ws", Template: map[string]any{"topology": map[string]any{"masters": 1, "workers": 0}},
		Learners:  Learners{Names: []string{"a", "b"}, listed: true},
		Overrides: map[string]map[string]any{"a": {"topology": map[string]any{"workers": 2}}}}
	plan, err := Expand(c, "class.yaml", Facts{})
	require.NoError(t, err)
	assert.Equal(t, spec.Topology{Masters: 1, Workers: 2}, plan.Labs[0].Spec.Topology)
	assert.Equal(t, spec.Topology{Masters: 1, Workers: 0}, plan.Labs[1].Spec.Topology)
}

// Each runs at most parallel at once, and one failure stops nobody.
func TestEachBoundsParallelismAndKeepsGoing(t *testing.T) {
	t.Parallel()
	var labs []Lab
	for i := 0; i < 6; i++ {
		labs = append(labs, Lab{Learner: fmt.Sprint(i), Spec: &spec.Spec{Name: fmt.Sprint("c-", i)}})
	}
	var running, peak atomic.Int32
	rs := Each(context.Background(), labs, 2, func(ctx context.Context, l Lab) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		if l.Learner == "1" {
			return errors.New("disk full")
		}
		return nil
	})
	assert.Equal(t, int32(2), peak.Load())
	require.Len(t, rs, 6)
	failed := Failed(rs)
	require.Len(t, failed, 1)
	assert.Equal(t, "c-1", failed[0].Lab)
	assert.EqualError(t, Summary("class up", rs), "class up failed for 1 of 6 labs:\n  c-1 (learner 1): disk full")
	assert.NoError(t, Summary("class up", rs[2:]))
}

func TestHandoutHasTheLabsFilesAndCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := &spec.Spec{Name: "ws-alice", LabDir: filepath.Join(dir, "lab"), Network: spec.Network{CIDR: "10.9.0.0/24"}}
	s.Defaults()
	require.NoError(t, os.MkdirAll(filepath.Dir(labdir.SSHKey(s)), 0o700))
	require.NoError(t, os.WriteFile(labdir.SSHKey(s), []byte("PRIVATE"), 0o600))
	require.NoError(t, os.WriteFile(labdir.SSHKey(s)+".pub", []byte("ssh-ed25519 AAAA"), 0o644))
	out := filepath.Join(dir, "handouts", "alice")
	require.NoError(t, WriteHandout(out, "ws", "alice", "", s))

	fi, err := os.Stat(filepath.Join(out, HandoutKey))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the key is 0600")
	_, err = os.Stat(filepath.Join(out, HandoutKubecfg))
	assert.True(t, errors.Is(err, os.ErrNotExist), "a probe lab has no kubeconfig")
	readme, err := os.ReadFile(filepath.Join(out, HandoutReadme))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "export BOOTLAB_LAB=ws-alice")
	assert.Contains(t, string(readme), "bootlab lab verify --name ws-alice")
	assert.NotContains(t, string(readme), "stage run", "a probe lab without manual bootstrap has no stages to run")
	spec, err := spec.Load(filepath.Join(out, HandoutSpec))
	require.NoError(t, err)
	assert.Equal(t, "ws-alice", spec.Name)
	addrs, err := os.ReadFile(filepath.Join(out, HandoutAddresses))
	require.NoError(t, err)
	assert.Contains(t, string(addrs), "10.9.0.10")
}

// Real labs each get their own cluster domain (host DNS claims it); probe
// labs keep the template's, which only their own dnsmasq serves.
func TestOpenShiftLabsGetTheirOwnDomain(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_HOME) changes the whole process's environment.
	t.Setenv("BOOTLAB_HOME", fakeHome)
	secret := filepath.Join(t.TempDir(), "pull-secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}`), 0o600))
	c := &Spec{Name: "ocp", Template: map[string]any{"profile": "openshift", "openshift": map[string]any{"pullSecretFile": secret}},
		Learners: Learners{Count: 2}}
	plan, err := Expand(c, "class.yaml", Facts{})
	require.NoError(t, err)
	assert.Equal(t, "learner-1.lab.local", plan.Labs[0].Spec.Cluster.Domain())
	assert.Equal(t, "learner-2.lab.local", plan.Labs[1].Spec.Cluster.Domain())

	c.Template["cluster"] = map[string]any{"name": "same"}
	_, err = Expand(c, "class.yaml", Facts{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lab ocp-learner-2: cluster.name: same.lab.local is also cluster.name of lab ocp-learner-1")
}

// A count out of range is a field error, never a makeslice panic.
func TestLearnerCountsOutOfRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		learners string
		want     string
	}{
		{"-3", "learners: -3: give a count of at least 1"},
		{"-9223372036854775808", "give a count of at least 1"},
		{"9223372036854775807", "a class has at most 1000 learners"},
	} {
		c, err := Parse([]byte("name: ws\ntemplate: {}\nlearners: "+tc.learners+"\n"), "c.yaml")
		require.NoError(t, err)
		assert.NotPanics(t, func() { assert.Empty(t, c.Learners.List()) })
		assert.ErrorContains(t, c.Check("c.yaml"), tc.want)
		_, err = Expand(c, "c.yaml", Facts{})
		assert.ErrorContains(t, err, tc.want)
	}
}

// Check refuses what an override must not set, without a host to look at.
func TestCheckRefusesHostFieldsInOverrides(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("name: ws\ntemplate: {}\nlearners: [alice]\noverrides:\n  alice:\n    network: {bridge: eth0}\n"), "c.yaml")
	require.NoError(t, err)
	err = c.Check("c.yaml")
	var ve *spec.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Errs, 1)
	assert.Equal(t, "overrides.alice.network.bridge", ve.Errs[0].Field)
	assert.Contains(t, ve.Errs[0].Msg, "a host interface such as eth0: leave it out")
}

// A lab cut short keeps the network its build made (found by the UUID its
// state recorded), though its bridge already routes it on its host, and
// stays on the host it was placed on: class up again goes on with it.
func TestCutShortLabKeepsItsNetworkAndHost(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_HOME) changes the whole process's environment.
	t.Setenv("BOOTLAB_HOME", fakeHome)
	c, err := Parse([]byte("name: ws\ntemplate: {}\nlearners: [ann, ben]\naddressPool: 10.9.0.0/22\nhosts:\n  - {name: rack1, uri: \"qemu:///system\"}\n  - {name: rack2, uri: \"qemu+ssh://root@rack2/system\"}\nplacement: pack\n"), "c.yaml")
	require.NoError(t, err)
	ben := &spec.Spec{Name: "ws-ben"}
	ben.Defaults()
	facts := Facts{
		Labs:   []labdir.Ref{{Name: "ws-ben", Dir: ben.LabDir, State: &labdir.State{Name: "ws-ben", Class: "ws", NetworkUUID: "net-uuid"}}},
		Placed: map[string]string{"ws-ben": "rack2"},
		Hosts: []Host{{Name: "rack1"}, {
			Name:     "rack2",
			Networks: []hypervisor.NetworkInfo{{Name: "bootlab-ws-ben", UUID: "net-uuid", Bridge: ben.Network.Bridge, Prefixes: []netip.Prefix{netip.MustParsePrefix("10.9.2.0/24")}}},
			Routes:   []preflight.HostRoute{{Prefix: netip.MustParsePrefix("10.9.2.0/24"), Dev: ben.Network.Bridge}},
		}},
	}
	plan, err := Expand(c, "c.yaml", facts)
	require.NoError(t, err)
	l, ok := plan.Lab("ben")
	require.True(t, ok)
	assert.Equal(t, "10.9.2.0/24", l.Spec.Network.CIDR)
	assert.Equal(t, "rack2", l.Host, "pack would put it on rack1: it stays where it was placed")
	assert.False(t, l.Built)
	a, _ := plan.Lab("ann")
	assert.Equal(t, "10.9.0.0/24", a.Spec.Network.CIDR)
	assert.Equal(t, "rack1", a.Host)
}
