//go:build integration

package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/libvirt"
	"github.com/bootlab/bootlab/lab/spec"
)

// The port blocks on the host's own libvirtd: a running bootstrap domain
// (no OS: its firmware idles, its tap is on an isolated network of the
// test's) gets the lab's filter live, and the host's bridge then carries
// ebtables rules that drop the fault's port for its tap; --undo takes
// them off the running domain and removes the filter. libvirt refuses to
// remove a filter an interface still references.
func TestIntegrationPortBlockOnRunningDomain(t *testing.T) {
	if _, err := exec.LookPath("ebtables"); err != nil {
		t.Fatal("ebtables is needed to read the rules libvirt's nwfilter sets: apt-get install ebtables")
	}
	ctx := context.Background()
	c, err := libvirt.Connect(ctx, "qemu:///system", nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	dir := t.TempDir()
	s := &spec.Spec{Name: "flt" + hex.EncodeToString(b), LabDir: filepath.Join(dir, "lab"), Profile: spec.ProfileProbe, Topology: spec.Topology{Masters: 3},
		Network: spec.Network{CIDR: "192.168.126.0/24"}, Storage: spec.Storage{PoolDir: filepath.Join(dir, "pool")}}
	s.Defaults()
	require.NoError(t, os.MkdirAll(s.LabDir, 0o700))

	// An isolated network (no address, no dnsmasq: it collides with nothing).
	_, err = c.DefineNetwork(ctx, "<network><name>"+s.NetworkName()+"</name></network>")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.DestroyNetwork(ctx, s.NetworkName()); _ = c.UndefineNetwork(ctx, s.NetworkName()) })
	require.NoError(t, c.StartNetwork(ctx, s.NetworkName()))
	boot := s.DomainName(s.NodesByRole(spec.RoleBootstrap)[0])
	mem := uint(32)
	d := libvirtxml.Domain{Type: "qemu", Name: boot, Memory: &libvirtxml.DomainMemory{Value: mem, Unit: "MiB"},
		OS: &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Type: "hvm"}},
		Devices: &libvirtxml.DomainDeviceList{Interfaces: []libvirtxml.DomainInterface{{
			MAC:    &libvirtxml.DomainInterfaceMAC{Address: "52:54:00:5f:1e:01"},
			Source: &libvirtxml.DomainInterfaceSource{Network: &libvirtxml.DomainInterfaceSourceNetwork{Network: s.NetworkName()}},
			Model:  &libvirtxml.DomainInterfaceModel{Type: "virtio"},
		}}}}
	x, err := d.Marshal()
	require.NoError(t, err)
	_, err = c.DefineDomain(ctx, x)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.DestroyDomain(ctx, boot); _ = c.UndefineDomain(ctx, boot) })
	require.NoError(t, c.StartDomain(ctx, boot))

	target := FaultTarget{Networks: c}
	for _, tc := range []struct {
		fault string
		rule  string
	}{
		{FaultMCSBlockedFromMasters, "--ip-dport 22623"},
		{FaultEtcdPeerBlocked, "--ip-src " + s.NodesByRole(spec.RoleMaster)[1].IP},
	} {
		require.NoError(t, BreakFault(ctx, s, target, tc.fault, time.Now()), tc.fault)
		name := filterName(s, tc.fault)
		live := liveInterface(t, boot)
		require.NotNil(t, live.FilterRef, "the running domain's interface references the filter")
		assert.Equal(t, name, live.FilterRef.Filter)
		rules := ebtablesFor(t, live.Target.Dev)
		t.Logf("%s: the bridge's rules for %s:\n%s", tc.fault, live.Target.Dev, rules)
		assert.Contains(t, rules, tc.rule, "the bridge drops the fault's traffic for %s", live.Target.Dev)
		assert.Contains(t, rules, "-j DROP")
		err := c.UndefineFilter(ctx, name)
		assert.Error(t, err, "libvirt keeps a filter an interface references")

		undone, err := UndoFault(ctx, s, target, tc.fault)
		require.NoError(t, err)
		assert.Equal(t, []string{tc.fault}, undone)
		live = liveInterface(t, boot)
		assert.Nil(t, live.FilterRef)
		assert.NotContains(t, ebtablesFor(t, live.Target.Dev), tc.rule)
		_, err = c.LookupFilter(ctx, name)
		assert.True(t, errors.Is(err, hypervisor.ErrNotFound), "undo removes the filter: %v", err)
	}
}

// liveInterface is the running domain's one interface as libvirt runs it.
func liveInterface(t *testing.T, name string) libvirtxml.DomainInterface {
	t.Helper()
	out, err := exec.Command("virsh", "-c", "qemu:///system", "dumpxml", name).Output()
	require.NoError(t, err)
	var d libvirtxml.Domain
	require.NoError(t, d.Unmarshal(string(out)))
	require.Len(t, d.Devices.Interfaces, 1)
	require.NotNil(t, d.Devices.Interfaces[0].Target)
	return d.Devices.Interfaces[0]
}

// ebtablesFor is the ebtables rules of the nat table's chains libvirt
// made for tap dev.
func ebtablesFor(t *testing.T, dev string) string {
	t.Helper()
	out, err := exec.Command("ebtables", "-t", "nat", "-L").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var keep []string
	in := false
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Bridge chain: ") {
			in = strings.Contains(l, dev)
		}
		if in {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
