package classcmd

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
)

// apiIntOf is where the lab network's DNS sends api-int.
func apiIntOf(t *testing.T, hv *fake.Hypervisor, network string) string {
	t.Helper()
	var n libvirtxml.Network
	require.NoError(t, n.Unmarshal(hv.NetworkObjects[network].XML))
	for _, h := range n.DNS.Host {
		for _, hn := range h.Hostnames {
			if strings.HasPrefix(hn.Hostname, "api-int.") {
				return h.IP
			}
		}
	}
	return ""
}

// class break sets the fault on every learner's lab (or those of
// --learner), class status shows the trainer which and since when, and
// --undo takes it back; a learner without a lab is refused naming those
// with one.
func TestClassBreakSetsAndUndoesOnEachLab(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	hv := fakeTestDriver()
	file := classFile(t, "")
	_, errOut, err := runOn(t, hv, "up", "-f", file, "--no-preflight")
	require.NoError(t, err, errOut)
	before := map[string]string{}
	for _, l := range []string{"ann", "ben"} {
		before[l] = apiIntOf(t, hv, "bootlab-it-"+l)
		require.NotEmpty(t, before[l], l)
	}
	out, _, err := runOn(t, hv, "status", "--name", "it")
	require.NoError(t, err)
	assert.NotContains(t, out, "FAULT", "no fault set: no column")

	_, errOut, err = runOn(t, hv, "break", "api-int-wrong-address", "--name", "it")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "✓ break it-ann (learner ann)")
	assert.Contains(t, errOut, "✓ break it-ben (learner ben)")
	for _, l := range []string{"ann", "ben"} {
		assert.NotEqual(t, before[l], apiIntOf(t, hv, "bootlab-it-"+l), "%s's api-int moved", l)
	}
	out, _, err = runOn(t, hv, "status", "--name", "it")
	require.NoError(t, err)
	assert.Contains(t, out, "FAULT (MINUTES TAKEN, DIAGNOSED, FIXED)")
	assert.Equal(t, 2, strings.Count(out, "api-int-wrong-address (0m)"), out)
	js, _, err := runOn(t, hv, "status", "--name", "it", "-o", "json")
	require.NoError(t, err)
	var doc ClassStatus
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	for _, l := range doc.Labs {
		require.Len(t, l.Faults, 1, l.Learner)
		assert.Equal(t, "api-int-wrong-address", l.Faults[0].Name)
		assert.False(t, l.Faults[0].BrokenAt.IsZero())
	}

	_, errOut, err = runOn(t, hv, "break", "--undo", "--name", "it", "--learner", "ben")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "undid api-int-wrong-address")
	assert.Equal(t, before["ben"], apiIntOf(t, hv, "bootlab-it-ben"), "ben's undone")
	assert.NotEqual(t, before["ann"], apiIntOf(t, hv, "bootlab-it-ann"), "ann's still set")

	_, _, err = runOn(t, hv, "break", "--undo", "--name", "it", "--learner", "zoe")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `class it has no lab of learner "zoe" (learners with a lab: ann, ben)`)
	_, errOut, err = runOn(t, hv, "break", "--undo", "--name", "it")
	require.NoError(t, err, errOut)
	assert.Equal(t, before["ann"], apiIntOf(t, hv, "bootlab-it-ann"))
}

// The usage errors come before any lab is looked at.
func TestClassBreakUsage(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	for args, want := range map[string]string{
		"":                               "name a fault",
		"--random api-int-wrong-address": "--random draws the faults",
		"--random --undo":                "--random draws the faults",
		"--seed 3 api-int-wrong-address": "--seed and --among go with --random",
		"--among etcd-peer-blocked api-int-wrong-address": "--seed and --among go with --random",
		"--random --among etcd-peer-blocked,nope":         `no fault "nope"`,
		"no-such-fault":                      `no fault "no-such-fault": the faults are api-int-wrong-address, lb-no-bootstrap-mcs`,
		"api-int-wrong-address --parallel 0": "--parallel 0",
	} {
		_, _, err := runOn(t, fakeTestDriver(), append([]string{"break", "--name", "it"}, strings.Fields(args)...)...)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want, args)
	}
}

// --random deals the shuffled catalogue round the learners: as many
// different faults as there are (up to the class's size), every fault a
// catalogue name, and the same seed the same deal; a learner's turn skips
// the faults their lab cannot take.
func TestDrawFaults(t *testing.T) {
	t.Parallel()
	names := []string{"a", "b", "c"}
	learners := []string{"l1", "l2", "l3", "l4", "l5"}
	all := func(string, string) bool { return true }
	d := drawFaults(learners, names, 7, all)
	assert.Equal(t, d, drawFaults(learners, names, 7, all), "the same seed, the same deal")
	seen := map[string]int{}
	for _, l := range learners {
		assert.Contains(t, names, d[l])
		seen[d[l]]++
	}
	assert.Len(t, seen, 3, "five learners get all three faults")
	for _, n := range seen {
		assert.LessOrEqual(t, n, 2, "dealt round: no fault twice before every fault once")
	}
	differs := false
	for seed := uint64(0); seed < 20 && !differs; seed++ {
		differs = drawFaults(learners, names, seed, all)["l1"] != d["l1"]
	}
	assert.True(t, differs, "another seed deals otherwise")

	// l2 and l4 have probe labs: fault "c" needs a rehearsal lab.
	probe := func(l, f string) bool { return f != "c" || (l != "l2" && l != "l4") }
	for seed := uint64(0); seed < 50; seed++ {
		d := drawFaults(learners, names, seed, probe)
		assert.NotEqual(t, "c", d["l2"], "seed %d", seed)
		assert.NotEqual(t, "c", d["l4"], "seed %d", seed)
		assert.Len(t, d, 5, "everyone gets a fault that applies")
	}
	assert.Empty(t, drawFaults([]string{"x"}, names, 1, func(string, string) bool { return false }), "nothing applies, nothing dealt")
}

// --random prints its seed and gives each learner a fault their probe lab
// can take (never csr-approval-stopped, which needs a rehearsal lab) among
// those --among names (the fake host runs no haproxy, so no load balancer
// fault here); the same seed deals the same faults again.
func TestClassBreakRandom(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	hv := fakeTestDriver()
	file := classFile(t, "")
	_, errOut, err := runOn(t, hv, "up", "-f", file, "--no-preflight")
	require.NoError(t, err, errOut)
	deal := func() string {
		_, errOut, err := runOn(t, hv, "break", "--random", "--seed", "3", "--name", "it", "--among", "csr-approval-stopped,api-int-wrong-address,etcd-peer-blocked")
		require.NoError(t, err, errOut)
		assert.Contains(t, errOut, "drawing one fault per learner with --seed 3")
		js, _, err := runOn(t, hv, "status", "--name", "it", "-o", "json")
		require.NoError(t, err)
		var doc ClassStatus
		require.NoError(t, json.Unmarshal([]byte(js), &doc))
		var got []string
		for _, l := range doc.Labs {
			require.Len(t, l.Faults, 1, l.Learner)
			assert.NotEqual(t, "csr-approval-stopped", l.Faults[0].Name, "a probe lab has no approve-csr.service")
			got = append(got, l.Learner+"="+l.Faults[0].Name)
		}
		_, errOut, err = runOn(t, hv, "break", "--undo", "--name", "it")
		require.NoError(t, err, errOut)
		return strings.Join(got, " ")
	}
	first := deal()
	assert.Equal(t, first, deal(), "the same seed, the same faults")
}

// A learner's progress on a fault comes from their own live diagnoses
// since it was set: diagnosed by the first that stopped at the fault's
// check, fixed by one that found nothing failed with bootkube complete;
// the minutes run until fixed. Diagnoses from before the fault count for
// nothing, nor does one that stopped elsewhere, nor a clean one before
// bootkube completed.
func TestFaultProgress(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	f := FaultStatus{Name: "api-int-wrong-address", BrokenAt: t0}
	ds := []lab.Diagnosis{
		{Time: at(-5), FailedAt: "api.dns"},
		{Time: at(3), FailedAt: "etcd.healthy"},
		{Time: at(4), FailedAt: "api.dns"},
		{Time: at(6), FailedAt: "api.dns"},
		{Time: at(9), Complete: false},
	}
	got := faultProgress(f, "api.dns", ds, at(20))
	require.NotNil(t, got.DiagnosedAt)
	assert.True(t, got.DiagnosedAt.Equal(at(4)))
	assert.Nil(t, got.FixedAt, "clean but bootkube not complete: not fixed yet")
	assert.Equal(t, 20, got.Minutes, "still running")
	assert.Equal(t, "api-int-wrong-address (20m, diagnosed)", faultCell([]FaultStatus{got}))

	got = faultProgress(f, "api.dns", append(ds, lab.Diagnosis{Time: at(13), Complete: true}), at(20))
	require.NotNil(t, got.FixedAt)
	assert.True(t, got.FixedAt.Equal(at(13)))
	assert.Equal(t, 13, got.Minutes, "the minutes stop when fixed")
	assert.Equal(t, "api-int-wrong-address (13m, diagnosed, fixed)", faultCell([]FaultStatus{got}))

	got = faultProgress(f, "api.dns", nil, at(7))
	assert.Nil(t, got.DiagnosedAt)
	assert.Equal(t, "api-int-wrong-address (7m)", faultCell([]FaultStatus{got}))
	assert.Equal(t, "-", faultCell(nil))
}
