package agent

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bootlab/bootlab/internal/procstat"
	"github.com/bootlab/bootlab/internal/wire"
)

// cpuTop is how many programs a report names in its CPU list.
const cpuTop = 8

// programCPU reads each process under procDir (the node's /proc) and
// returns the CPU time by program, the most first, at most top of them.
// A process counts its own user and system time and its reaped children's
// (cutime, cstime), so a program that starts short-lived helpers is
// charged for them; the time of a process that exited is its parent's.
// Unreadable entries (a process that ended while read) are skipped.
func programCPU(procDir string, top int) []wire.ProgramCPU {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return nil
	}
	ticks := map[string]int64{}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := filepath.Join(procDir, e.Name())
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		st, err := procstat.Parse(stat)
		if err != nil {
			continue
		}
		if t := st.TicksWithChildren(); t > 0 {
			ticks[programName(dir, st.Comm)] += t
		}
	}
	out := make([]wire.ProgramCPU, 0, len(ticks))
	for name, t := range ticks {
		out = append(out, wire.ProgramCPU{Program: name, Seconds: math.Round(float64(t)*10/procstat.ClockTicks) / 10})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Seconds != out[j].Seconds {
			return out[i].Seconds > out[j].Seconds
		}
		return out[i].Program < out[j].Program
	})
	if len(out) > top {
		out = out[:top]
	}
	return out
}

// programName is the process's command name, or, where the kernel cut it
// at 15 bytes (kube-controller-manager), the program's file name from its
// command line.
func programName(dir, comm string) string {
	if len(comm) < 15 {
		return comm
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return comm
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	if base := filepath.Base(string(argv0)); strings.HasPrefix(base, comm) {
		return base
	}
	return comm
}
