package check

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

// What preflight reports: no groups, a caveat, a failure, a remote host.
var preflight = []Result{
	{Name: "libvirt", State: StatePassed, Detail: "libvirt 9.0.0 at qemu:///system"},
	{Name: "accelerator", State: StateWarning, Detail: "tcg: no kernel", Fix: "set accelerator: kvm"},
	{Name: "haproxy", State: StateFailed, Detail: "haproxy not found on PATH", Fix: "apt-get install -y haproxy"},
	{Name: "memory", State: StatePassed, Detail: "enough", Fix: "never shown for a clean pass", Host: "root@classroom:22"},
	{Name: "disk", State: StatePassed, Detail: "enough", Host: "localhost"},
}

// What verify reports: groups, multi-line details, a fix naming a command.
var verify = []Result{
	{Group: "host", Name: "dns api.x", State: StatePassed, Detail: "api.x -> 1.2.3.4", DurationMS: 3},
	{Group: "master-0", Name: "ignition-fetch", State: StateFailed, Detail: "still pending:\n x509", Fix: "rewrite the pointer: `bootlab lab up`"},
	{Group: "master-0", Name: "dns", State: StatePassed},
	{Group: "master-1", Name: "ignition-fetch", State: StateFailed, Detail: "x509", Fix: "rewrite the pointer: `bootlab lab up`"},
	{Group: "master-2", Name: "ignition-fetch", State: StateFailed, Detail: "x509", Fix: "rewrite the pointer: `bootlab lab up`"},
	{Group: "master-2", Name: "dhcp", State: StateFailed, Detail: "no lease", Fix: "look at the console"},
}

// What stage status reports: done, pending, skipped.
var stageStatus = []Result{
	{Name: "01 openshift-manifests", State: StatePassed, Detail: "done"},
	{Name: "02 release-image", State: StateSkipped, Detail: "not in 4.12"},
	{Name: "03 api-bootstrap", State: StatePending, Detail: "pending: api-bootstrap.done missing"},
}

func TestWriteGoldens(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		rs   []Result
		o    Options
	}{
		{"preflight.txt", preflight, Options{}},
		{"verify.txt", verify, Options{GroupTitle: "WHERE", Fix: func(s string) string {
			return strings.ReplaceAll(s, "`bootlab lab up`", "`bootlab lab up --name x`")
		}}},
		{"stage-status.txt", stageStatus, Options{NameTitle: "STAGE"}},
		{"empty.txt", nil, Options{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			require.NoError(t, Write(&b, c.rs, c.o))
			golden(t, c.name, b.Bytes())
		})
	}
}

func TestWriteShape(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, Write(&b, verify, Options{GroupTitle: "WHERE"}))
	out := b.String()
	assert.Contains(t, out, "✓  host", "mark, then the group column")
	assert.Contains(t, out, "✗  master-0  ignition-fetch")
	assert.NotContains(t, out, "pending:\n", "details are one line")
	assert.Contains(t, out, "\n4 of 6 failed:\n✗ master-0 ignition-fetch: still pending: x509\n✗ master-1 ignition-fetch: x509\n✗ master-2 ignition-fetch: x509\n    fix: rewrite")
	for _, l := range strings.Split(out, "\n") {
		assert.Equal(t, strings.TrimRight(l, " "), l, "no trailing blanks")
	}

	b.Reset()
	require.NoError(t, Write(&b, preflight[:1], Options{}))
	assert.Equal(t, "   CHECK    DETAIL\n✓  libvirt  libvirt 9.0.0 at qemu:///system\n", b.String(), "no group column, no failure list")
}

func TestStates(t *testing.T) {
	t.Parallel()
	marks := ""
	for _, r := range append(append([]Result{}, preflight...), stageStatus...) {
		marks += r.Mark()
	}
	assert.Equal(t, "✓!✗✓✓✓-…", marks)
	assert.Equal(t, []Result{preflight[2]}, Failed(preflight))
	assert.Equal(t, []Result{verify[1], verify[3], verify[4], verify[5]}, Failed(verify))
	assert.False(t, OK(preflight))
	assert.True(t, OK(stageStatus), "skipped and pending are not failures")
	assert.True(t, OK(nil))
	assert.Equal(t, "master-0 dns", verify[2].Label())
	assert.Equal(t, "libvirt", preflight[0].Label())

	// A result that never set its state counts against its run.
	assert.True(t, Result{}.Failed())
	assert.Equal(t, "✗", Result{}.Mark())
	assert.False(t, State("ok").Known())
	assert.Equal(t, []bool{true, true, false, false, false}, []bool{StatePassed.Passed(), StateWarning.Passed(), StateFailed.Passed(), StateSkipped.Passed(), StatePending.Passed()})
	assert.Equal(t, StatePassed, PassIf(true))
	assert.Equal(t, StateFailed, PassIf(false))
}

func TestSummary(t *testing.T) {
	t.Parallel()
	assert.Equal(t, Summary{Total: 5, Passed: 4, Warned: 1, Failed: 1}, Summarize(preflight))
	assert.Equal(t, "1 of 5 failed, 1 with a warning", Summarize(preflight).String())
	assert.Equal(t, "all 1 passed", Summarize(preflight[:1]).String())
	assert.Equal(t, "1 of 3 passed, 1 skipped, 1 pending", Summarize(stageStatus).String())
	assert.Equal(t, "all 0 passed", Summarize(nil).String())
}

func TestJSON(t *testing.T) {
	t.Parallel()
	body, err := json.MarshalIndent(NewDoc(append(append([]Result{}, preflight...), verify[:3]...)), "", "  ")
	require.NoError(t, err)
	golden(t, "doc.json", append(body, '\n'))

	body, err = json.Marshal(NewDoc(nil))
	require.NoError(t, err)
	assert.JSONEq(t, `{"ok": true, "checks": []}`, string(body), "no checks is [], not null")

	var back Doc
	require.NoError(t, json.Unmarshal([]byte(`{"ok":false,"checks":[{"group":"host","name":"n","state":"warning","ok":true,"warning":true,"detail":"d","fix":"f","host":"h","durationMs":7}]}`), &back))
	assert.Equal(t, Result{Group: "host", Name: "n", State: StateWarning, Detail: "d", Fix: "f", Host: "h", DurationMS: 7}, back.Checks[0], "every field has its documented name")
}

// Every state survives the round trip, and the legacy booleans written
// beside "state" say the same as it, for readers of schema 1.
func TestJSONStates(t *testing.T) {
	t.Parallel()
	legacy := map[State]string{
		StatePassed:  `"ok":true`,
		StateWarning: `"ok":true,"warning":true`,
		StateFailed:  `"ok":false`,
		StateSkipped: `"ok":false,"skipped":true`,
		StatePending: `"ok":false,"pending":true`,
	}
	for _, st := range States() {
		body, err := json.Marshal(Result{Name: "n", State: st})
		require.NoError(t, err)
		assert.JSONEq(t, `{"name":"n","state":"`+string(st)+`","detail":"",`+legacy[st]+`}`, string(body))
		var back Result
		require.NoError(t, json.Unmarshal(body, &back))
		assert.Equal(t, st, back.State)
	}
	body, err := json.Marshal(Result{Name: "forgot"})
	require.NoError(t, err)
	assert.Contains(t, string(body), `"state":"failed","detail":"","ok":false`, "a check that set no state is written as it counts: failed")
}

// A check written before "state" existed is read from its four booleans.
func TestJSONLegacy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want State
	}{
		{`{"name":"n","ok":true}`, StatePassed},
		{`{"name":"n","ok":true,"warning":true}`, StateWarning},
		{`{"name":"n","ok":false,"warning":true}`, StateFailed},
		{`{"name":"n","ok":false}`, StateFailed},
		{`{"name":"n"}`, StateFailed},
		{`{"name":"n","ok":false,"skipped":true}`, StateSkipped},
		{`{"name":"n","ok":false,"pending":true}`, StatePending},
		{`{"name":"n","ok":true,"state":"pending"}`, StatePending},
	} {
		var r Result
		require.NoError(t, json.Unmarshal([]byte(c.in), &r), c.in)
		assert.Equal(t, c.want, r.State, c.in)
	}
	var r Result
	err := json.Unmarshal([]byte(`{"name":"n","state":"ok"}`), &r)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `check state "ok" is none of passed, warning, failed, skipped, pending`)
}

// Pending results that say what they wait for are listed at the end, one
// line per thing to run, so a lab with nothing failed still says what next.
func TestWritePendingList(t *testing.T) {
	t.Parallel()
	rs := []Result{
		{Group: "host", Name: "dns", State: StatePassed},
		{Group: "master-0", Name: "ignition-fetch", State: StatePending, Detail: "waits for stage 12", Fix: "`bootlab stage run --to 12`"},
		{Group: "master-1", Name: "ignition-fetch", State: StatePending, Detail: "waits for stage 12", Fix: "`bootlab stage run --to 12`"},
		{Group: "host", Name: "backend api/bootstrap", State: StatePending, Detail: "waits for stage 13", Fix: "`bootlab stage run --to 13`"},
		{Group: "host", Name: "stage", State: StatePending, Detail: "no fix: not listed"},
	}
	var b bytes.Buffer
	require.NoError(t, Write(&b, rs, Options{Fix: func(s string) string { return strings.ReplaceAll(s, "12`", "12 --name x`") }}))
	assert.Contains(t, b.String(), "\n1 of 5 passed, 4 pending:\n"+
		"… 2 checks (master-0 ignition-fetch, ...) pending\n    next: `bootlab stage run --to 12 --name x`\n"+
		"… host backend api/bootstrap pending\n    next: `bootlab stage run --to 13`\n")
	assert.NotContains(t, b.String(), "host stage pending")

	b.Reset()
	require.NoError(t, Write(&b, append(rs, Result{Name: "x", Detail: "broken", Fix: "mend it"}), Options{}))
	assert.True(t, strings.HasSuffix(b.String(), "\n1 of 6 failed, 4 pending:\n✗ x: broken\n    fix: mend it\n"), "failures come last, under the summary: %s", b.String())
}
