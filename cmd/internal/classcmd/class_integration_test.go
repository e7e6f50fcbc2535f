//go:build integration

package classcmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/libvirt"
	"github.com/bootlab/bootlab/stages"
)

// class up builds every lab (recording the class), class down removes
// them and spares a lab of no class on the same daemon.
func TestClassUpDownSparesOtherLabs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Setenv(cmdutil.EnvLab, "")
	t.Chdir(t.TempDir())
	ctx := context.Background()
	conn, err := libvirt.Connect(ctx, "test:///default", nil)
	require.NoError(t, err)
	defer conn.Close()

	// A lab of no class, built as lab up builds it.
	// Boot files that exist: up uploads them into the lab's pool.
	boot := t.TempDir()
	for _, f := range []string{"k", "i"} {
		require.NoError(t, os.WriteFile(filepath.Join(boot, f), []byte(f), 0o644))
	}
	solo := &spec.Spec{Name: "it-solo", Libvirt: spec.Libvirt{URI: "test:///default"}, Network: spec.Network{CIDR: "10.232.0.0/24"},
		Topology: spec.Topology{Masters: 1}, Image: spec.Image{Kernel: filepath.Join(boot, "k"), Initrd: filepath.Join(boot, "i")}}
	solo.Defaults()
	_, err = lab.Up(ctx, conn, solo, lab.UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = lab.Down(ctx, conn, solo, lab.DownOptions{}) })

	file := classFile(t, "")
	out, _, err := run(t, "config", "-f", file)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(out, "kind: Lab"), out)
	assert.Contains(t, out, "cidr: 10.231.0.0/24")
	assert.Contains(t, out, "cidr: 10.231.1.0/24")

	_, errOut, err := run(t, "up", "-f", file, "--no-preflight", "--parallel", "2")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "✓ up it-ann (learner ann)")
	assert.Contains(t, errOut, "[it-ben] ")
	for _, n := range []string{"it-ann", "it-ben"} {
		st, err := labdir.LoadState(filepath.Join(home, "labs", n))
		require.NoError(t, err)
		assert.Equal(t, "it", st.Class)
		_, err = conn.LookupNetwork(ctx, "bootlab-"+n)
		assert.NoError(t, err, "network of %s", n)
	}
	// Again: nothing to change, the labs keep their networks.
	_, errOut, err = run(t, "up", "-f", file, "--no-preflight")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "nothing to change: lab it-ann already matches the spec")

	out, _, err = run(t, "status", "--name", "it")
	require.NoError(t, err)
	assert.Contains(t, out, "ann      it-ann  10.231.0.0/24")

	// reset without --to rebuilds one lab: a new identity, the same class
	// and network; the other lab is not touched.
	before, err := labdir.LoadState(filepath.Join(home, "labs", "it-ann"))
	require.NoError(t, err)
	benBefore, err := labdir.LoadState(filepath.Join(home, "labs", "it-ben"))
	require.NoError(t, err)
	_, errOut, err = run(t, "reset", "ann", "--name", "it")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "lab it-ann rebuilt")
	after, err := labdir.LoadState(filepath.Join(home, "labs", "it-ann"))
	require.NoError(t, err)
	assert.NotEqual(t, before.UUID, after.UUID, "down then up makes the lab anew")
	assert.Equal(t, "it", after.Class)
	assert.Equal(t, before.Spec.Network.CIDR, after.Spec.Network.CIDR)
	benAfter, err := labdir.LoadState(filepath.Join(home, "labs", "it-ben"))
	require.NoError(t, err)
	assert.Equal(t, benBefore.UUID, benAfter.UUID, "the other lab is untouched")
	_, _, err = run(t, "reset", "zed", "--name", "it")
	assert.ErrorContains(t, err, `class it has no lab of learner "zed" (learners with a lab: [ann ben])`)

	// The rebuilt lab reached no stage and was never verified, even with
	// the earlier lab's records and verify result in its directory; its
	// own first stage shows.
	ann := filepath.Join(home, "labs", "it-ann", "stages")
	require.NoError(t, os.MkdirAll(ann, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ann, "records.jsonl"),
		[]byte(`{"phase":"stage end","number":15,"result":"success","labUUID":"`+before.UUID+`"}`+"\n"), 0o600))
	require.NoError(t, labdir.SaveVerifyRecord(filepath.Join(home, "labs", "it-ann"), &labdir.VerifyRecord{OK: true, Total: 1, Passed: 1, LabUUID: before.UUID}))
	annStatus := func() LabStatus {
		out, _, err := run(t, "status", "--name", "it", "-o", "json")
		require.NoError(t, err)
		var doc ClassStatus
		require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
		for _, l := range doc.Labs {
			if l.Learner == "ann" {
				return l
			}
		}
		t.Fatalf("no line for ann:\n%s", out)
		return LabStatus{}
	}
	st := annStatus()
	assert.Empty(t, st.Stage, "the earlier lab's stages are not the rebuilt lab's")
	assert.Nil(t, st.Verify, "nor is its verify result")
	log, err := stages.OpenLog(ann, after.UUID)
	require.NoError(t, err)
	require.NoError(t, log.Records.Record(stages.Record{Phase: stages.PhaseEnd, Number: 1, Result: stages.ResultSuccess}))
	require.NoError(t, log.Close())
	assert.Equal(t, "01 openshift-manifests", annStatus().Stage)

	// A learner's stage records go with the class, as with every lab down.
	_, errOut, err = run(t, "down", "-f", file, "--yes")
	require.NoError(t, err, errOut)
	for _, n := range []string{"it-ann", "it-ben"} {
		_, err = conn.LookupNetwork(ctx, "bootlab-"+n)
		assert.Error(t, err, "network of %s removed", n)
		assert.NoDirExists(t, filepath.Join(home, "labs", n))
	}
	_, err = conn.LookupNetwork(ctx, solo.NetworkName())
	assert.NoError(t, err, "the lab of no class is spared")
	assert.DirExists(t, solo.LabDir)
	assert.NoDirExists(t, filepath.Join(home, "classes", "it"))
}
