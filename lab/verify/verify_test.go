package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

func testSpec(t *testing.T) *spec.Spec {
	t.Helper()
	s := &spec.Spec{Name: "v", Profile: spec.ProfileProbe, LabDir: t.TempDir(), Topology: spec.Topology{Masters: 1, Workers: 0}}
	s.Defaults()
	return s
}

func writeConsole(t *testing.T, s *spec.Spec, node string, content string) {
	t.Helper()
	n, ok := s.Node(node)
	require.True(t, ok)
	p := labdir.ConsoleLog(s, n)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
}

// byGroupName indexes checks by "GROUP NAME" ("master-0 dhcp").
func byGroupName(checks []check.Result) map[string]check.Result {
	m := map[string]check.Result{}
	for _, c := range checks {
		m[c.Group+" "+c.Name] = c
	}
	return m
}

func TestNodeChecksFromConsoleLogs(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	boot, _ := s.Node("bootstrap")
	master, _ := s.Node("master-0")
	now := time.Now().UTC()
	good := &wire.Report{Node: "bootstrap", MAC: boot.MAC, Seq: 3, Boot: now, Checks: []wire.Check{
		{Name: "dhcp", OK: true, Detail: "lease"}, {Name: "serve mcs :22623", OK: true, Detail: "listening"},
	}}
	failing := &wire.Report{Node: "master-0", MAC: master.MAC, Seq: 7, Boot: now, Checks: []wire.Check{
		{Name: "dhcp", OK: true, Detail: "lease"},
		{Name: "ignition-fetch", Pending: true, Detail: "GET https://api-int.ocp.lab.local:22623/config/master: attempt 4: tls: failed to verify certificate: x509: certificate signed by unknown authority (retrying)"},
		{Name: "dns api.ocp.lab.local", OK: false, Detail: "api.ocp.lab.local resolves to 10.0.0.9, expected 192.168.126.1"},
	}}
	writeConsole(t, s, "bootstrap", "[ 0.1] kernel noise\n"+string(good.Line()))
	writeConsole(t, s, "master-0", string(failing.Line()))

	reports := map[string]*wire.Report{}
	checks := nodeChecks(context.Background(), s, false, reports, Options{})
	byName := byGroupName(checks)
	assert.Len(t, reports, 2)
	assert.True(t, byName["bootstrap dhcp"].Passed())
	assert.True(t, byName["bootstrap serve mcs :22623"].Passed())
	fetch := byName["master-0 ignition-fetch"]
	assert.True(t, fetch.Failed())
	assert.True(t, strings.HasPrefix(fetch.Detail, "still pending: GET https://api-int"))
	assert.Contains(t, fetch.Fix, "ignition.security.tls.certificateAuthorities")
	assert.Contains(t, fetch.Fix, labdir.Ignition(s, master))
	dns := byName["master-0 dns api.ocp.lab.local"]
	assert.True(t, dns.Failed())
	assert.Contains(t, dns.Fix, "virsh net-update "+s.NetworkName())

	// No console log for the worker-less lab's nodes is "no report".
	s2 := testSpec(t)
	checks = nodeChecks(context.Background(), s2, false, map[string]*wire.Report{}, Options{})
	require.Len(t, checks, 2)
	for _, c := range checks {
		assert.Equal(t, "report", c.Name)
		assert.True(t, c.Failed())
		assert.Contains(t, c.Detail, "no probe report in")
		assert.Contains(t, c.Fix, "bootlab lab console "+c.Group)
	}

	// After pivot the bootstrap is not expected.
	checks = nodeChecks(context.Background(), s2, true, map[string]*wire.Report{}, Options{})
	require.Len(t, checks, 1)
	assert.Equal(t, "master-0", checks[0].Group)
}

func TestNodeChecksReportFromAnotherVM(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	r := &wire.Report{MAC: "52:54:00:ff:ff:ff", Seq: 1, Boot: time.Now(), Checks: []wire.Check{{Name: "dhcp", OK: true}}}
	writeConsole(t, s, "bootstrap", string(r.Line()))
	checks := nodeChecks(context.Background(), s, false, map[string]*wire.Report{}, Options{})
	assert.Equal(t, "report", checks[0].Name)
	assert.True(t, checks[0].Failed())
	assert.Contains(t, checks[0].Detail, "52:54:00:ff:ff:ff")
}

func TestHealthy(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	r := &Result{Checks: []check.Result{{Name: "a", State: check.StatePassed}, {Name: "b"}}}
	require.Len(t, r.Failed(), 1)
	assert.Equal(t, "b", r.Failed()[0].Name)
}

func TestNodeChecksNameAKernelPanic(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	writeConsole(t, s, "bootstrap", "[    3.57] Failed to execute /init (error -2)\n[    3.58] Kernel panic - not syncing: No working init found.\n")
	checks := nodeChecks(context.Background(), s, false, map[string]*wire.Report{}, Options{})
	assert.Equal(t, "report", checks[0].Name)
	assert.Contains(t, checks[0].Detail, "the kernel panicked before the agent reported: Failed to execute /init (error -2); Kernel panic - not syncing")
	assert.Contains(t, checks[0].Fix, "probe-image build")
}

// With the lab's haproxy not running nothing can pass, so verify stops after
// seeing it twice instead of waiting out --timeout.
func TestRunStopsWaitingWhenHAProxyIsNotRunning(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "v", Profile: spec.ProfileOpenShift, LabDir: t.TempDir(),
		Network: spec.Network{CIDR: "127.0.0.0/24"}, Topology: spec.Topology{Masters: 3}}
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

// A pass the caller's context cut short is no verdict: Run returns the
// context's error and keeps no record of it for `lab list`.
func TestRunCutShortIsAnErrorNotAResult(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "v", Profile: spec.ProfileOpenShift, LabDir: t.TempDir(),
		Network: spec.Network{CIDR: "127.0.0.0/24"}, Topology: spec.Topology{Masters: 3}}
	s.Defaults()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, s, nil, Options{Timeout: time.Minute, Interval: time.Millisecond})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, res.Passes)
	assert.NoFileExists(t, labdir.VerifyRecordPath(s.LabDir))
}

func TestNodeStateComesBeforeConsoleReports(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	boot, _ := s.Node("bootstrap")
	master, _ := s.Node("master-0")
	started := time.Now().Add(-10 * time.Minute)
	old := &wire.Report{Node: "master-0", MAC: master.MAC, Seq: 9, Boot: started.Add(-time.Hour), Checks: []wire.Check{{Name: "dhcp", OK: true, Detail: "lease"}}}
	fresh := &wire.Report{Node: "bootstrap", MAC: boot.MAC, Seq: 2, Boot: started.Add(5 * time.Second), Checks: []wire.Check{{Name: "dhcp", OK: true, Detail: "lease"}}}
	writeConsole(t, s, "master-0", string(old.Line()))
	writeConsole(t, s, "bootstrap", string(fresh.Line()))

	// A destroyed VM: its console still holds all-✓ reports.
	checks := byGroupName(nodeChecks(context.Background(), s, false, map[string]*wire.Report{}, Options{Nodes: map[string]NodeVM{
		"bootstrap": {State: "running", Since: started}, "master-0": {State: "shut off"},
	}}))
	vm := checks["master-0 vm"]
	assert.True(t, vm.Failed())
	assert.Equal(t, "master-0 is shut off (domain "+s.DomainName(master)+")", vm.Detail)
	assert.Contains(t, vm.Fix, "bootlab lab up")
	_, trusted := checks["master-0 dhcp"]
	assert.False(t, trusted, "the reports of a VM that is off are not checks")
	assert.True(t, checks["bootstrap dhcp"].Passed(), "a report of the current boot counts")

	// Running again, but its last report is from an earlier boot.
	checks = byGroupName(nodeChecks(context.Background(), s, false, map[string]*wire.Report{}, Options{Nodes: map[string]NodeVM{
		"bootstrap": {State: "running", Since: started}, "master-0": {State: "running", Since: started},
	}}))
	rep := checks["master-0 report"]
	assert.True(t, rep.Failed())
	assert.Contains(t, rep.Detail, "no probe report since the VM started")
	_, trusted = checks["master-0 dhcp"]
	assert.False(t, trusted)

	// Restarted 20 s after its last boot (a `lab up` that redefined it
	// right after a `make demo`): that boot's all-✓ report is stale too.
	recent := &wire.Report{Node: "master-0", MAC: master.MAC, Seq: 3, Boot: started.Add(-20 * time.Second), Checks: []wire.Check{{Name: "dhcp", OK: true, Detail: "lease"}}}
	writeConsole(t, s, "master-0", string(recent.Line()))
	checks = byGroupName(nodeChecks(context.Background(), s, false, map[string]*wire.Report{}, Options{Nodes: map[string]NodeVM{
		"bootstrap": {State: "running", Since: started}, "master-0": {State: "running", Since: started},
	}}))
	assert.True(t, checks["master-0 report"].Failed(), "a report of the boot 20 s before the VM's start")
	_, trusted = checks["master-0 dhcp"]
	assert.False(t, trusted)

	// A guest clock a second behind the host's (the RTC's resolution):
	// its report of the current boot counts.
	behind := &wire.Report{Node: "master-0", MAC: master.MAC, Seq: 1, Boot: started.Add(-time.Second), Checks: []wire.Check{{Name: "dhcp", OK: true, Detail: "lease"}}}
	writeConsole(t, s, "master-0", string(behind.Line()))
	checks = byGroupName(nodeChecks(context.Background(), s, false, map[string]*wire.Report{}, Options{Nodes: map[string]NodeVM{
		"bootstrap": {State: "running", Since: started}, "master-0": {State: "running", Since: started},
	}}))
	assert.True(t, checks["master-0 dhcp"].Passed())
}

func TestSilentConsoleBlamesTheAccelerator(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	writeConsole(t, s, "master-0", "")
	long := time.Now().Add(-5 * time.Minute)
	vms := map[string]NodeVM{"bootstrap": {State: "running", Since: long}, "master-0": {State: "running", Since: long}}
	for accel, want := range map[spec.Accelerator]string{spec.AccelKVM: "--accel tcg", spec.AccelTCG: "probe-image build"} {
		checks := nodeChecks(context.Background(), s, false, map[string]*wire.Report{}, Options{Nodes: vms, Accelerator: accel})
		var found bool
		for _, c := range checks {
			if c.Group == "master-0" && c.Name == "report" {
				found = true
				assert.Contains(t, c.Detail, "printed nothing on its serial console")
				assert.Contains(t, c.Fix, want)
			}
		}
		assert.True(t, found)
	}
	// Shortly after start, silence is just a boot in progress.
	checks := nodeChecks(context.Background(), s, false, map[string]*wire.Report{}, Options{Nodes: map[string]NodeVM{"master-0": {State: "running", Since: time.Now()}}, Accelerator: spec.AccelKVM})
	for _, c := range checks {
		assert.NotContains(t, c.Detail, "printed nothing")
	}
}

// A backend that refuses connections has nothing listening on it: the fix
// says so and, on a probe lab, what the node's report tells about it,
// instead of pointing at a report that is clean.
func TestBackendFixNamesWhatDoesNotListen(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "v", Profile: spec.ProfileProbe, LabDir: t.TempDir(), Network: spec.Network{CIDR: "10.232.11.0/24"}, Topology: spec.Topology{Masters: 3}}
	s.Defaults()
	lbc := loadbalancer.LabConfig(s, false)
	var ingressHTTP, api loadbalancer.Frontend
	for _, fe := range lbc.Frontends {
		switch fe.Name {
		case "ingress-http":
			ingressHTTP = fe
		case "api":
			api = fe
		}
	}
	master := loadbalancer.Server{Name: "master-0", Address: "10.232.11.11"}
	refused := loadbalancer.BackendStatus{Frontend: "ingress-http", Server: "master-0", Address: "10.232.11.11:80", Status: "DOWN", LastCheck: "L4CON Connection refused"}
	ok := func(name string) wire.Check { return wire.Check{Name: name, OK: true, Detail: "fine"} }
	report := func(checks ...wire.Check) *wire.Report {
		return &wire.Report{Node: "master-0", Role: "master", Checks: checks}
	}
	for _, tc := range []struct {
		name    string
		fe      loadbalancer.Frontend
		b       loadbalancer.BackendStatus
		rep     *wire.Report
		want    []string
		notWant []string
	}{
		{
			name: "clean report without an ingress server",
			fe:   ingressHTTP, b: refused,
			rep:     report(ok("dhcp"), ok("ignition-fetch"), ok("serve api :6443"), ok("serve mcs :22623")),
			want:    []string{"nothing listens on 10.232.11.11:80 on master-0", "Connection refused", "lists no \"serve ... :80\"", "routes ingress-http to it", "bootlab lab probe-image build"},
			notWant: []string{"see its report above"},
		},
		{
			name: "its ingress server failed",
			fe:   ingressHTTP, b: refused,
			rep:  report(ok("dhcp"), wire.Check{Name: "serve ingress :80", Detail: "listen: address already in use"}),
			want: []string{"nothing listens on 10.232.11.11:80 on master-0", `its "serve ingress :80" check failed, see its report above`},
		},
		{
			name: "its ingress server is still starting",
			fe:   ingressHTTP, b: refused,
			rep:  report(ok("dhcp"), wire.Check{Name: "serve ingress :80", Pending: true, Detail: "waiting"}),
			want: []string{"nothing listens on 10.232.11.11:80 on master-0", `its "serve ingress :80" is still pending (waiting)`},
		},
		{
			name: "its report says it listens",
			fe:   ingressHTTP, b: refused,
			rep:  report(ok("serve ingress :80")),
			want: []string{"nothing listens on 10.232.11.11:80 on master-0", `although its report says "serve ingress :80"`, "did the VM restart?"},
		},
		{
			name: "it is still fetching its config",
			fe:   ingressHTTP, b: refused,
			rep:  report(ok("dhcp"), wire.Check{Name: "ignition-fetch", Pending: true, Detail: "attempt 3"}),
			want: []string{"nothing listens on 10.232.11.11:80 on master-0", `has not got as far as serving ("ignition-fetch"`},
		},
		{
			name: "no report",
			fe:   ingressHTTP, b: refused,
			want: []string{"nothing listens on 10.232.11.11:80 on master-0", "no probe report yet", "bootlab lab status"},
		},
		{
			// haproxy shows L4CON alone between its checks: the stage gate
			// reads that as nothing listening, and so does the fix.
			name: "bare L4CON, no report",
			fe:   ingressHTTP, b: loadbalancer.BackendStatus{Status: "DOWN", LastCheck: "L4CON"},
			want: []string{"nothing listens on 10.232.11.11:80 on master-0 (haproxy's ingress-http check: L4CON)", "no probe report yet"},
		},
		{
			name: "not a refusal, clean report",
			fe:   api, b: loadbalancer.BackendStatus{Status: "DOWN", LastCheck: "L4TOUT"},
			rep:     report(ok("dhcp")),
			want:    []string{"master-0 does not pass haproxy's readyz check on 10.232.11.11:6443 (L4TOUT)", "is the VM running?"},
			notWant: []string{"nothing listens", "report above"},
		},
		{
			name: "not a refusal, failing report",
			fe:   api, b: loadbalancer.BackendStatus{Status: "DOWN", LastCheck: "L7STS 500"},
			rep:     report(ok("dhcp"), wire.Check{Name: "serve api :6443", Detail: "serving certificate: bad"}),
			want:    []string{"(L7STS 500): its report above says why (\"serve api :6443\")"},
			notWant: []string{"nothing listens"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := backendFix(s, tc.fe, master, tc.b, tc.rep)
			for _, w := range tc.want {
				assert.Contains(t, got, w)
			}
			for _, w := range tc.notWant {
				assert.NotContains(t, got, w)
			}
		})
	}

	// A real lab has no reports: the routers are what listens on 80.
	ocp := &spec.Spec{Name: "r", Profile: spec.ProfileOpenShift, LabDir: t.TempDir(), Network: spec.Network{CIDR: "10.232.11.0/24"}, Topology: spec.Topology{Masters: 3}}
	ocp.Defaults()
	got := backendFix(ocp, ingressHTTP, master, refused, nil)
	assert.Contains(t, got, "nothing listens on 10.232.11.11:80 on master-0")
	assert.Contains(t, got, "oc -n openshift-ingress get pods")
}

// Run keeps its last result in the lab directory for `lab list` and the
// dashboard: counts and each failed check's message, under the lab's
// identity (a lab of the same name built later does not read it).
func TestRunRecordsLastResult(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "v", Profile: spec.ProfileOpenShift, LabDir: t.TempDir(),
		Network: spec.Network{CIDR: "127.0.0.0/24"}, Topology: spec.Topology{Masters: 3}}
	s.Defaults()
	const labUUID = "0d6b6f3e-2f7e-4d5c-8a55-6a1f0f6a9b10"
	require.NoError(t, (&labdir.State{Name: s.Name, UUID: labUUID, Spec: s}).Save(s.LabDir))
	before, err := labdir.LoadVerifyRecord(s.LabDir, labUUID)
	require.NoError(t, err)
	require.Nil(t, before, "no record before the first verify")

	res, err := Run(context.Background(), s, nil, Options{Timeout: time.Minute, Interval: time.Millisecond})
	require.NoError(t, err)
	other, err := labdir.LoadVerifyRecord(s.LabDir, "another-lab-of-that-name")
	require.NoError(t, err)
	assert.Nil(t, other, "the result is this lab's only")
	rec, err := labdir.LoadVerifyRecord(s.LabDir, labUUID)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, labUUID, rec.LabUUID)
	assert.False(t, rec.OK)
	assert.Equal(t, len(res.Checks), rec.Total)
	assert.Equal(t, len(res.Checks)-len(res.Failed()), rec.Passed)
	require.Len(t, rec.Failed, len(res.Failed()))
	assert.Equal(t, res.Failed()[0].Name, rec.Failed[0].Name)
	assert.Equal(t, res.Failed()[0].Detail, rec.Failed[0].Detail)
	assert.WithinDuration(t, time.Now(), rec.Time, time.Minute)
	assert.Equal(t, fmt.Sprintf("%d of %d failed", len(res.Failed()), len(res.Checks)), rec.Summary())
	fi, err := os.Stat(labdir.VerifyRecordPath(s.LabDir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// A lab directory that does not exist (a lab never built) is not created by verify.
func TestRunRecordsNothingWithoutLabDir(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "v", Profile: spec.ProfileOpenShift, LabDir: filepath.Join(t.TempDir(), "absent"),
		Network: spec.Network{CIDR: "127.0.0.0/24"}, Topology: spec.Topology{Masters: 3}}
	s.Defaults()
	_, err := Run(context.Background(), s, nil, Options{Interval: time.Millisecond})
	require.NoError(t, err)
	assert.NoDirExists(t, s.LabDir)
}

// On a rehearsal lab, what the bootstrap and masters wait for is a stage:
// the fixes name it.
func TestRehearsalFixesNameTheStage(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "reh", Profile: spec.ProfileProbe, OpenShift: spec.OpenShift{ManualBootstrap: true}, LabDir: t.TempDir()}
	s.Defaults()
	m0, _ := s.Node("master-0")
	fix := nodeFix(s, m0, wire.Check{Name: "ignition-fetch", Pending: true, Detail: "GET https://api-int.ocp.lab.local:22623/config/master: connection refused"})
	assert.Contains(t, fix, "masters wait for the MCS: run `bootlab stage run 12`")
	assert.Contains(t, rehearsalBackendFix(s, "bootstrap", 22623), "`bootlab stage run 12`")
	assert.Contains(t, rehearsalBackendFix(s, "bootstrap", 6443), "stage 13")
	assert.Empty(t, rehearsalBackendFix(s, "master-0", 22623))

	plain := &spec.Spec{Name: "plain", Profile: spec.ProfileProbe, LabDir: t.TempDir()}
	plain.Defaults()
	assert.Empty(t, rehearsalBackendFix(plain, "bootstrap", 22623))
	assert.NotContains(t, nodeFix(plain, m0, wire.Check{Name: "ignition-fetch", Detail: "connection refused"}), "stage run 12")
}

// The record counts each state apart: a pending check (a stage not run
// yet) is neither passed nor among the failures the dashboard lists.
func TestRecordByState(t *testing.T) {
	t.Parallel()
	res := &Result{OK: true, Checks: []check.Result{
		{Group: "host", Name: "a", State: check.StatePassed},
		{Group: "host", Name: "b", State: check.StateWarning},
		{Group: "host", Name: "c", State: check.StatePending, Detail: "waits for stage 13"},
		{Group: "host", Name: "d", State: check.StateSkipped},
	}}
	rec := Record(res, time.Now())
	assert.Equal(t, labdir.VerifyRecord{Time: rec.Time, OK: true, Total: 4, Passed: 2, Pending: 1, Skipped: 1, Failed: []labdir.VerifyFailure{}}, *rec)
	assert.Equal(t, "2/4 ok, 1 pending", rec.Summary())

	res.OK = false
	res.Checks = append(res.Checks, check.Result{Group: "master-0", Name: "e", State: check.StateFailed, Detail: "no", Fix: "mend"})
	rec = Record(res, time.Now())
	assert.Equal(t, []labdir.VerifyFailure{{Group: "master-0", Name: "e", Detail: "no", Fix: "mend"}}, rec.Failed)
	assert.Equal(t, "1 of 5 failed, 1 pending", rec.Summary())
}

// A node whose agent counts more uptime than its VM has run (its clock ran
// ahead: the host was paused) has that said in the fix of each check that
// failed, since its own timeouts ended early; a node within the slack, one
// whose VM's start is unknown, and passing checks say nothing of it.
func TestClockAheadIsNamedInTheFix(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	boot, _ := s.Node("bootstrap")
	master, _ := s.Node("master-0")
	started := time.Now().Add(-8 * time.Minute)
	ahead := &wire.Report{Node: "master-0", MAC: master.MAC, Seq: 40, Boot: started.Add(3 * time.Second), UptimeMS: (10 * time.Minute).Milliseconds(), Checks: []wire.Check{
		{Name: "dhcp", OK: true, Detail: "lease"},
		{Name: "ignition-fetch", Detail: "GET https://api-int.ocp.lab.local:22623/config/master: gave up after 22 attempts: net/http: TLS handshake timeout"},
	}}
	inTime := &wire.Report{Node: "bootstrap", MAC: boot.MAC, Seq: 9, Boot: started.Add(2 * time.Second), UptimeMS: (8*time.Minute + 30*time.Second).Milliseconds(), Checks: []wire.Check{
		{Name: "dhcp", OK: true, Detail: "lease"}, {Name: "dns api.ocp.lab.local", Detail: "no answer"},
	}}
	writeConsole(t, s, "master-0", string(ahead.Line()))
	writeConsole(t, s, "bootstrap", string(inTime.Line()))
	byName := func(vms map[string]NodeVM) map[string]check.Result {
		return byGroupName(nodeChecks(context.Background(), s, false, map[string]*wire.Report{}, Options{Nodes: vms}))
	}
	checks := byName(map[string]NodeVM{"bootstrap": {State: "running", Since: started}, "master-0": {State: "running", Since: started}})
	fetch := checks["master-0 ignition-fetch"]
	require.True(t, fetch.Failed())
	assert.Contains(t, fetch.Fix, "nothing serves", "the fix of the failure itself comes first")
	assert.Regexp(t, `note: master-0's clock ran (2m0s|1m59s) ahead of this host's \(its agent counts 10m0s of uptime in a VM that has run (8m0s|8m1s)\)`, fetch.Fix)
	assert.Contains(t, fetch.Fix, "`virsh reboot "+s.DomainName(master)+"`")
	assert.Empty(t, checks["master-0 dhcp"].Fix, "a passing check has no fix")
	dns := checks["bootstrap dns api.ocp.lab.local"]
	require.True(t, dns.Failed())
	assert.NotContains(t, dns.Fix, "clock", "30 s over is within the slack")

	checks = byName(map[string]NodeVM{"bootstrap": {State: "running"}, "master-0": {State: "running"}})
	assert.NotContains(t, checks["master-0 ignition-fetch"].Fix, "clock", "the VM's start unknown (a restored checkpoint)")
}

func TestClockAhead(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	s.Profile, s.OpenShift.ManualBootstrap = spec.ProfileProbe, true
	boot, _ := s.Node("bootstrap")
	master, _ := s.Node("master-0")
	now := time.Date(2026, 11, 29, 13, 24, 33, 0, time.UTC)
	vm := NodeVM{State: "running", Since: now.Add(-8*time.Minute - 6*time.Second)}
	rep := &wire.Report{UptimeMS: (10 * time.Minute).Milliseconds()}
	assert.Equal(t, "; note: master-0's clock ran 1m54s ahead of this host's (its agent counts 10m0s of uptime in a VM that has run 8m6s), so its own timeouts ended early: "+
		"a TCG guest keeps time by the host CPU's time stamp counter, which can run on while the host's own clock stands still, as when the host, itself a VM, is paused; restart it to try again (`virsh reboot "+s.DomainName(master)+"`)",
		clockAhead(s, master, rep, vm, now))
	assert.Contains(t, clockAhead(s, boot, rep, vm, now), "`virsh reboot "+s.DomainName(boot)+"`; its stages then start again from 01)", "a rehearsal bootstrap's stages")
	rep.UptimeMS = (9*time.Minute + 5*time.Second).Milliseconds()
	assert.Empty(t, clockAhead(s, master, rep, vm, now), "59 s over: within the slack")
	rep.UptimeMS = (9*time.Minute + 6*time.Second).Milliseconds()
	assert.NotEmpty(t, clockAhead(s, master, rep, vm, now), "a minute over")
	assert.Empty(t, clockAhead(s, master, rep, NodeVM{State: "running"}, now), "the VM's start unknown")
}

// A node its agent is rebooting fails its vm check, saying it boots again
// on its own (not that lab up must start it).
func TestRebootingNodeSaysItBootsOnItsOwn(t *testing.T) {
	t.Parallel()
	s := testSpec(t)
	checks := byGroupName(nodeChecks(context.Background(), s, false, map[string]*wire.Report{}, Options{Nodes: map[string]NodeVM{
		"bootstrap": {State: "rebooting"},
	}}))
	vm := checks["bootstrap vm"]
	assert.True(t, vm.Failed())
	assert.Contains(t, vm.Detail, "bootstrap is rebooting")
	assert.Contains(t, vm.Fix, "boots again on its own")
	assert.NotContains(t, vm.Fix, "bootlab lab up")
}
