package classcmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// These class tests run on the shared fake hypervisor: what they check is
// the command's logic (refusals, the summary, down's reach), which does
// not need libvirtd. TestClassUpDownSparesOtherLabs keeps class up and
// down on the real daemon.

// A class whose override takes another lab's network is refused before
// anything is created, naming the field and the lab (exit 3).
func TestClassUpRefusesClashBeforeCreating(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Chdir(t.TempDir())
	other := &spec.Spec{Name: "it-other", Libvirt: spec.Libvirt{URI: "test:///default"}, Network: spec.Network{CIDR: "10.233.0.0/24"}}
	other.Defaults()
	require.NoError(t, (&labdir.State{Name: other.Name, UUID: "u", Spec: other}).Save(other.LabDir))

	file := classFile(t, "overrides:\n  ben:\n    network: {cidr: 10.233.0.0/24}\n")
	hv := fakeTestDriver()
	_, _, err := runOn(t, hv, "up", "-f", file, "--no-preflight")
	require.Error(t, err)
	assert.Equal(t, file+": overrides.ben.network.cidr: 10.233.0.0/24 overlaps lab it-other (10.233.0.0/24): choose a free range", err.Error())
	assert.Equal(t, cmdutil.ExitInvalid, cmdutil.ExitCodeOf(err))
	assert.NoDirExists(t, filepath.Join(home, "labs", "it-ann"), "nothing was created")
	assert.Empty(t, hv.NetworkObjects, "nothing was defined")
}

// One lab's failure does not stop the others: the summary names the lab
// and why, the exit is non-zero, and class down still removes the failed
// lab (its state named the class before anything was made).
func TestClassUpOneLabFails(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Chdir(t.TempDir())
	ctx := context.Background()
	conn := fakeTestDriver()
	// A network that is not bootlab's holds ben's lab network name.
	_, err := conn.DefineNetwork(ctx, `<network><name>bootlab-it-ben</name><bridge name="itforeign0"/><ip address="10.234.0.1" netmask="255.255.255.0"/></network>`)
	require.NoError(t, err)

	file := classFile(t, "")
	_, errOut, err := runOn(t, conn, "up", "-f", file, "--no-preflight")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "class up failed for 1 of 2 labs:\n  it-ben (learner ben): ")
	assert.Contains(t, errOut, "✓ up it-ann (learner ann)")
	assert.Contains(t, errOut, "✗ up it-ben (learner ben)")
	st, err := labdir.LoadState(filepath.Join(home, "labs", "it-ben"))
	require.NoError(t, err)
	assert.Equal(t, "it", st.Class)
	assert.Nil(t, st.Spec, "the failed lab records no spec")

	_, errOut, err = runOn(t, conn, "down", "--name", "it", "--yes")
	require.NoError(t, err, errOut)
	assert.NoDirExists(t, filepath.Join(home, "labs", "it-ann"))
	assert.NoDirExists(t, filepath.Join(home, "labs", "it-ben"))
	_, err = conn.LookupNetwork(ctx, "bootlab-it-ben")
	assert.NoError(t, err, "the network that was not the lab's is spared")
}

// class up --dry-run makes the class checks, then prints each lab's plan
// (lab up --dry-run's, with the options class up builds it with) and its
// handout, and changes nothing: no lab directory, no libvirt object. A
// class that would be refused is refused the same way.
func TestClassUpDryRunChangesNothing(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Chdir(t.TempDir())
	hv := fakeTestDriver()
	file := classFile(t, "")
	out, errOut, err := runOn(t, hv, "up", "-f", file, "--dry-run")
	require.NoError(t, err, errOut)
	for _, l := range []string{"ann", "ben"} {
		assert.Contains(t, out, "class up would make these changes to lab it-"+l+" (learner "+l+"; nothing was changed):\n")
		assert.Contains(t, out, "define    network      bootlab-it-"+l+"\n")
		assert.Contains(t, out, "update    classDir     "+filepath.Join(home, "classes", "it", "handouts", l)+" (handout)\n")
	}
	assert.Empty(t, hv.Mutations(), "nothing defined")
	assert.NoDirExists(t, filepath.Join(home, "labs"), "no lab directory")
	assert.NoDirExists(t, filepath.Join(home, "classes"), "no handout")

	out, _, err = runOn(t, hv, "up", "-f", file, "--dry-run", "-o", "json")
	require.NoError(t, err)
	var doc ClassUpPlan
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Labs, 2)
	assert.Equal(t, "it-ann", doc.Labs[0].Name)
	assert.True(t, doc.Labs[0].Changed)

	// Refused as class up refuses it.
	clash := classFile(t, "overrides:\n  ben:\n    labDir: /etc\n")
	_, _, err = runOn(t, hv, "up", "-f", clash, "--dry-run")
	assert.Equal(t, cmdutil.ExitInvalid, cmdutil.ExitCodeOf(err), "%v", err)
	assert.Empty(t, hv.Mutations())
	assert.NoDirExists(t, filepath.Join(home, "labs"))
}
