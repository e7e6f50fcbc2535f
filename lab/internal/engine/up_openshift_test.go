package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// The OpenShift profile's up on the shared fake hypervisor: what the
// integration test checks against libvirtd, here without one, so every
// step of the UPI build (network, pool, RHCOS base volume, overlays,
// Ignition through fw_cfg, haproxy) has a fast test that names the step.

// openshiftSpec is a 1+3+2 OpenShift lab whose preparer has run: an RHCOS
// qcow2 (a header only) and one Ignition file per node in the lab directory.
func openshiftSpec(t *testing.T) *spec.Spec {
	t.Helper()
	s := testSpec(t, "ocp", true)
	s.Profile = spec.ProfileOpenShift
	s.OpenShift.PullSecretFile = filepath.Join(t.TempDir(), "pull-secret.json")
	s.Topology = spec.Topology{Masters: 3, Workers: 2}
	s.Nodes = nil
	s.Network.Mode = ""
	s.Defaults()
	for _, n := range s.Nodes {
		// The bootstrap gets the full config, the others a pointer to the MCS.
		ign := `{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://api-int.` + s.Cluster.Domain() + `:22623/config/` + string(n.Role) + `"}]}}}`
		if n.Role == spec.RoleBootstrap {
			ign = `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/usr/local/bin/bootkube.sh"}]}}`
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(labdir.Ignition(s, n)), 0o755))
		require.NoError(t, os.WriteFile(labdir.Ignition(s, n), []byte(ign), 0o600))
	}
	return s
}

// haproxyMachine answers, on m, the commands lab sends to the hypervisor's
// machine as one with haproxy installed and a libvirt-qemu user would:
// haproxy -c accepts, mv installs, haproxy -D "starts" by writing the pid
// file and the /proc entries runningPID reads. Any other command fails the
// test, so a new command the up flow sends is noticed here.
type haproxyMachine struct {
	t  *testing.T
	m  *fake.Machine
	mu sync.Mutex
	// starts are the argv of every haproxy start or reload, in order.
	starts [][]string
	pid    int
}

const libvirtQEMUUID = 64055

func newHAProxyMachine(t *testing.T, hv *fake.Hypervisor) *haproxyMachine {
	h := &haproxyMachine{t: t, m: hv.Machine, pid: 4000}
	hv.Machine.Respond = h.respond
	return h
}

func (h *haproxyMachine) respond(cmd string, stdout io.Writer) int {
	ctx := context.Background()
	if strings.HasPrefix(cmd, "for u in libvirt-qemu qemu;") {
		fmt.Fprintf(stdout, "%d %d\n", libvirtQEMUUID, libvirtQEMUUID)
		return 0
	}
	argv := strings.Fields(strings.TrimSuffix(cmd, " 2>&1"))
	for i, a := range argv {
		argv[i] = strings.Trim(a, "'")
	}
	switch {
	case len(argv) == 3 && argv[0] == "command" && (argv[2] == "haproxy" || argv[2] == "/usr/sbin/haproxy"):
		fmt.Fprintln(stdout, "/usr/sbin/haproxy")
		return 0
	case argv[0] == "rm":
		return 0
	case len(argv) == 4 && argv[0] == "ls" && argv[1] == "-A":
		// The pool directory Build checks does not exist yet.
		return 2
	case argv[0] == "mv" && len(argv) == 5:
		data, err := h.m.ReadFile(ctx, argv[3])
		if err != nil {
			fmt.Fprintln(stdout, err)
			return 1
		}
		require.NoError(h.t, h.m.WriteFile(ctx, argv[4], data, 0o644))
		return 0
	case argv[0] == "/usr/sbin/haproxy" && len(argv) == 4 && argv[1] == "-c":
		if _, err := h.m.ReadFile(ctx, argv[3]); err != nil {
			fmt.Fprintln(stdout, err)
			return 1
		}
		return 0
	case argv[0] == "/usr/sbin/haproxy" && len(argv) >= 6 && argv[1] == "-D":
		h.mu.Lock()
		h.pid++
		pid := h.pid
		h.starts = append(h.starts, argv)
		h.mu.Unlock()
		proc := fmt.Sprintf("/proc/%d/", pid)
		require.NoError(h.t, h.m.WriteFile(ctx, argv[5], []byte(fmt.Sprintf("%d\n", pid)), 0o644))
		require.NoError(h.t, h.m.WriteFile(ctx, proc+"cmdline", []byte(strings.Join(argv, "\x00")+"\x00"), 0o444))
		// A stat line as the kernel writes it (state S, its times after).
		stat := fmt.Sprintf("%d (haproxy) S 1 %d %d 0 -1 4194624 300 0 0 0 12 5 0 0 20 0 1 0 100 10000000 2000\n", pid, pid, pid)
		require.NoError(h.t, h.m.WriteFile(ctx, proc+"stat", []byte(stat), 0o444))
		return 0
	}
	h.t.Errorf("the fake hypervisor machine got an unexpected command: %q", cmd)
	return 127
}

func (h *haproxyMachine) startArgs() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]string(nil), h.starts...)
}

// One up builds the whole UPI lab; a second finds it built and changes
// nothing, haproxy included.
func TestUpOpenShiftBuildsTheUPILab(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	lb := newHAProxyMachine(t, hv)
	s := openshiftSpec(t)
	require.Len(t, s.Nodes, 6)

	res, err := Up(ctx, hv, s, UpOptions{Accelerator: spec.AccelKVM})
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, spec.AccelKVM, res.Accelerator)
	calls := hv.Mutations()
	for _, c := range []string{"DefineNetwork bootlab-ocp", "StartNetwork bootlab-ocp", "DefinePool bootlab-ocp",
		"StartPool bootlab-ocp", "UploadVolume bootlab-ocp/base.qcow2"} {
		assert.Equal(t, 1, countPrefix(calls, c), c)
	}
	assert.Equal(t, 1+len(s.Nodes)+len(s.Nodes), countPrefix(calls, "CreateVolume bootlab-ocp/"),
		"the RHCOS base, one overlay and one Ignition volume per node")
	assert.Equal(t, len(s.Nodes), countPrefix(calls, "UploadVolume bootlab-ocp/boot-"), "one Ignition per node, no kernel")
	assert.Equal(t, len(s.Nodes), countPrefix(calls, "DefineDomain "))
	assert.Equal(t, len(s.Nodes), countPrefix(calls, "StartDomainPaused "))
	assert.Equal(t, len(s.Nodes), countPrefix(calls, "ResumeDomain "))

	t.Run("network", func(t *testing.T) {
		var n libvirtxml.Network
		require.NoError(t, n.Unmarshal(hv.NetworkObjects["bootlab-ocp"].XML))
		require.NotNil(t, n.Forward, "an OpenShift lab pulls its release: NAT")
		assert.Equal(t, "nat", n.Forward.Mode)
		require.NotEmpty(t, n.DNS.Host)
		api := n.DNS.Host[0]
		assert.Equal(t, s.Network.APIAddress, api.IP, "api and api-int resolve to the load balancer")
		assert.Equal(t, []libvirtxml.NetworkDNSHostHostname{{Hostname: "api." + s.Cluster.Domain()}, {Hostname: "api-int." + s.Cluster.Domain()}}, api.Hostnames)
		assert.Len(t, n.IPs[0].DHCP.Hosts, len(s.Nodes), "one reservation per node")
		assert.True(t, hv.NetworkObjects["bootlab-ocp"].Active)
	})

	t.Run("volumes", func(t *testing.T) {
		assert.Equal(t, int64(4096), hv.Uploaded["base.qcow2"], "the RHCOS image is uploaded whole")
		for _, n := range s.Nodes {
			var v libvirtxml.StorageVolume
			require.NoError(t, v.Unmarshal(hv.VolumeXML[s.VolumeName(n)]))
			require.NotNil(t, v.BackingStore, n.Name)
			assert.Equal(t, filepath.Join(s.Storage.PoolDir, "base.qcow2"), v.BackingStore.Path, "%s's disk is an overlay of RHCOS", n.Name)
			assert.Equal(t, uint64(spec.DefaultSize(spec.ProfileOpenShift, n.Role).DiskGiB)<<30, v.Capacity.Value, n.Name)
		}
	})

	t.Run("domains boot RHCOS with Ignition through fw_cfg", func(t *testing.T) {
		boot, err := ReadBootFiles(s)
		require.NoError(t, err)
		for _, n := range s.Nodes {
			var d libvirtxml.Domain
			require.NoError(t, d.Unmarshal(hv.DomainObjects[s.DomainName(n)].XML))
			assert.True(t, hv.DomainObjects[s.DomainName(n)].Active, n.Name)
			assert.Equal(t, "kvm", d.Type)
			assert.Equal(t, "host-passthrough", d.CPU.Mode)
			assert.Empty(t, d.OS.Kernel, "%s boots its disk, not a kernel", n.Name)
			assert.Equal(t, "hd", d.OS.BootDevices[0].Dev)
			assert.Equal(t, uint(spec.DefaultSize(spec.ProfileOpenShift, n.Role).MemoryMiB), d.Memory.Value, n.Name)
			assert.Equal(t, s.VolumeName(n), d.Devices.Disks[0].Source.Volume.Volume)

			ign := "boot-" + n.Name + "-" + boot.Ignition[n.Name].Digest + ".ign"
			require.Len(t, d.SysInfo, 1, n.Name)
			require.NotNil(t, d.SysInfo[0].FWCfg, n.Name)
			assert.Equal(t, []libvirtxml.DomainSysInfoEntry{{Name: "opt/com.coreos/config", File: filepath.Join(s.Storage.PoolDir, ign)}},
				d.SysInfo[0].FWCfg.Entry, "%s reads its own Ignition, from the pool", n.Name)
			size, err := os.Stat(labdir.Ignition(s, n))
			require.NoError(t, err)
			assert.Equal(t, size.Size(), hv.Uploaded[ign], n.Name)

			var v libvirtxml.StorageVolume
			require.NoError(t, v.Unmarshal(hv.VolumeXML[ign]))
			perms := v.Target.Permissions
			require.NotNil(t, perms, "Ignition holds secrets: the volume's mode is set")
			assert.Equal(t, "0600", perms.Mode)
			assert.Equal(t, fmt.Sprint(libvirtQEMUUID), perms.Owner, "qemu, not root, reads the file for fw_cfg")
		}
	})

	t.Run("load balancer", func(t *testing.T) {
		want, err := loadbalancer.Render(loadbalancer.LabConfig(s, false))
		require.NoError(t, err)
		got, err := hv.Machine.ReadFile(ctx, labdir.HAProxyConfig(s))
		require.NoError(t, err, "haproxy.cfg is written on the hypervisor's machine")
		assert.Equal(t, string(want), string(got))
		cfg := string(got)
		for _, n := range s.Nodes {
			switch n.Role {
			case spec.RoleBootstrap, spec.RoleMaster:
				assert.Contains(t, cfg, fmt.Sprintf("server %s %s:6443 ", n.Name, n.IP))
				assert.Contains(t, cfg, fmt.Sprintf("server %s %s:22623 ", n.Name, n.IP))
				assert.NotContains(t, cfg, fmt.Sprintf("server %s %s:443 ", n.Name, n.IP))
			case spec.RoleWorker:
				assert.Contains(t, cfg, fmt.Sprintf("server %s %s:443 ", n.Name, n.IP), "ingress goes to the workers")
				assert.NotContains(t, cfg, fmt.Sprintf("server %s %s:6443 ", n.Name, n.IP))
			}
		}
		starts := lb.startArgs()
		require.Len(t, starts, 1)
		assert.Equal(t, []string{"/usr/sbin/haproxy", "-D", "-f", labdir.HAProxyConfig(s), "-p", labdir.HAProxyPID(s)}, starts[0])
	})

	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, spec.AccelKVM, st.Accelerator)
	require.NotNil(t, st.Spec)
	assert.Equal(t, spec.ProfileOpenShift, st.Spec.Profile)

	hv.Reset()
	res, err = Up(ctx, hv, s, UpOptions{Accelerator: spec.AccelKVM})
	require.NoError(t, err)
	assert.False(t, res.Changed, "second up: %+v", res.Steps)
	assert.Empty(t, hv.Mutations())
	assert.Len(t, lb.startArgs(), 1, "haproxy runs with the same config: not restarted")
}

// A real node reads its Ignition once, at first boot: a changed Ignition
// file is uploaded and named in the definition, but the running node is
// not restarted (unlike a probe node), and up says how to apply it.
func TestUpOpenShiftChangedIgnitionDoesNotRestartANode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	newHAProxyMachine(t, hv)
	s := openshiftSpec(t)
	_, err := Up(ctx, hv, s, UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	master := s.Nodes[1]
	require.Equal(t, spec.RoleMaster, master.Role)
	require.NoError(t, os.WriteFile(labdir.Ignition(s, master), []byte(`{"ignition":{"version":"3.2.0"},"changed":true}`), 0o600))

	hv.Reset()
	res, err := Up(ctx, hv, s, UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	calls := hv.Mutations()
	assert.Equal(t, 1, countPrefix(calls, "UploadVolume bootlab-ocp/boot-"+master.Name+"-"), "the new Ignition only")
	assert.Equal(t, []string{"DefineDomain " + s.DomainName(master)}, filterPrefix(calls, "DefineDomain "))
	assert.Empty(t, filterPrefix(calls, "DestroyDomain "), "no node is powered off")
	assert.Empty(t, filterPrefix(calls, "StartDomain"))
	assert.Empty(t, filterPrefix(calls, "ResumeDomain "))
	assert.True(t, hv.DomainObjects[s.DomainName(master)].Active)
	var detail string
	for _, sr := range res.Steps {
		if strings.HasPrefix(sr.Name, "Creating 6 nodes") {
			detail = sr.Detail
		}
	}
	assert.Contains(t, detail, master.Name+" redefined (takes effect at its next boot")
}

// After `lab pivot` the load balancer is reloaded without the bootstrap,
// and up keeps it that way.
func TestUpOpenShiftAfterPivotReloadsTheLoadBalancerWithoutBootstrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	lb := newHAProxyMachine(t, hv)
	s := openshiftSpec(t)
	_, err := Up(ctx, hv, s, UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)

	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	st.BootstrapRemoved = true
	require.NoError(t, st.Save(s.LabDir))
	require.NoError(t, RemoveNode(ctx, hv, s, "bootstrap"))

	_, err = Up(ctx, hv, s, UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	starts := lb.startArgs()
	require.Len(t, starts, 2)
	assert.Equal(t, []string{"-sf", "4001"}, starts[1][len(starts[1])-2:], "a reload hands over from the running haproxy")
	got, err := hv.Machine.ReadFile(ctx, labdir.HAProxyConfig(s))
	require.NoError(t, err)
	assert.NotContains(t, string(got), "server bootstrap ")
	assert.Contains(t, string(got), "server master-0 ")
	assert.Nil(t, hv.DomainObjects[s.DomainName(s.Nodes[0])], "the bootstrap stays gone")
}

// A dry run of a new OpenShift lab plans every object and the load
// balancer's start, and creates nothing, on libvirt or the machine.
func TestUpOpenShiftDryRunCreatesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	lb := newHAProxyMachine(t, hv)
	s := openshiftSpec(t)
	res, err := Up(ctx, hv, s, UpOptions{Accelerator: spec.AccelTCG, DryRun: true})
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Empty(t, hv.Mutations())
	assert.Empty(t, lb.startArgs())
	_, err = hv.Machine.ReadFile(ctx, labdir.HAProxyConfig(s))
	assert.ErrorIs(t, err, os.ErrNotExist)
	planned := map[string]int{}
	for _, c := range res.Changes {
		planned[c.Action+" "+c.Kind]++
	}
	assert.Equal(t, 1, planned["start loadBalancer"], "%+v", res.Changes)
	assert.Equal(t, 1, planned["define network"], "%+v", res.Changes)
	assert.Equal(t, 1+2*len(s.Nodes), planned["create volume"], "base, overlays, Ignition: %+v", res.Changes)
	assert.Equal(t, len(s.Nodes), planned["define domain"], "%+v", res.Changes)
}

func filterPrefix(calls []string, prefix string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}
