// Package timing logs where the time of a command goes, phase by phase, at
// debug level: `bootlab -v --log-format json ...` prints them and the
// `make bench` scripts read them, so a slower benchmark names the phase
// that got slower. Nothing is printed at the normal log level.
package timing

import (
	"log/slog"
	"math"
	"time"
)

// Msg is the message of every timing line, what a reader selects on.
const Msg = "timing"

// Phases times the consecutive phases of one operation.
type Phases struct {
	log  *slog.Logger
	of   string
	now  func() time.Time
	last time.Time
}

// Start begins timing operation of (e.g. "lab up") on log; a nil log
// times nothing.
func Start(log *slog.Logger, of string) *Phases {
	return startAt(log, of, time.Now)
}

func startAt(log *slog.Logger, of string, now func() time.Time) *Phases {
	return &Phases{log: log, of: of, now: now, last: now()}
}

// Mark logs the phase that ends now, from the end of the previous one (or
// Start), and begins the next.
func (p *Phases) Mark(phase string) {
	t := p.now()
	Log(p.log, p.of, phase, t.Sub(p.last))
	p.last = t
}

// Log logs one phase of operation of that took d.
func Log(log *slog.Logger, of, phase string, d time.Duration) {
	if log == nil {
		return
	}
	log.Debug(Msg, "of", of, "phase", phase, "seconds", Seconds(d))
}

// Seconds is d in seconds, to the millisecond.
func Seconds(d time.Duration) float64 {
	return math.Round(d.Seconds()*1000) / 1000
}
