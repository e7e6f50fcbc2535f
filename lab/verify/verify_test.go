package verify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/probe"
)

func testSpec(t *testing.T) *lab.Spec {
	t.Helper()
	s := &lab.Spec{Name: "v", Profile: lab.ProfileProbe, LabDir: t.TempDir(), Topology: lab.Topology{Masters: 1, Workers: 0}}
	s.Defaults()
	return s
}

func writeConsole(t *testing.T, s *lab.Spec, node string, content string) {
	t.Helper()
	n, ok := s.Node(node)
	require.True(t, ok)
	p := s.ConsoleLogPath(n)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
}

func TestNodeChecksFromConsoleLogs(t *testing.T) {
	s := testSpec(t)
	boot, _ := s.Node("bootstrap")
	master, _ := s.Node("master-0")
	now := time.Now().UTC()
	good := &probe.Report{Node: "bootstrap", MAC: boot.MAC, Seq: 3, Boot: now, Checks: []probe.Check{
		{Name: "dhcp", OK: true, Detail: "lease"}, {Name: "serve mcs :22623", OK: true, Detail: "listening"},
	}}
	failing := &probe.Report{Node: "master-0", MAC: master.MAC, Seq: 7, Boot: now, Checks: []probe.Check{
		{Name: "dhcp", OK: true, Detail: "lease"},
		{Name: "ignition-fetch", Pending: true, Detail: "GET https://api-int.ocp.lab.local:22623/config/master: attempt 4: tls: failed to verify certificate: x509: certificate signed by unknown authority (retrying)"},
		{Name: "dns api.ocp.lab.local", OK: false, Detail: "api.ocp.lab.local resolves to 10.0.0.9, expected 192.168.126.1"},
	}}
	writeConsole(t, s, "bootstrap", "[ 0.1] kernel noise\n"+string(good.Line()))
	writeConsole(t, s, "master-0", string(failing.Line()))

	reports := map[string]*probe.Report{}
	checks := nodeChecks(s, false, reports)
	byName := map[string]Check{}
	for _, c := range checks {
		byName[c.Group+" "+c.Name] = c
	}
	assert.Len(t, reports, 2)
	assert.True(t, byName["bootstrap dhcp"].OK)
	assert.True(t, byName["bootstrap serve mcs :22623"].OK)
	fetch := byName["master-0 ignition-fetch"]
	assert.False(t, fetch.OK)
	assert.True(t, strings.HasPrefix(fetch.Detail, "still pending: GET https://api-int"))
	assert.Contains(t, fetch.Fix, "ignition.security.tls.certificateAuthorities")
	assert.Contains(t, fetch.Fix, s.IgnitionPath(master))
	dns := byName["master-0 dns api.ocp.lab.local"]
	assert.False(t, dns.OK)
	assert.Contains(t, dns.Fix, "virsh net-update "+s.NetworkName())

	// No console log for the worker-less lab's nodes is "no report".
	s2 := testSpec(t)
	checks = nodeChecks(s2, false, map[string]*probe.Report{})
	require.Len(t, checks, 2)
	for _, c := range checks {
		assert.Equal(t, "report", c.Name)
		assert.False(t, c.OK)
		assert.Contains(t, c.Detail, "no probe report in")
		assert.Contains(t, c.Fix, "bootlab lab console "+c.Group)
	}

	// After pivot the bootstrap is not expected.
	checks = nodeChecks(s2, true, map[string]*probe.Report{})
	require.Len(t, checks, 1)
	assert.Equal(t, "master-0", checks[0].Group)
}

func TestNodeChecksReportFromAnotherVM(t *testing.T) {
	s := testSpec(t)
	r := &probe.Report{MAC: "52:54:00:ff:ff:ff", Seq: 1, Boot: time.Now(), Checks: []probe.Check{{Name: "dhcp", OK: true}}}
	writeConsole(t, s, "bootstrap", string(r.Line()))
	checks := nodeChecks(s, false, map[string]*probe.Report{})
	assert.Equal(t, "report", checks[0].Name)
	assert.False(t, checks[0].OK)
	assert.Contains(t, checks[0].Detail, "52:54:00:ff:ff:ff")
}

func TestHealthy(t *testing.T) {
	for _, tc := range []struct {
		status, last string
		want         bool
	}{
		{"UP", "L7OK 200", true},
		{"no check", "", true},
		{"UP 1/3", "L7STS 500", false},
		{"UP", "INI", false},
		{"DOWN", "L4CON", false},
		{"MAINT", "", false},
	} {
		got := healthy(loadbalancer.BackendStatus{Status: tc.status, LastCheck: tc.last})
		assert.Equal(t, tc.want, got, "%s %s", tc.status, tc.last)
	}
}

func TestResultFailed(t *testing.T) {
	r := &Result{Checks: []Check{{Name: "a", OK: true}, {Name: "b"}}}
	require.Len(t, r.Failed(), 1)
	assert.Equal(t, "b", r.Failed()[0].Name)
}

func TestNodeChecksNameAKernelPanic(t *testing.T) {
	s := testSpec(t)
	writeConsole(t, s, "bootstrap", "[    3.57] Failed to execute /init (error -2)\n[    3.58] Kernel panic - not syncing: No working init found.\n")
	checks := nodeChecks(s, false, map[string]*probe.Report{})
	assert.Equal(t, "report", checks[0].Name)
	assert.Contains(t, checks[0].Detail, "the kernel panicked before the agent reported: Failed to execute /init (error -2); Kernel panic - not syncing")
	assert.Contains(t, checks[0].Fix, "probe-image build")
}

// With the lab's haproxy not running nothing can pass, so verify stops after
// seeing it twice instead of waiting out --timeout.
func TestRunStopsWaitingWhenHAProxyIsNotRunning(t *testing.T) {
	s := &lab.Spec{Name: "v", Profile: lab.ProfileOpenShift, LabDir: t.TempDir(),
		Network: lab.Network{CIDR: "127.0.0.0/24"}, Topology: lab.Topology{Masters: 3}}
	s.Defaults()
	res, err := Run(context.Background(), s, nil, Options{Timeout: time.Minute, Interval: time.Millisecond})
	require.NoError(t, err)
	assert.False(t, res.OK)
	assert.Equal(t, 2, res.Passes, "stop on the second pass that finds haproxy not running")
	var names []string
	for _, c := range res.Failed() {
		names = append(names, c.Name)
	}
	assert.Contains(t, names, "lb haproxy")
}

// On a rehearsal lab, what the bootstrap and masters wait for is a stage:
// the fixes name it.
func TestRehearsalFixesNameTheStage(t *testing.T) {
	s := &lab.Spec{Name: "reh", Profile: lab.ProfileProbe, OpenShift: lab.OpenShift{ManualBootstrap: true}, LabDir: t.TempDir()}
	s.Defaults()
	m0, _ := s.Node("master-0")
	fix := nodeFix(s, m0, probe.Check{Name: "ignition-fetch", Pending: true, Detail: "GET https://api-int.ocp.lab.local:22623/config/master: connection refused"})
	assert.Contains(t, fix, "masters wait for the MCS: run `bootlab stage run 12`")
	assert.Contains(t, rehearsalBackendFix(s, "bootstrap", 22623), "`bootlab stage run 12`")
	assert.Contains(t, rehearsalBackendFix(s, "bootstrap", 6443), "stage 13")
	assert.Empty(t, rehearsalBackendFix(s, "master-0", 22623))

	plain := &lab.Spec{Name: "plain", Profile: lab.ProfileProbe, LabDir: t.TempDir()}
	plain.Defaults()
	assert.Empty(t, rehearsalBackendFix(plain, "bootstrap", 22623))
	assert.NotContains(t, nodeFix(plain, m0, probe.Check{Name: "ignition-fetch", Detail: "connection refused"}), "stage run 12")
}
