package images

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress draws a download bar on w: redrawn in place on a terminal,
// otherwise one line per 10%.
type progress struct {
	w       io.Writer
	tty     bool
	name    string
	total   int64
	n       int64
	lastPct int
	lastAt  time.Time
}

func newProgress(w io.Writer, tty bool, name string, total int64) *progress {
	return &progress{w: w, tty: tty, name: name, total: total, lastPct: -1}
}

func (p *progress) add(n int64) {
	if p == nil || p.w == nil || n == 0 {
		p.count(n)
		return
	}
	p.n += n
	if p.tty {
		if time.Since(p.lastAt) < 200*time.Millisecond {
			return
		}
		p.lastAt = time.Now()
		fmt.Fprintf(p.w, "\r\x1b[K   %s", p.line())
		return
	}
	if p.total <= 0 {
		return
	}
	pct := int(p.n * 100 / p.total)
	if pct/10 > p.lastPct/10 || p.lastPct < 0 {
		p.lastPct = pct
		fmt.Fprintf(p.w, "   %s\n", p.line())
	}
}

func (p *progress) count(n int64) {
	if p != nil {
		p.n += n
	}
}

func (p *progress) line() string {
	if p.total <= 0 {
		return fmt.Sprintf("%s %s", p.name, human(p.n))
	}
	const width = 30
	filled := int(p.n * width / p.total)
	if filled > width {
		filled = width
	}
	return fmt.Sprintf("%s [%s%s] %s / %s %3d%%", p.name, strings.Repeat("=", filled), strings.Repeat(" ", width-filled),
		human(p.n), human(p.total), p.n*100/p.total)
}

func (p *progress) finish() {
	if p == nil || p.w == nil {
		return
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K   %s\n", p.line())
	}
}

func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
