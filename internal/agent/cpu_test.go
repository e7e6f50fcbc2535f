package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/wire"
)

// procStat is a /proc/<pid>/stat line for comm with the given utime,
// stime, cutime and cstime (clock ticks).
func procStat(comm string, ut, st, cut, cst int) string {
	return fmt.Sprintf("1 (%s) S 0 1 1 0 -1 4194560 100 0 0 0 %d %d %d %d 20 0 1 0 5 1000 10\n", comm, ut, st, cut, cst)
}

// The node's CPU by program: a program's processes add up (with the
// children they reaped), a name the kernel cut at 15 bytes is the
// program's file name, a name with spaces and parentheses is read whole,
// processes that used nothing, entries that are not processes and stat
// lines that do not parse are left out, the most first, at most top.
func TestProgramCPU(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	add := func(pid, stat, cmdline string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, pid), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, pid, "stat"), []byte(stat), 0o644))
		if cmdline != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, pid, "cmdline"), []byte(cmdline), 0o644))
		}
	}
	add("1", procStat("bootlab-probe", 300, 100, 250, 50), "/init\x00")
	add("20", procStat("etcd", 1000, 200, 0, 0), "")
	add("21", procStat("etcd", 30, 20, 0, 0), "")
	add("30", procStat("kube-controller", 90, 10, 0, 0), "/run/kube/bin/kube-controller-manager\x00--v=2\x00")
	add("31", procStat("kworker/0:1-ev", 5, 0, 0, 0), "")
	add("40", procStat("a (b) c", 10, 0, 0, 0), "")
	add("41", procStat("sleep", 0, 0, 0, 0), "")
	add("42", "42 (broken) S 0 1", "")
	add("self", procStat("ignored", 999, 0, 0, 0), "")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sys"), 0o755))

	got := programCPU(dir, 8)
	assert.Equal(t, []wire.ProgramCPU{
		{Program: "etcd", Seconds: 12.5},
		{Program: "bootlab-probe", Seconds: 7},
		{Program: "kube-controller-manager", Seconds: 1},
		{Program: "a (b) c", Seconds: 0.1},
		{Program: "kworker/0:1-ev", Seconds: 0.1},
	}, got)
	assert.Equal(t, got[:2], programCPU(dir, 2), "at most top programs")
	assert.Nil(t, programCPU(filepath.Join(dir, "absent"), 8))

	rep := wire.Report{CPU: got[:2]}
	assert.Equal(t, "etcd 12.5 s, bootlab-probe 7.0 s", rep.CPUSummary())
	back, err := wire.ParseConsole(bytes.NewReader(rep.Line()))
	require.NoError(t, err)
	assert.Equal(t, got[:2], back.CPU, "the CPU list survives the console line")
}
