package labcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

// domainOf is a lab node's domain as lab up defines it.
func domainOf(name, node string, role spec.Role, active bool) *hypervisor.Object {
	return &hypervisor.Object{Name: "bootlab-" + name + "-" + node, Active: active, XML: `<domain type="qemu"><name>bootlab-` + name + "-" + node +
		`</name><metadata><bootlab:lab xmlns:bootlab="https://bootlab.dev/xmlns/lab/v1" name="` + name + `" role="` + string(role) + `" node="` + node + `"/></metadata></domain>`}
}

// listFixture is a home with lab ux1 and the shared fake hypervisor
// holding ux1's domains and those of lab gone, which has no directory.
func listFixture(t *testing.T) (string, *fake.Hypervisor) {
	t.Helper()
	home := t.TempDir()
	s := &spec.Spec{Name: "ux1", Profile: spec.ProfileProbe, Libvirt: spec.Libvirt{URI: "qemu:///fake"}, Topology: spec.Topology{Masters: 1},
		Network: spec.Network{CIDR: "10.77.0.0/24"}, LabDir: filepath.Join(home, "labs", "ux1")}
	s.Defaults()
	require.NoError(t, (&labdir.State{Spec: s}).Save(s.LabDir))
	require.NoError(t, labdir.SaveVerifyRecord(s.LabDir, &labdir.VerifyRecord{Time: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), OK: true, Total: 12, Passed: 12}))
	hv := fake.New()
	for _, d := range []*hypervisor.Object{
		domainOf("ux1", "bootstrap", spec.RoleBootstrap, true),
		domainOf("ux1", "master-0", spec.RoleMaster, false),
		domainOf("gone", "master-0", spec.RoleMaster, true),
	} {
		hv.DomainObjects[d.Name] = d
	}
	for _, n := range []string{"bootlab-ux1", "bootlab-gone", "default"} {
		hv.NetworkObjects[n] = &hypervisor.Object{Name: n, XML: "<network><name>" + n + "</name></network>"}
	}
	return home, hv
}

func runListCmd(t *testing.T, home string, hv *fake.Hypervisor, args ...string) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &out, ErrOut: &errOut}, Status: status.New(&errOut, false),
		Connect: hypervisor.Shared(hv)}
	cmd := NewCmdList(f, func(o *ListOptions) error {
		o.Home = home
		return runList(context.Background(), f, o)
	})
	cmd.SetArgs(args)
	require.NoError(t, cmd.Execute())
	return out.String(), errOut.String()
}

func TestListTable(t *testing.T) {
	home, hv := listFixture(t)
	out, errOut := runListCmd(t, home, hv)
	assert.Regexp(t, `NAME\s+PROFILE\s+NODES UP\s+NETWORK\s+URI\s+LAST VERIFY`, out)
	assert.Regexp(t, `ux1\s+probe\s+1/2\s+10\.77\.0\.0/24\s+qemu:///fake\s+12/12 ok at 2026-01-0`, out)
	assert.Regexp(t, `gone\s+-\s+1/1\s+bootlab-gone\s+qemu:///fake\s+orphaned, found in libvirt`, out)
	assert.Contains(t, errOut, "lab gone is orphaned")
	assert.Contains(t, errOut, "virsh -c qemu:///fake net-undefine bootlab-gone")
}

// -o json has stable field names: `name` for the lab, as everywhere.
func TestListJSON(t *testing.T) {
	home, hv := listFixture(t)
	out, _ := runListCmd(t, home, hv, "-o", "json")
	var got struct {
		Labs []map[string]any `json:"labs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got.Labs, 2)
	ux1, gone := got.Labs[1], got.Labs[0]
	assert.Equal(t, "ux1", ux1["name"])
	assert.Equal(t, "probe", ux1["profile"])
	assert.Equal(t, "10.77.0.0/24", ux1["cidr"])
	assert.Equal(t, "qemu:///fake", ux1["uri"])
	assert.EqualValues(t, 1, ux1["nodesUp"])
	assert.EqualValues(t, 2, ux1["nodesTotal"])
	assert.Equal(t, true, ux1["verify"].(map[string]any)["ok"])
	assert.NotContains(t, out, "spec", "the spec (key and pull secret paths) is not printed")
	assert.Equal(t, "gone", gone["name"])
	assert.Equal(t, true, gone["orphaned"])
	assert.Equal(t, []any{"bootlab-gone-master-0"}, gone["domains"])
}

func TestListEmpty(t *testing.T) {
	out, errOut := runListCmd(t, t.TempDir(), fake.New())
	assert.Empty(t, out)
	assert.Contains(t, errOut, "no labs in")

	out, _ = runListCmd(t, t.TempDir(), fake.New(), "-o", "json")
	assert.JSONEq(t, `{"schemaVersion": 1, "kind": "LabList", "labs": []}`, out)
}

func TestListRejectsUnknownOutput(t *testing.T) {
	cmd := NewCmdList(testFactory(), func(o *ListOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"-o", "yaml"})
	assert.ErrorContains(t, cmd.Execute(), "-o must be one of [table json]")
}
