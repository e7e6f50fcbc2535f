package images

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/cache"
)

// progress draws one download line on a terminal, redrawn in place:
//
//	rhcos-4.1....qcow2.gz [======>         ] 512.0 MiB / 1.1 GiB  45%  12.3 MiB/s  ETA 0:48
//
// size, percentage, rate and time left; on one line of at most 100 columns;
// with "\r" and spaces, never an escape code, so TERM=dumb shows it too.
// When stderr is not a terminal it draws nothing: the step line says what
// is downloading, and logs are not the place for a bar.
//
// It is hand-written rather than charm's bubbles progress component: that
// is a bar and a percentage only (no size, rate or ETA), animated by a
// bubbletea program that would own the terminal for the length of one line.
type progress struct {
	w     io.Writer
	name  string
	total int64
	n     int64
	// resumed bytes were on disk already: counted in the size, not the rate.
	resumed int64
	start   time.Time
	lastAt  time.Time
	lastLen int
	// nameWidth keeps the line within lineWidth at its longest, so the
	// name does not change length as rate and ETA appear.
	nameWidth int
	now       func() time.Time
}

// redrawEvery limits redraws: fast enough to look live, rare enough to cost nothing.
const redrawEvery = 200 * time.Millisecond

// newProgress returns the line for a download of total bytes (<= 0:
// unknown), or nil, which counts nothing and draws nothing, when w is nil
// or not a terminal.
func newProgress(w io.Writer, tty bool, name string, total int64) *progress {
	return newProgressClock(w, tty, name, total, time.Now)
}

// newProgressClock is newProgress with a clock; the download starts now.
func newProgressClock(w io.Writer, tty bool, name string, total int64, now func() time.Time) *progress {
	if w == nil || !tty {
		return nil
	}
	// The longest the rest of the line gets: a full bar, sizes, rate, ETA.
	longest := len(" 1023.9 MiB  1023.9 MiB/s  ETA 10:00:00")
	if total > 0 {
		longest = len(" [] ") + barWidth + 2*len(cache.HumanSize(total)) + len(" /  100%  1023.9 MiB/s  ETA 10:00:00")
	}
	return &progress{w: w, name: name, total: total, now: now, start: now(),
		nameWidth: max(lineWidth-len(indent)-longest, 12)}
}

// resume records bytes already downloaded by an earlier run.
func (p *progress) resume(n int64) {
	if p == nil {
		return
	}
	p.n += n
	p.resumed += n
}

// add counts n bytes that arrived.
func (p *progress) add(n int64) {
	if p == nil || n == 0 {
		return
	}
	now := p.now()
	p.n += n
	if now.Sub(p.lastAt) < redrawEvery {
		return
	}
	p.lastAt = now
	p.draw(p.line(now, false))
}

// finish draws the final line and ends it.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.draw(p.line(p.now(), true))
	fmt.Fprint(p.w, "\n")
}

// draw overwrites the current line, padding with spaces over a longer one.
func (p *progress) draw(line string) {
	pad := max(p.lastLen-len(line), 0)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
	p.lastLen = len(line)
}

const (
	barWidth  = 16
	lineWidth = 100
	indent    = "   "
)

// line is the name (shortened: the step line above names the file in full),
// then the bar, sizes, percentage, rate and time left (or taken).
func (p *progress) line(now time.Time, done bool) string {
	var b strings.Builder
	if p.total > 0 {
		filled := int(min(p.n, p.total) * barWidth / p.total)
		head := ""
		if filled < barWidth {
			head = ">"
		}
		fmt.Fprintf(&b, " [%s%s%s] %s / %s %3d%%", strings.Repeat("=", filled), head,
			strings.Repeat(" ", barWidth-filled-len(head)), cache.HumanSize(p.n), cache.HumanSize(p.total), min(p.n, p.total)*100/p.total)
	} else {
		fmt.Fprintf(&b, " %s", cache.HumanSize(p.n))
	}
	if elapsed := now.Sub(p.start); elapsed >= time.Second {
		rate := float64(p.n-p.resumed) / elapsed.Seconds()
		fmt.Fprintf(&b, "  %s/s", cache.HumanSize(int64(rate)))
		switch {
		case done:
			fmt.Fprintf(&b, "  in %s", clock(elapsed))
		case p.total > 0 && rate > 0 && p.n < p.total:
			left := time.Duration(float64(p.total-p.n) / rate * float64(time.Second))
			fmt.Fprintf(&b, "  ETA %s", clock(left))
		}
	}
	return indent + shorten(p.name, p.nameWidth) + b.String()
}

// shorten keeps the start and end of a long file name, where versions and
// extensions are.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	keep := n - 3
	return s[:keep/2] + "..." + s[len(s)-(keep-keep/2):]
}

// clock prints a duration as m:ss, or h:mm:ss from an hour.
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
