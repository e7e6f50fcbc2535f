package diagnose

import (
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Line is one line of a file, numbered as in the file (from 1).
type Line struct {
	N    int
	Text string
	// T is the time the line carries (a journal's prefix, a klog header,
	// a JSON log's "ts"); zero when it carries none.
	T time.Time
}

// Lines are f's lines with their times; year completes the times that
// name none (journalctl's short format, klog).
func (f *File) Lines(year int) []Line {
	if f == nil {
		return nil
	}
	if f.lines != nil {
		return f.lines
	}
	text := strings.TrimSuffix(f.text, "\n")
	if text == "" {
		f.lines = []Line{}
		return f.lines
	}
	raw := strings.Split(text, "\n")
	f.lines = make([]Line, len(raw))
	for i, l := range raw {
		l = strings.TrimSuffix(l, "\r")
		f.lines[i] = Line{N: f.skipped + i + 1, Text: l, T: lineTime(l, year)}
	}
	return f.lines
}

// End is the last time f's lines carry (zero when none does).
func (f *File) End(year int) time.Time {
	ls := f.Lines(year)
	for i := len(ls) - 1; i >= 0; i-- {
		if !ls[i].T.IsZero() {
			return ls[i].T
		}
	}
	return time.Time{}
}

// Data is f's content (for the JSON and certificate readers): a copy.
func (f *File) Data() []byte { return []byte(f.text) }

// Text is f's content.
func (f *File) Text() string { return f.text }

var (
	// RFC 3339 at the start of a line (journalctl short-iso, most tools).
	isoTime = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?)`)
	// klog's header: "I0514 10:23:45.123456 ...".
	klogTime = regexp.MustCompile(`^[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{1,9})`)
	// A JSON log line's time (etcd, the operators): "ts":"...".
	jsonTime = regexp.MustCompile(`"ts":"(\d{4}-\d{2}-\d{2}T[^"]{8,40})"`)
)

var months = map[string]time.Month{"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6,
	"Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12}

// lineTime is the time a log line starts with, in any of the forms the
// bundle's logs use, UTC; zero when it has none.
func lineTime(l string, year int) time.Time {
	if len(l) < 15 {
		return time.Time{}
	}
	// Each form is known by its first bytes: the regular expressions run
	// only on the lines that may match (a journal has millions).
	switch c := l[0]; {
	case c >= 'A' && c <= 'Z' && l[3] == ' ' && (c != 'I' && c != 'W' && c != 'E' && c != 'F' || l[1] > '9'):
	case c >= '0' && c <= '9' && l[4] == '-':
		if m := isoTime.FindStringSubmatch(l); m != nil {
			if t, ok := parseISO(m[1]); ok {
				return t
			}
		}
		return time.Time{}
	case c == 'I' || c == 'W' || c == 'E' || c == 'F':
		if m := klogTime.FindStringSubmatch(l); m != nil {
			mon, _ := strconv.Atoi(m[1])
			return date(year, mon, m[2], m[3], m[4], m[5], m[6])
		}
		return time.Time{}
	case c == '{':
		if m := jsonTime.FindStringSubmatch(l); m != nil {
			if t, ok := parseISO(m[1]); ok {
				return t
			}
		}
		return time.Time{}
	default:
		return time.Time{}
	}
	return shortTime(l, year)
}

// shortTime reads journalctl's short form, "May 14 10:23:45[.123456] ",
// by hand: a bootstrap's journals have millions of lines.
func shortTime(l string, year int) time.Time {
	mon, ok := months[l[:3]]
	if !ok {
		return time.Time{}
	}
	rest := strings.TrimLeft(l[4:], " ")
	day, rest, ok := strings.Cut(rest, " ")
	if !ok || len(day) > 2 || len(rest) < 9 || rest[2] != ':' || rest[5] != ':' {
		return time.Time{}
	}
	clock, frac := rest[:8], ""
	if len(rest) > 9 && rest[8] == '.' {
		end := 9
		for end < len(rest) && end < 18 && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		frac = rest[9:end]
	}
	if !digits(day) || !digits(clock[:2]) || !digits(clock[3:5]) || !digits(clock[6:8]) {
		return time.Time{}
	}
	return date(year, int(mon), day, clock[:2], clock[3:5], clock[6:8], frac)
}

// digits is true for a non-empty run of ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// date builds a UTC time from a line's fields; zero for a field out of range.
func date(year, mon int, day, h, m, s, frac string) time.Time {
	d, _ := strconv.Atoi(day)
	hh, _ := strconv.Atoi(h)
	mm, _ := strconv.Atoi(m)
	ss, _ := strconv.Atoi(s)
	if mon < 1 || mon > 12 || d < 1 || d > 31 || hh > 23 || mm > 59 || ss > 60 {
		return time.Time{}
	}
	ns := 0
	if frac != "" {
		f := (frac + "000000000")[:9]
		ns, _ = strconv.Atoi(f)
	}
	return time.Date(year, time.Month(mon), d, hh, mm, ss, ns, time.UTC)
}

// parseISO parses the RFC 3339 forms logs use (a space for the T, no zone
// meaning UTC, a zone without its colon).
func parseISO(s string) (time.Time, bool) {
	s = strings.Replace(s, " ", "T", 1)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// secrets are the shapes of a secret that may sit in a log line: a bearer
// token, a key=value or "key": "value" whose key says token, password,
// secret or auth, a private key's PEM header, a JWT, a long base64 run (a
// pull secret's auth).
var secrets = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+`), "${1}…"},
	{regexp.MustCompile(`(?i)((?:token|password|passwd|secret|auth|credentials?)["']?\s*[:=]\s*["']?)[^"'\s,;}]+`), "${1}…"},
	{regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----.*`), "-----BEGIN … PRIVATE KEY----- (hidden)"},
	{regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`), "… (a token, hidden)"},
}

// base64Run is a long run of base64: a pull secret's auth, a key. A run of
// one case only (a sha256 digest, a container id) is left as it is.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/]{64,}={0,2}`)

func hideBase64(s string) string {
	if !strings.ContainsAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") || !strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz") {
		return s
	}
	return "… (hidden)"
}

// maxShown is the most characters of a line a diagnosis prints.
const maxShown = 400

// Shown is a log line as a diagnosis prints it: secrets hidden, control
// characters (a terminal's escapes) replaced, cut to maxShown characters.
func Shown(l string) string {
	var b strings.Builder
	for _, r := range l {
		switch {
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r) || r == unicode.ReplacementChar || unicode.In(r, unicode.Bidi_Control):
			b.WriteRune('�')
		default:
			b.WriteRune(r)
		}
	}
	s := b.String()
	for _, x := range secrets {
		s = x.re.ReplaceAllString(s, x.with)
	}
	s = base64Run.ReplaceAllStringFunc(s, hideBase64)
	if r := []rune(s); len(r) > maxShown {
		s = string(r[:maxShown]) + "…"
	}
	return s
}

// lastingWindow is how close to a log's end a failure must still show to
// count as lasting, not a retry early in the bootstrap that later passed.
const lastingWindow = 3 * time.Minute

// lasting is true when the matching lines ms of f (in order) keep on to
// its end: the last one within lastingWindow of the file's last time, or,
// in a file without times, among its last 20 lines.
func lasting(f *File, ms []Line, year int) bool {
	if len(ms) == 0 {
		return false
	}
	last := ms[len(ms)-1]
	if end := f.End(year); !end.IsZero() && !last.T.IsZero() {
		return end.Sub(last.T) <= lastingWindow
	}
	ls := f.Lines(year)
	return len(ls) == 0 || last.N > ls[len(ls)-1].N-20
}

// persistentSpan is how long a failure must have gone on, to the end of a
// log, to count as persistent: longer than a control-plane pod's restart
// (a new revision of the kube-apiserver refuses connections for a minute).
const persistentSpan = 2 * time.Minute

// persistent is true when the matching lines ms of f last to its end
// (lasting) and go back at least persistentSpan from the last one (or,
// in a file without times, number at least 5).
func persistent(f *File, ms []Line, year int) bool {
	if !lasting(f, ms, year) {
		return false
	}
	last := ms[len(ms)-1]
	if last.T.IsZero() {
		return len(ms) >= 5
	}
	for _, m := range ms {
		if !m.T.IsZero() && last.T.Sub(m.T) >= persistentSpan {
			return true
		}
	}
	return false
}

// grep is the lines of f that contain any of subs.
func grep(f *File, year int, subs ...string) []Line {
	var out []Line
	for _, l := range f.Lines(year) {
		for _, s := range subs {
			if strings.Contains(l.Text, s) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// grepRe is the lines of f that match re.
func grepRe(f *File, year int, re *regexp.Regexp) []Line {
	var out []Line
	for _, l := range f.Lines(year) {
		if re.MatchString(l.Text) {
			out = append(out, l)
		}
	}
	return out
}
