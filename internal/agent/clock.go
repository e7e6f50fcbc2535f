package agent

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/timing"
)

// The guest kernel's clock under TCG is the TSC, at the rate the kernel
// calibrated at boot against the HPET or PIT. On a loaded host that
// calibration can come out wrong (seen once: a bootstrap's clock ran 2.8
// times as fast), and tsc=reliable (lab/probe's Cmdline) turns off the watchdog
// that would notice: certificates, leases and every timeout then go
// wrong. The agent compares its clock with the real-time clock (the
// emulated CMOS RTC follows the host's) over clockWindow, and if its own
// ran faster by more than clockTolerance it switches the kernel to the
// HPET, slower to read but right, and says so. It does not set the time:
// a clock that ran fast is ahead, which no certificate minds, and a
// wrong verdict must not put a node's clock back.
const (
	clockWindow    = 30 * time.Second
	clockTolerance = 1.25
)

// guestClock is what the check reads and writes: the kernel's clock
// source files, the RTC and the agent's own clock (and how it waits).
type guestClock struct {
	Current, Available string
	RTC                func() (int64, error)
	Now                func() time.Time
	Sleep              func(context.Context, time.Duration) bool
}

// clockVerdict says whether the clock ran too fast: own is how long the
// agent's clock measured, rtc how long the RTC did (whole seconds, so one
// second of slack). ok is false when there is no verdict: an RTC that
// moved less than minRTC (seen on a VM: a master's RTC read the same
// second 40 s apart) says nothing. A clock that ran slow is no verdict
// either: a paused VM (a checkpoint) stops the guest's clock while the RTC
// goes on, and a reverted one sees the RTC jump ahead.
func clockVerdict(own, rtc time.Duration) (fast bool, ratio float64, ok bool) {
	if rtc < minRTC {
		return false, 0, false
	}
	fast = own.Seconds()/(rtc+time.Second).Seconds() > clockTolerance
	return fast, own.Seconds() / rtc.Seconds(), true
}

// minRTC is the least the RTC must move over the window for a verdict.
const minRTC = 5 * time.Second

// checkClock measures once, over clockWindow, and mends a clock that ran
// fast; it returns what it found.
func (a *Agent) checkClock(ctx context.Context, c guestClock) string {
	r0, err := c.RTC()
	if err != nil {
		return ""
	}
	t0 := c.Now()
	if !c.Sleep(ctx, clockWindow) {
		return ""
	}
	r1, err := c.RTC()
	if err != nil {
		return ""
	}
	own := c.Now().Sub(t0)
	rtc := time.Duration(r1-r0) * time.Second
	src, _ := os.ReadFile(c.Current)
	source := strings.TrimSpace(string(src))
	fast, ratio, ok := clockVerdict(own, rtc)
	if !ok {
		a.log.Warn("clock: the real-time clock did not move over the check: no verdict", "source", source, "own", own.Round(time.Second).String(), "rtc", rtc.String())
		return "no verdict"
	}
	if !fast {
		a.log.Info("clock", "source", source, "own", own.Round(time.Second).String(), "rtc", rtc.String())
		return "ok"
	}
	msg := fmt.Sprintf("clock: the kernel's clock (%s) ran %.1f times as fast as the real-time clock (%s by its count, %s by the RTC's): its TSC was calibrated wrongly at boot",
		source, ratio, own.Round(time.Second), rtc)
	avail, _ := os.ReadFile(c.Available)
	if !strings.Contains(" "+string(avail)+" ", " hpet ") {
		a.log.Warn(msg+"; no HPET to switch to", "available", strings.TrimSpace(string(avail)))
		return "fast, no hpet"
	}
	if err := os.WriteFile(c.Current, []byte("hpet"), 0o644); err != nil {
		a.log.Warn(msg+"; switching to the HPET failed", "err", err)
		return "fast, switch failed"
	}
	a.log.Warn(msg + "; switched to the HPET")
	return "fast, switched to hpet"
}

// WatchClock checks the guest's clock once, clockWindow after the agent
// starts (see checkClock); main runs it beside Run on a probe VM.
func (a *Agent) WatchClock(ctx context.Context) {
	const dir = "/sys/devices/system/clocksource/clocksource0/"
	a.checkClock(ctx, guestClock{
		Current: dir + "current_clocksource", Available: dir + "available_clocksource",
		RTC: readRTC, Now: time.Now, Sleep: timing.Sleep,
	})
}

// readRTC reads the RTC's seconds since the epoch (the emulated CMOS RTC
// follows the host's clock).
func readRTC() (int64, error) {
	b, err := os.ReadFile("/sys/class/rtc/rtc0/since_epoch")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
