package agent

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bootlab/bootlab/internal/guestcluster/shims"
	"github.com/bootlab/bootlab/internal/procstat"
	"github.com/bootlab/bootlab/internal/timing"
)

// A rehearsal node goes down as systemd takes an RHCOS node down: the
// kubelet stops its pods (its graceful node shutdown), every other process
// gets SIGTERM then SIGKILL, the file systems are synced and unmounted,
// and the kernel reboots or powers off (systemd's shutdown(8) stage,
// src/shutdown/shutdown.c). The power stand-ins (reboot, systemctl reboot,
// shutdown -r now, poweroff) ask for it by systemd's signals.

// killGrace is how long the processes left after the pods have after
// SIGTERM, as systemd's final kill waits (DefaultTimeoutStopSec is longer;
// nothing of a rehearsal node's needs it).
const killGrace = 5 * time.Second

// watchPower waits for a power signal and takes the node down.
func (a *Agent) watchPower() {
	ch := make(chan os.Signal, 1)
	var sigs []os.Signal
	for s := range shims.PowerSignals {
		sigs = append(sigs, s)
	}
	signal.Notify(ch, sigs...)
	s := <-ch
	a.powerDown(shims.PowerSignals[s.(syscall.Signal)])
}

// powerDown takes the node down and does p; it does not return.
func (a *Agent) powerDown(p shims.Power) {
	a.rep.shutdown(string(p))
	a.log.Info("going down: stopping the static pods", "action", p)
	ctx, cancel := context.WithTimeout(context.Background(), 2*killGrace+2*time.Second)
	defer cancel()
	if kl := a.kubelet.Load(); kl != nil {
		kl.Shutdown(ctx)
	}
	_ = unix.Kill(-1, unix.SIGTERM)
	waitForProcesses(ctx, killGrace)
	_ = unix.Kill(-1, unix.SIGKILL)
	waitForProcesses(ctx, time.Second)
	unix.Sync()
	if err := a.disk.unmount(); err != nil {
		a.log.Warn("the node disk stays mounted: synced, its journal replays on the next boot", "err", err)
	}
	unix.Sync()
	a.log.Info("synced and unmounted: "+string(p), "action", p)
	cmd := unix.LINUX_REBOOT_CMD_RESTART
	switch p {
	case shims.PowerOff:
		cmd = unix.LINUX_REBOOT_CMD_POWER_OFF
	case shims.Halt:
		cmd = unix.LINUX_REBOOT_CMD_HALT
	}
	if err := unix.Reboot(cmd); err != nil {
		a.log.Error("reboot(2) failed", "err", err)
	}
	select {}
}

// waitForProcesses waits up to d for every process but this one to be
// gone (a zombie is gone: its parent, this init, reaps it or not).
func waitForProcesses(ctx context.Context, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for otherProcesses("/proc", os.Getpid()) > 0 {
		if !timing.Sleep(ctx, 100*time.Millisecond) {
			return
		}
	}
}

// otherProcesses counts the live user-space processes under proc but self
// (kernel threads have no command line).
func otherProcesses(proc string, self int) int {
	ents, _ := os.ReadDir(proc)
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(proc, e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue
		}
		// One whose state cannot be read is waited for.
		if st, err := procstat.Parse(stat); err == nil && st.Gone() {
			continue
		}
		n++
	}
	return n
}

// unmount unmounts the kept trees and the node disk; a tree still busy
// leaves the disk mounted read-only instead, its data written.
func (d *nodeDisk) unmount() error {
	if d == nil {
		return nil
	}
	for i := len(keptTrees) - 1; i >= 0; i-- {
		_ = unix.Unmount(keptTrees[i].Path, 0)
	}
	if err := unix.Unmount(d.Root, 0); err == nil {
		return nil
	}
	return unix.Mount("", d.Root, "", unix.MS_REMOUNT|unix.MS_RDONLY, "")
}
