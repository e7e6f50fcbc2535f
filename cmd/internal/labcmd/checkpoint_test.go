package labcmd

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab"
)

func TestCheckpointFlags(t *testing.T) {
	var got *CheckpointOptions
	run := func(args ...string) error {
		got = nil
		cmd := NewCmdCheckpoint(testFactory(), func(o *CheckpointOptions) error { got = o; return nil })
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		return cmd.Execute()
	}
	require.NoError(t, run("save", "before-08", "-f", "lab.yaml"))
	assert.Equal(t, "save", got.Verb)
	assert.Equal(t, "before-08", got.Name)
	assert.Equal(t, "lab.yaml", got.Spec.File)

	require.NoError(t, run("list", "-o", "json", "--name", "ux1"))
	assert.Equal(t, "list", got.Verb)
	assert.Equal(t, "json", got.Output)

	require.NoError(t, run("restore", "x"))
	assert.Equal(t, "restore", got.Verb)
	require.NoError(t, run("delete", "x"))
	assert.Equal(t, "delete", got.Verb)

	assert.ErrorContains(t, run("save"), "lab checkpoint save takes one checkpoint name")
	assert.ErrorContains(t, run("restore", "Before_08"), `checkpoint name "Before_08" is not a DNS label`)
	assert.ErrorContains(t, run("list", "extra"), "lab checkpoint list takes no arguments")
	assert.Nil(t, got, "a refused command does not run")
}

func TestPrintCheckpoints(t *testing.T) {
	var out bytes.Buffer
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	require.NoError(t, printCheckpoints(&out, []lab.Checkpoint{
		{Name: "a", Created: created, Nodes: map[string]string{"bootlab-t-master-0": "running", "bootlab-t-bootstrap": "shutoff"}},
		{Name: "b", Created: created, Nodes: map[string]string{"bootlab-t-master-0": "running"}, Missing: []string{"files"}},
	}))
	assert.Equal(t, "NAME  CREATED              NODES                                                   MISSING\n"+
		"a     2026-01-02 03:04:05  bootlab-t-bootstrap=shutoff bootlab-t-master-0=running  -\n"+
		"b     2026-01-02 03:04:05  bootlab-t-master-0=running                              files\n", out.String())
}
