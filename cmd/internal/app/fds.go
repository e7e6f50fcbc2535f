package app

import (
	"os"
	"strconv"
	"syscall"
)

// closeOnExecInherited marks every descriptor bootlab inherited above
// stderr close-on-exec. bootlab hands none on, but the programs it starts
// would otherwise keep them: haproxy, a daemon that outlives the command,
// held the lock file of the script that ran bootlab under flock(1), and
// the next run of that script waited on it silently. Descriptors bootlab
// opens itself are close-on-exec already (Go opens them so).
func closeOnExecInherited() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
