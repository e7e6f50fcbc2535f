package engine

import (
	"context"
	"io"
	"os"
	"path/filepath"
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
		assert.Contains(t, string(page), "| `"+f.Check+"` |", "%s names check %s, which troubleshooting.md's table does not list", f.Name, f.Check)
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
