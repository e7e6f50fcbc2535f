package hostdns

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// fakeHost answers commands by their first words and records them.
type fakeHost struct {
	answers map[string]string // "" key missing => command fails
	calls   []string
}

func (f *fakeHost) run(_ context.Context, name string, args ...string) (string, error) {
	cmd := strings.Join(append([]string{name}, args...), " ")
	f.calls = append(f.calls, cmd)
	for prefix, out := range f.answers {
		if strings.HasPrefix(cmd, prefix) {
			if out == "FAIL" {
				return "", errors.New("exit status 1: Link not found")
			}
			return out, nil
		}
	}
	return "", errors.New("executable file not found in $PATH")
}

func testSpec() *spec.Spec {
	s := &spec.Spec{Name: "dns", Profile: spec.ProfileOpenShift, Network: spec.Network{CIDR: "192.168.140.0/24"}}
	s.OpenShift.PullSecretFile = "x"
	s.Defaults()
	return s
}

func TestSetupWithSystemdResolved(t *testing.T) {
	f := &fakeHost{answers: map[string]string{"resolvectl": ""}}
	h := &Host{Run: f.run, NMDnsmasqDir: t.TempDir()}
	s := testSpec()
	rec, err := h.Setup(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, labdir.HostDNS{Via: labdir.HostDNSResolved, Target: s.Network.Bridge}, rec)
	assert.Equal(t, "resolved:"+s.Network.Bridge, rec.String(), "as state.json keeps it")
	assert.Equal(t, []string{
		"resolvectl status",
		"resolvectl dns " + s.Network.Bridge + " 192.168.140.1",
		"resolvectl domain " + s.Network.Bridge + " ~ocp.lab.local",
	}, f.calls)

	f.calls = nil
	require.NoError(t, h.Undo(context.Background(), rec))
	assert.Equal(t, []string{"resolvectl status", "resolvectl revert " + s.Network.Bridge}, f.calls)
}

func TestUndoResolvedLinkGone(t *testing.T) {
	f := &fakeHost{answers: map[string]string{"resolvectl status": "", "resolvectl revert": "FAIL"}}
	h := &Host{Run: f.run, LinkExists: func(string) bool { return false }}
	assert.NoError(t, h.Undo(context.Background(), labdir.HostDNS{Via: labdir.HostDNSResolved, Target: "blgone"}), "a deleted bridge took its settings with it")
	assert.NotContains(t, f.calls, "resolvectl revert blgone")
	h.LinkExists = func(string) bool { return true }
	assert.ErrorContains(t, h.Undo(context.Background(), labdir.HostDNS{Via: labdir.HostDNSResolved, Target: "blgone"}), "revert host DNS on blgone")
}

func TestSetupWithNetworkManagerDnsmasq(t *testing.T) {
	dir := t.TempDir()
	f := &fakeHost{answers: map[string]string{
		"nmcli -t -f RUNNING general":   "running\n",
		"NetworkManager --print-config": "[main]\nplugins=ifcfg-rh\ndns=dnsmasq\n",
		"nmcli general reload dns-full": "",
	}}
	h := &Host{Run: f.run, NMDnsmasqDir: dir}
	s := testSpec()
	rec, err := h.Setup(context.Background(), s)
	require.NoError(t, err)
	file := filepath.Join(dir, "bootlab-dns.conf")
	assert.Equal(t, labdir.HostDNS{Via: labdir.HostDNSNetworkManager, Target: file}, rec)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(data), "server=/ocp.lab.local/192.168.140.1\n")
	assert.Contains(t, f.calls, "nmcli general reload dns-full")
	for _, c := range f.calls {
		assert.NotContains(t, c, "resolv.conf", "the global resolver is never touched")
	}

	f.calls = nil
	require.NoError(t, h.Undo(context.Background(), rec))
	assert.NoFileExists(t, file)
	assert.Equal(t, []string{"nmcli general reload dns-full"}, f.calls)
	require.NoError(t, h.Undo(context.Background(), rec), "undo twice is fine")
}

func TestUndoRefusesForeignFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bootlab-x.conf")
	require.NoError(t, os.WriteFile(file, []byte("server=/corp/10.0.0.1\n"), 0o644))
	h := &Host{Run: (&fakeHost{}).run}
	err := h.Undo(context.Background(), labdir.HostDNS{Via: labdir.HostDNSNetworkManager, Target: file})
	assert.ErrorContains(t, err, "not written by bootlab")
	assert.FileExists(t, file)
}

func TestSetupNeitherPrintsManualStep(t *testing.T) {
	f := &fakeHost{answers: map[string]string{"nmcli -t -f RUNNING general": "running\n", "NetworkManager --print-config": "[main]\ndns=default\n"}}
	h := &Host{Run: f.run, NMDnsmasqDir: t.TempDir()}
	s := testSpec()
	rec, err := h.Setup(context.Background(), s)
	assert.True(t, rec.IsZero(), "%v", rec)
	var me *ManualStepError
	require.ErrorAs(t, err, &me)
	assert.Contains(t, me.Steps, "resolvectl domain "+s.Network.Bridge+" '~ocp.lab.local'")
	assert.Contains(t, me.Steps, "server=/ocp.lab.local/192.168.140.1")
	entries, _ := os.ReadDir(h.NMDnsmasqDir)
	assert.Empty(t, entries, "nothing written")
}

func TestUndoEmptyAndUnknown(t *testing.T) {
	h := &Host{Run: (&fakeHost{}).run}
	assert.NoError(t, h.Undo(context.Background(), labdir.HostDNS{}))
	assert.ErrorContains(t, h.Undo(context.Background(), labdir.HostDNS{Via: "hosts", Target: "/etc/hosts"}), "unknown host DNS record")
}
