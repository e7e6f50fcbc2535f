package labcmd

import (
	"bytes"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/preflight"
)

func TestPreflightFlags(t *testing.T) {
	var got *PreflightOptions
	cmd := NewCmdPreflight(testFactory(), func(o *PreflightOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-f", "lab.yaml", "-o", "json", "--uri", "qemu:///session"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "lab.yaml", got.Spec.File)
	assert.Equal(t, "json", got.Output)
	assert.Equal(t, "qemu:///session", got.Spec.URI)

	cmd = NewCmdPreflight(testFactory(), func(o *PreflightOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"-o", "yaml"})
	err := cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-o must be one of [table json]")
}

func TestPivotFlags(t *testing.T) {
	var got *PivotOptions
	cmd := NewCmdPivot(testFactory(), func(o *PivotOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--name", "class1", "-o", "json", "--dry-run"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "class1", got.Spec.Name)
	assert.Equal(t, "json", got.Output)
	assert.True(t, got.DryRun)

	cmd = NewCmdPivot(testFactory(), nil)
	cmd.SetArgs([]string{"extra"})
	err := cmd.Execute()
	require.Error(t, err)
	var ce *cmdutil.CodeError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cmdutil.ExitUsage, ce.Code)
}

func TestPrintPreflight(t *testing.T) {
	r := &preflight.Report{
		Checks: []check.Result{
			{Name: "libvirt", State: check.StatePassed, Detail: "libvirt 9.0.0 at qemu:///system"},
			{Name: "accelerator", State: check.StateWarning, Detail: "tcg: no kernel", Fix: "set accelerator: kvm"},
			{Name: "haproxy", Detail: "haproxy not found on PATH", Fix: "apt-get install -y haproxy"},
			{Name: "memory", State: check.StatePassed, Detail: "enough", Fix: "never shown for a clean pass"},
		},
		Accelerator: spec.AccelTCG,
	}
	var b bytes.Buffer
	require.NoError(t, printPreflight(&b, r))
	assert.Equal(t, ""+
		"   CHECK        DETAIL\n"+
		"✓  libvirt      libvirt 9.0.0 at qemu:///system\n"+
		"!  accelerator  tcg: no kernel\n"+
		"                note: set accelerator: kvm\n"+
		"✗  haproxy      haproxy not found on PATH\n"+
		"✓  memory       enough\n"+
		"\n"+
		"1 of 4 failed, 1 with a warning:\n"+
		"✗ haproxy: haproxy not found on PATH\n"+
		"    fix: apt-get install -y haproxy\n"+
		"→ accelerator: tcg\n", b.String())

	r.Checks = []check.Result{{Name: "memory", State: check.StatePassed, Detail: "enough", Host: "root@classroom:22"}}
	b.Reset()
	require.NoError(t, printPreflight(&b, r))
	assert.Contains(t, b.String(), "✓  memory  enough   [on root@classroom:22]\n")
}

func TestPrintBackends(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, printBackends(&b, []loadbalancer.BackendStatus{
		{Frontend: "api", Server: "bootstrap", Address: "192.168.126.10:6443", Status: "UP", LastCheck: "L7OK"},
		{Frontend: "api", Server: "master-0", Address: "192.168.126.11:6443", Status: "DOWN", LastCheck: "L4CON Connection refused"},
	}))
	assert.Equal(t, ""+
		"  FRONTEND  SERVER     ADDRESS              STATUS  LAST CHECK\n"+
		"  api       bootstrap  192.168.126.10:6443  UP      L7OK\n"+
		"  api       master-0   192.168.126.11:6443  DOWN    L4CON Connection refused\n", b.String())
}

func TestUpServers(t *testing.T) {
	b := []loadbalancer.BackendStatus{
		{Frontend: "api", Server: "master-0", Status: "UP"},
		{Frontend: "api", Server: "master-1", Status: "DOWN"},
		{Frontend: "api", Server: "master-2", Status: "UP 1/3"},
		{Frontend: "machine-config", Server: "master-1", Status: "UP"},
	}
	assert.Equal(t, 2, upServers(b, "api"))
	assert.Equal(t, 1, upServers(b, "machine-config"))
	assert.Equal(t, 0, upServers(b, "ingress-http"))
}
