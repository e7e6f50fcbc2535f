// Package procstat reads a process's /proc/<pid>/stat line (proc(5)): the
// one parser of it for the agent, the load balancer's liveness check and
// the e2e tests' CPU ledger.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ClockTicks is the unit of the stat line's times: USER_HZ, 100 on every
// Linux architecture bootlab runs on (sysconf(_SC_CLK_TCK), which the
// kernel fixes at 100 for user space).
const ClockTicks = 100

// Stat is what bootlab reads of a stat line.
type Stat struct {
	// Comm is the command name the kernel keeps, cut at 15 bytes; it may
	// hold spaces and parentheses.
	Comm string
	// State is the process state: R, S, D, Z (zombie), X (dead), ...
	State byte
	// UTime and STime are the process's user and system time, CUTime and
	// CSTime those of the children it waited for, in clock ticks.
	UTime, STime, CUTime, CSTime int64
}

// Parse reads a stat line. The command name is in parentheses and may
// itself hold ") ", so the fields start after the last ')'.
func Parse(line []byte) (Stat, error) {
	open, end := bytes.IndexByte(line, '('), bytes.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return Stat{}, errors.New("no parenthesised command name")
	}
	f := bytes.Fields(line[end+1:])
	// state is the first field after the name (proc(5)'s field 3), utime
	// the 12th after it (field 14), then stime, cutime and cstime.
	if len(f) < 15 {
		return Stat{}, fmt.Errorf("%d fields after the command name, want at least 15", len(f))
	}
	if len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("state %q is not one letter", f[0])
	}
	var times [4]int64
	for i, v := range f[11:15] {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 0 {
			return Stat{}, fmt.Errorf("time field %d: %q is not a tick count", 14+i, v)
		}
		times[i] = n
	}
	return Stat{Comm: string(line[open+1 : end]), State: f[0][0],
		UTime: times[0], STime: times[1], CUTime: times[2], CSTime: times[3]}, nil
}

// Gone is true for a zombie or a dead process: one that has exited.
func (s Stat) Gone() bool { return s.State == 'Z' || s.State == 'X' }

// Ticks is the process's own user and system time, in clock ticks.
func (s Stat) Ticks() int64 { return s.UTime + s.STime }

// TicksWithChildren adds the time of the children it waited for.
func (s Stat) TicksWithChildren() int64 { return s.Ticks() + s.CUTime + s.CSTime }
