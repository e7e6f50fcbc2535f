package engine

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// dnsOf is the network's DNS host records as "ip=name,name".
func dnsOf(t *testing.T, hv *fake.Hypervisor, name string) []string {
	t.Helper()
	var n libvirtxml.Network
	require.NoError(t, n.Unmarshal(hv.NetworkObjects[name].XML))
	var out []string
	for _, h := range n.DNS.Host {
		var names []string
		for _, hn := range h.Hostnames {
			names = append(names, hn.Hostname)
		}
		out = append(out, h.IP+"="+strings.Join(names, ","))
	}
	return out
}

// api-int-wrong-address points api-int at a free address of the lab's
// subnet and keeps api where it was; --undo puts the plan's one record
// back. The record of what is set is the trainer's, 0600.
func TestBreakAPIIntAndUndo(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	hv := fake.New()
	domain := s.Cluster.Domain()
	n := libvirtxml.Network{Name: s.NetworkName(), DNS: &libvirtxml.NetworkDNS{Host: []libvirtxml.NetworkDNSHost{
		{IP: s.Network.APIAddress, Hostnames: []libvirtxml.NetworkDNSHostHostname{{Hostname: "api." + domain}, {Hostname: "api-int." + domain}}},
		{IP: s.Nodes[0].IP, Hostnames: []libvirtxml.NetworkDNSHostHostname{{Hostname: s.FQDN(s.Nodes[0])}}},
	}}}
	x, err := n.Marshal()
	require.NoError(t, err)
	hv.NetworkObjects[s.NetworkName()] = &hypervisor.Object{Name: s.NetworkName(), XML: x, Active: true}
	before := dnsOf(t, hv, s.NetworkName())
	target := FaultTarget{Networks: hv, Host: hv.Host()}
	ctx := context.Background()

	require.NoError(t, BreakFault(ctx, s, target, FaultAPIIntWrongAddress, time.Now()))
	wrong, err := wrongAddress(s)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{s.Network.APIAddress + "=api." + domain, wrong + "=api-int." + domain, s.Nodes[0].IP + "=" + s.FQDN(s.Nodes[0])}, dnsOf(t, hv, s.NetworkName()))
	st, err := os.Stat(labdir.Faults(s))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	active, err := ActiveFaults(s)
	require.NoError(t, err)
	require.Len(t, active, 1)
	assert.Equal(t, FaultAPIIntWrongAddress, active[0].Name)

	err = BreakFault(ctx, s, target, FaultAPIIntWrongAddress, time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already set")

	undone, err := UndoFault(ctx, s, target, "")
	require.NoError(t, err)
	assert.Equal(t, []string{FaultAPIIntWrongAddress}, undone)
	assert.ElementsMatch(t, before, dnsOf(t, hv, s.NetworkName()))
	active, err = ActiveFaults(s)
	require.NoError(t, err)
	assert.Empty(t, active)

	_, err = UndoFault(ctx, s, target, FaultAPIIntWrongAddress)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not set")
}

// An unknown fault is refused with the catalogue; an OpenShift lab takes
// none; a record that is not bootlab's is named.
func TestBreakRefuses(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	hv := fake.New()
	err := BreakFault(context.Background(), s, FaultTarget{Networks: hv}, "etcd-on-fire", time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no fault "etcd-on-fire": the faults are api-int-wrong-address, lb-no-bootstrap-mcs, csr-approval-stopped`)
	ocp := *s
	ocp.Profile = spec.ProfileOpenShift
	err = BreakFault(context.Background(), &ocp, FaultTarget{Networks: hv}, FaultLBNoBootstrapMCS, time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "an OpenShift lab")
	require.NoError(t, os.WriteFile(labdir.Faults(s), []byte("<html>"), 0o600))
	_, err = ActiveFaults(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not bootlab's record of faults")
	assert.NotContains(t, err.Error(), "<html>", "never prints a line of the file")
}

// The broken load balancer has the masters, and not the bootstrap, on
// 22623; 6443 keeps every server.
func TestWithoutBootstrapMCS(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	c := WithoutBootstrapMCS(loadbalancer.LabConfig(s, false), s)
	for _, fe := range c.Frontends {
		var names []string
		for _, srv := range fe.Servers {
			names = append(names, srv.Name)
		}
		switch fe.Port {
		case loadbalancer.PortMachineConfig:
			assert.Equal(t, []string{"master-0", "master-1", "master-2"}, names)
		case loadbalancer.PortAPI:
			assert.Contains(t, names, "bootstrap")
		}
	}
	orig := loadbalancer.LabConfig(s, false)
	assert.Len(t, orig.Frontends[1].Servers, 4, "the spec's config is left as it was")
}

// The wrong address is in the lab's subnet and is no address of the lab.
func TestWrongAddress(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	a, err := wrongAddress(s)
	require.NoError(t, err)
	assert.Equal(t, "192.168.126.254", a)
	for _, n := range s.Nodes {
		assert.NotEqual(t, n.IP, a)
	}
}

// Every fault names a check lab diagnose runs (the checks' table of
// docs/troubleshooting.md) and a fix that is not --undo.
func TestFaultCatalogue(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "troubleshooting.md"))
	require.NoError(t, err)
	for _, f := range Faults() {
		// A row of the checks' table names it in its id cell (alone, or
		// with the checks of the same kind).
		assert.Regexp(t, "(?m)^\\| [a-z]+ \\| [^|]*`"+regexp.QuoteMeta(f.Check)+"`[^|]*\\|", string(page), "%s names check %s, which troubleshooting.md's table does not list", f.Name, f.Check)
		assert.Contains(t, string(page), "| `"+f.Name+"` |", "troubleshooting.md's trainers' table lists %s", f.Name)
		assert.NotEmpty(t, f.What, f.Name)
		assert.NotEmpty(t, f.Bites, f.Name)
		assert.Regexp(t, `^[a-z]+\.[a-z.-]+$`, f.Check, f.Name)
		assert.NotContains(t, f.Fix, "--undo", f.Name)
	}
}

// ranNode records the commands a fault runs on a node and answers with
// code and stderr.
type ranNode struct {
	node   string
	ran    *[]string
	code   int
	stderr string
}

func (r ranNode) Run(_ context.Context, cmd string, _ io.Writer) (int, string, error) {
	*r.ran = append(*r.ran, r.node+": "+cmd)
	return r.code, r.stderr, nil
}

// csr-approval-stopped stops approve-csr.service on the bootstrap as a
// person would (sudo systemctl over the lab's SSH path) and --undo starts
// it; a refusal on the node is the error, with what the node said; a lab
// that is not a rehearsal is refused before anything runs.
func TestBreakCSRApprovalStopped(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	var ran []string
	code, stderr := 0, ""
	target := FaultTarget{Networks: fake.New(), Dial: func(_ context.Context, n spec.Node) (GatherNode, func(), error) {
		return ranNode{node: n.Name, ran: &ran, code: code, stderr: stderr}, func() {}, nil
	}}
	ctx := context.Background()
	require.NoError(t, BreakFault(ctx, s, target, FaultCSRApprovalStopped, time.Now()))
	undone, err := UndoFault(ctx, s, target, FaultCSRApprovalStopped)
	require.NoError(t, err)
	assert.Equal(t, []string{FaultCSRApprovalStopped}, undone)
	assert.Equal(t, []string{"bootstrap: sudo -n systemctl stop approve-csr.service", "bootstrap: sudo -n systemctl start approve-csr.service"}, ran)

	code, stderr = 1, "systemctl (bootlab rehearsal stand-in): only `systemctl reboot` ...\n"
	err = BreakFault(ctx, s, target, FaultCSRApprovalStopped, time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "break csr-approval-stopped: sudo -n systemctl stop approve-csr.service on bootstrap exited 1: systemctl (bootlab rehearsal stand-in)")
	active, err := ActiveFaults(s)
	require.NoError(t, err)
	assert.Empty(t, active, "a fault that was not set is not recorded")

	probe := *s
	probe.OpenShift.ManualBootstrap = false
	ran = nil
	err = BreakFault(ctx, &probe, target, FaultCSRApprovalStopped, time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not a rehearsal lab")
	assert.Empty(t, ran)
}

// labWithBootstrap is a fake hypervisor with lab s's network and its
// bootstrap domain, one interface on the network.
func labWithBootstrap(t *testing.T, s *spec.Spec) *fake.Hypervisor {
	t.Helper()
	hv := fake.New()
	hv.NetworkObjects[s.NetworkName()] = &hypervisor.Object{Name: s.NetworkName(), XML: "<network><name>" + s.NetworkName() + "</name></network>", Active: true}
	boot := s.NodesByRole(spec.RoleBootstrap)[0]
	d := libvirtxml.Domain{Type: "qemu", Name: s.DomainName(boot), Devices: &libvirtxml.DomainDeviceList{Interfaces: []libvirtxml.DomainInterface{{
		MAC:    &libvirtxml.DomainInterfaceMAC{Address: "52:54:00:00:00:10"},
		Source: &libvirtxml.DomainInterfaceSource{Network: &libvirtxml.DomainInterfaceSourceNetwork{Network: s.NetworkName()}},
	}}}}
	x, err := d.Marshal()
	require.NoError(t, err)
	_, err = hv.DefineDomain(context.Background(), x)
	require.NoError(t, err)
	hv.Reset()
	return hv
}

// filterRefOf is the filter the bootstrap's interface references ("": none).
func filterRefOf(t *testing.T, hv *fake.Hypervisor, s *spec.Spec) string {
	t.Helper()
	var d libvirtxml.Domain
	require.NoError(t, d.Unmarshal(hv.DomainObjects[s.DomainName(s.NodesByRole(spec.RoleBootstrap)[0])].XML))
	if r := d.Devices.Interfaces[0].FilterRef; r != nil {
		return r.Filter
	}
	return ""
}

// A port block defines the lab's filter with ebtables rules for the
// fault's port and references it from the bootstrap's interface; --undo
// detaches and removes it. etcd-peer-blocked drops 2380 both ways for
// each master and nothing else.
func TestBreakPortBlocksAndUndo(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	ctx := context.Background()
	for _, tc := range []struct {
		fault string
		rules int
		has   []string
	}{
		{FaultMCSBlockedFromMasters, 1, []string{`<ip protocol="tcp" dstportstart="22623">`}},
		{FaultEtcdPeerBlocked, 6, []string{
			"<rule action=\"drop\" direction=\"in\" priority=\"100\">\n    <ip srcipaddr=\"" + s.NodesByRole(spec.RoleMaster)[0].IP + "\" protocol=\"tcp\" dstportstart=\"2380\">",
			"<rule action=\"drop\" direction=\"out\" priority=\"100\">\n    <ip dstipaddr=\"" + s.NodesByRole(spec.RoleMaster)[2].IP + "\" protocol=\"tcp\" dstportstart=\"2380\">"}},
	} {
		hv := labWithBootstrap(t, s)
		target := FaultTarget{Networks: hv}
		require.NoError(t, BreakFault(ctx, s, target, tc.fault, time.Now()), tc.fault)
		name := filterName(s, tc.fault)
		require.Contains(t, hv.FilterObjects, name)
		x := hv.FilterObjects[name].XML
		assert.Equal(t, tc.rules, strings.Count(x, "<rule "), x)
		for _, h := range tc.has {
			assert.Contains(t, x, h)
		}
		assert.Equal(t, name, filterRefOf(t, hv, s))
		active, err := ActiveFaults(s)
		require.NoError(t, err)
		require.Len(t, active, 1)
		assert.Equal(t, hv.FilterObjects[name].UUID, active[0].Undo, "the record keeps the filter's UUID")

		other := FaultMCSBlockedFromMasters
		if tc.fault == other {
			other = FaultEtcdPeerBlocked
		}
		err = BreakFault(ctx, s, target, other, time.Now())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "already references network filter "+name)

		undone, err := UndoFault(ctx, s, target, "")
		require.NoError(t, err)
		assert.Equal(t, []string{tc.fault}, undone)
		assert.Empty(t, filterRefOf(t, hv, s))
		assert.NotContains(t, hv.FilterObjects, name)
	}
}

// bootlab removes only the filter it defined: one of the lab's name it
// did not make is neither taken over nor, at undo, removed.
func TestPortBlockLeavesOthersFilters(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	ctx := context.Background()
	hv := labWithBootstrap(t, s)
	name := filterName(s, FaultMCSBlockedFromMasters)
	assert.Equal(t, "bootlab-"+s.Name+"-drop-22623", name, "the filter names the port, not the fault")
	_, err := hv.DefineFilter(ctx, "<filter name='"+name+"' chain='root'></filter>")
	require.NoError(t, err)
	err = BreakFault(ctx, s, FaultTarget{Networks: hv}, FaultMCSBlockedFromMasters, time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this lab's record does not say it made it")

	delete(hv.FilterObjects, name)
	require.NoError(t, BreakFault(ctx, s, FaultTarget{Networks: hv}, FaultMCSBlockedFromMasters, time.Now()))
	hv.FilterObjects[name].UUID = "11111111-2222-3333-4444-555555555555" // replaced behind bootlab's back
	_, err = UndoFault(ctx, s, FaultTarget{Networks: hv}, FaultMCSBlockedFromMasters)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not the one bootlab defined")
	assert.Contains(t, hv.FilterObjects, name)
}

// lab down removes the filter of a port block still set, once the
// domain that referenced it is gone.
func TestDownRemovesAPortBlocksFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := bootSpec(t)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	require.NoError(t, BreakFault(ctx, s, FaultTarget{Networks: hv}, FaultMCSBlockedFromMasters, time.Now()))
	require.Len(t, hv.FilterObjects, 1)
	hv.Reset()
	_, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	assert.Empty(t, hv.FilterObjects)
	assert.Contains(t, hv.InOrder(), "UndefineFilter "+filterName(s, FaultMCSBlockedFromMasters))
}
