//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
)

// TestCheckpointSaveBreakRestore checkpoints a verified probe lab (1
// bootstrap + 1 master, TCG), breaks it (a node powered off, a stage record
// changed, the lab pivoted), restores, and expects the lab to verify green
// again with its files as they were; down leaves no snapshot and nothing
// else. It logs save/restore time and the overlays' disk cost (BENCH line).
func TestCheckpointSaveBreakRestore(t *testing.T) {
	parallel(t)
	l := newLabWith(t, "topology:\n  masters: 1\n  workers: 0\n")
	mustRun(t, "lab", "up", "-f", l.SpecFile)
	booted := time.Now()
	v, r := verifyJSON(t, l, "5m")
	require.Equal(t, 0, r.Code, "verify before the checkpoint failed:\n%s", strings.Join(failedChecks(v), "\n"))
	s := loadSpec(t, l)
	records := labdir.Stages(s)
	require.NoError(t, os.MkdirAll(records, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(records, "marker"), []byte("at checkpoint\n"), 0o644))
	stateBefore, err := os.ReadFile(filepath.Join(s.LabDir, "state.json"))
	require.NoError(t, err)

	start := time.Now()
	mustRun(t, "lab", "checkpoint", "save", "start", "-f", l.SpecFile)
	save := time.Since(start)
	var disk []string
	for _, n := range s.Nodes {
		out, err := exec.Command("qemu-img", "info", "-U", "--output=json", filepath.Join(s.Storage.PoolDir, s.VolumeName(n))).Output()
		require.NoError(t, err, "qemu-img info of %s", n.Name)
		var info struct {
			ActualSize int64 `json:"actual-size"`
			Snapshots  []struct {
				Name    string `json:"name"`
				VMState int64  `json:"vm-state-size"`
			} `json:"snapshots"`
		}
		require.NoError(t, json.Unmarshal(out, &info))
		require.Len(t, info.Snapshots, 1, "%s: one internal snapshot in its overlay", n.Name)
		assert.Equal(t, "bootlab-start", info.Snapshots[0].Name)
		assert.Positive(t, info.Snapshots[0].VMState, "%s: the snapshot holds the running node's memory", n.Name)
		disk = append(disk, n.Name+" overlay "+mib(info.ActualSize)+" (memory "+mib(info.Snapshots[0].VMState)+")")
	}

	r = mustRun(t, "lab", "checkpoint", "list", "-f", l.SpecFile, "-o", "json")
	var list struct {
		Checkpoints []struct {
			Name    string            `json:"name"`
			Nodes   map[string]string `json:"nodes"`
			Missing []string          `json:"missing"`
		} `json:"checkpoints"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &list))
	require.Len(t, list.Checkpoints, 1)
	assert.Equal(t, "start", list.Checkpoints[0].Name)
	assert.Len(t, list.Checkpoints[0].Nodes, 2)
	assert.Empty(t, list.Checkpoints[0].Missing)

	// Break it.
	master := s.DomainName(s.Nodes[1])
	_, err = virsh(t, "destroy", master)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(records, "marker"), []byte("after\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(records, "later"), []byte("x\n"), 0o644))
	// Pivot: the bootstrap leaves the load balancer and the state says so.
	mustRun(t, "lab", "pivot", "-f", l.SpecFile)
	_, r = verifyJSON(t, l, "0")
	require.Equal(t, 4, r.Code, "verify notices the broken lab")
	// The restored master resumes a run that began at its boot, in a qemu
	// the restore starts: verify must not take its reports for stale ones
	// of an earlier run, however long ago the boot was (verify's slack for
	// clock skew is 30s, so wait past it).
	if wait := 40*time.Second - time.Since(booted); wait > 0 {
		time.Sleep(wait)
	}

	start = time.Now()
	mustRun(t, "lab", "checkpoint", "restore", "start", "-f", l.SpecFile)
	restore := time.Since(start)
	out, err := virsh(t, "domstate", master)
	require.NoError(t, err)
	assert.Equal(t, "running", strings.TrimSpace(out))
	data, err := os.ReadFile(filepath.Join(records, "marker"))
	require.NoError(t, err)
	assert.Equal(t, "at checkpoint\n", string(data))
	assert.NoFileExists(t, filepath.Join(records, "later"))
	stateAfter, err := os.ReadFile(filepath.Join(s.LabDir, "state.json"))
	require.NoError(t, err)
	after := stripUpdated(stateAfter)
	assert.Equal(t, map[string]any{"checkpoint": "start"}, map[string]any{"checkpoint": after["restored"].(map[string]any)["checkpoint"]},
		"the restore is recorded")
	delete(after, "restored")
	assert.Equal(t, stripUpdated(stateBefore), after, "state.json is the checkpoint's")
	v, r = verifyJSON(t, l, "3m")
	require.Equal(t, 0, r.Code, "verify after restore failed:\n%s", strings.Join(failedChecks(v), "\n"))
	assert.False(t, v.Pivoted, "the checkpoint was taken before the pivot")
	backends := map[string]bool{}
	for _, c := range v.Checks {
		backends[c.Group+" "+c.Name] = c.OK
	}
	assert.True(t, backends["host backend api/bootstrap"], "the load balancer serves the API from the bootstrap again: %v", backends)

	t.Logf("BENCH checkpoint of a 2-node probe lab (TCG): save %.1fs, restore %.1fs; %s",
		save.Seconds(), restore.Seconds(), strings.Join(disk, "; "))

	labDown(t, l.LabDir, "-f", l.SpecFile)
	assert.Empty(t, leftovers(t, l))
	assert.NoDirExists(t, filepath.Join(s.LabDir, "checkpoints"))
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// stripUpdated drops the "updated" time the state carries.
func stripUpdated(b []byte) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "updated")
	return m
}
