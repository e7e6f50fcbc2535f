package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A clock that ran fast is told from a right one, whole-second RTC
// readings and all; one that ran slow (a VM paused for a checkpoint, or
// reverted) is never taken for a fast one.
func TestClockVerdict(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		own, rtc time.Duration
		fast     bool
	}{
		{30 * time.Second, 30 * time.Second, false},
		{30 * time.Second, 29 * time.Second, false},
		{30 * time.Second, 31 * time.Second, false},
		{30 * time.Second, 24 * time.Second, false},
		{30 * time.Second, 11 * time.Second, true}, // 2.8 times as fast
		{30 * time.Second, 20 * time.Second, true},
		{30 * time.Second, 6 * time.Second, true},
		{30 * time.Second, 95 * time.Second, false}, // paused or reverted
	} {
		fast, _, ok := clockVerdict(c.own, c.rtc)
		assert.True(t, ok)
		assert.Equal(t, c.fast, fast, "own %s, rtc %s", c.own, c.rtc)
	}
	// An RTC that did not move (seen on a VM: 0 s over 40 s) or barely
	// did says nothing about the clock.
	for _, rtc := range []time.Duration{0, -5 * time.Second, time.Second, 4 * time.Second} {
		_, _, ok := clockVerdict(30*time.Second, rtc)
		assert.False(t, ok, "rtc %s", rtc)
	}
}

// fakeClock's own clock moves by own and its RTC by rtc over one window.
func fakeClock(t *testing.T, own, rtc time.Duration) guestClock {
	dir := t.TempDir()
	c := guestClock{Current: filepath.Join(dir, "current"), Available: filepath.Join(dir, "available")}
	require.NoError(t, os.WriteFile(c.Current, []byte("tsc\n"), 0o644))
	require.NoError(t, os.WriteFile(c.Available, []byte("tsc hpet acpi_pm \n"), 0o644))
	now, rtcNow := time.Unix(1000, 0), int64(1_700_000_000)
	c.Now = func() time.Time { return now }
	c.RTC = func() (int64, error) { return rtcNow, nil }
	c.Sleep = func(context.Context, time.Duration) bool {
		now, rtcNow = now.Add(own), rtcNow+int64(rtc/time.Second)
		return true
	}
	return c
}

// checkClock switches a fast clock to the HPET (and never sets the time);
// it leaves a right one alone, and one whose RTC did not move, and does
// nothing without an RTC.
func TestCheckClockMendsAFastClock(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := &Agent{log: newLogger(&out)}
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }

	c := fakeClock(t, 30*time.Second, 11*time.Second)
	assert.Equal(t, "fast, switched to hpet", a.checkClock(context.Background(), c))
	assert.Equal(t, "hpet", read(c.Current))
	assert.Contains(t, out.String(), "ran 2.7 times as fast as the real-time clock")

	c = fakeClock(t, 30*time.Second, 11*time.Second)
	require.NoError(t, os.WriteFile(c.Available, []byte("tsc acpi_pm\n"), 0o644))
	assert.Equal(t, "fast, no hpet", a.checkClock(context.Background(), c))
	assert.Equal(t, "tsc\n", read(c.Current), "nothing written")

	c = fakeClock(t, 30*time.Second, 30*time.Second)
	assert.Equal(t, "ok", a.checkClock(context.Background(), c))
	assert.Equal(t, "tsc\n", read(c.Current))

	c = fakeClock(t, 40*time.Second, 0)
	assert.Equal(t, "no verdict", a.checkClock(context.Background(), c), "an RTC that did not move")
	assert.Equal(t, "tsc\n", read(c.Current))

	c = fakeClock(t, 30*time.Second, 11*time.Second)
	c.RTC = func() (int64, error) { return 0, errors.New("no rtc0") }
	assert.Equal(t, "", a.checkClock(context.Background(), c), "no RTC, no check")
	assert.Equal(t, "tsc\n", read(c.Current))
}
