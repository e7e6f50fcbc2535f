package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Dir holds the node's journal, under /var/log as journald's persistent
// journal is (/var/log/journal), in a directory of bootlab's own: its files
// are not journald's binary format.
const Dir = "/var/log/bootlab/journal"

// BootIDPath is the kernel's id of this boot, journald's _BOOT_ID.
const BootIDPath = "/proc/sys/kernel/random/boot_id"

// Entry is one journal entry, by journald's field names.
type Entry struct {
	// Realtime is __REALTIME_TIMESTAMP: microseconds since the epoch, as
	// a decimal string.
	Realtime   string `json:"__REALTIME_TIMESTAMP"`
	BootID     string `json:"_BOOT_ID"`
	Hostname   string `json:"_HOSTNAME"`
	Unit       string `json:"_SYSTEMD_UNIT"`
	Identifier string `json:"SYSLOG_IDENTIFIER"`
	PID        string `json:"_PID"`
	// Priority is syslog's: 3 err, 4 warning, 6 info.
	Priority string `json:"PRIORITY"`
	Message  string `json:"MESSAGE"`
}

// Time is the entry's __REALTIME_TIMESTAMP.
func (e Entry) Time() time.Time {
	us, _ := strconv.ParseInt(e.Realtime, 10, 64)
	return time.UnixMicro(us)
}

// Priorities, as syslog numbers them.
const (
	PriErr     = 3
	PriWarning = 4
	PriInfo    = 6
)

// Writer appends one unit's entries to its file under a directory.
type Writer struct {
	dir, unit, ident, host, boot string
	pid                          int
	now                          func() time.Time
	mu                           sync.Mutex
}

// NewWriter returns the writer of unit's entries (bootkube.service) by
// identifier ident (bootkube.sh) with pid, in dir (Dir on a node).
func NewWriter(dir, unit, ident string, pid int) *Writer {
	host, _ := os.Hostname()
	return &Writer{dir: dir, unit: unit, ident: ident, pid: pid, host: host, boot: BootID(), now: time.Now}
}

// WithClock makes the writer stamp entries with now (tests).
func (w *Writer) WithClock(now func() time.Time) *Writer {
	w.now = now
	return w
}

// Unit is the unit the writer writes the journal of.
func (w *Writer) Unit() string { return w.unit }

// Print appends one entry of priority pri (each line of msg its own entry,
// as journald splits a stream). A journal that cannot be written costs
// the entry, never the caller.
func (w *Writer) Print(pri int, msg string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		_ = enc.Encode(Entry{Realtime: strconv.FormatInt(w.now().UnixMicro(), 10), BootID: w.boot, Hostname: w.host,
			Unit: w.unit, Identifier: w.ident, PID: strconv.Itoa(w.pid), Priority: strconv.Itoa(pri), Message: line})
	}
	if err := mkdirReadable(w.dir); err != nil {
		return
	}
	f, err := os.OpenFile(FilePath(w.dir, w.unit), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	// Readable by every user, whatever the writer's umask (the agent's
	// and sudo's are 077): core reads the journal without sudo, as a
	// member of systemd-journal does on RHCOS.
	_ = f.Chmod(0o644)
	_, _ = f.Write(b.Bytes())
	_ = f.Close()
}

// mkdirReadable makes dir and its missing parents 0755, whatever the
// umask.
func mkdirReadable(dir string) error {
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirReadable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.Chmod(dir, 0o755)
}

// FilePath is the file of unit's entries in dir.
func FilePath(dir, unit string) string { return filepath.Join(dir, unit+".jsonl") }

// BootID is this boot's id (journald's _BOOT_ID: the kernel's boot_id
// without dashes), or "" where the kernel does not say.
func BootID() string {
	b, err := os.ReadFile(BootIDPath)
	if err != nil {
		return ""
	}
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
}

// UnitName is unit as journalctl takes it: a name without a type is a
// .service (journalctl -u kubelet is kubelet.service).
func UnitName(unit string) string {
	if strings.Contains(unit, ".") {
		return unit
	}
	return unit + ".service"
}

// Query selects entries: of units (all when none), of boot (all when "").
type Query struct {
	Units []string
	Boot  string
}

// Read returns the entries of dir that q selects, oldest first. A line that
// is not an entry is skipped; an error names the file.
func Read(dir string, q Query) ([]Entry, error) {
	files, err := unitFiles(dir, q.Units)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, f := range files {
		es, err := readFile(f, q.Boot)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	sort.SliceStable(out, func(i, j int) bool { return realtime(out[i]) < realtime(out[j]) })
	return out, nil
}

func realtime(e Entry) int64 {
	us, _ := strconv.ParseInt(e.Realtime, 10, 64)
	return us
}

// unitFiles are the files of units in dir (every unit's when none).
func unitFiles(dir string, units []string) ([]string, error) {
	if len(units) == 0 {
		m, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		sort.Strings(m)
		return m, err
	}
	var out []string
	for _, u := range units {
		out = append(out, FilePath(dir, UnitName(u)))
	}
	return out, nil
}

func readFile(file, boot string) ([]Entry, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Realtime == "" {
			continue
		}
		if boot == "" || e.BootID == boot {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read %s: %w", file, err)
	}
	return out, nil
}

// Short writes e as journalctl's default output form, short:
// "May 14 10:29:55 bootstrap bootkube.sh[2201]: message".
func Short(w io.Writer, e Entry) {
	fmt.Fprintf(w, "%s %s %s[%s]: %s\n", e.Time().Local().Format(time.Stamp), e.Hostname, e.Identifier, e.PID, e.Message)
}

// ShortISO is journalctl -o short-iso: the time in ISO 8601 with its zone.
func ShortISO(w io.Writer, e Entry) {
	fmt.Fprintf(w, "%s %s %s[%s]: %s\n", e.Time().Local().Format("2006-01-02T15:04:05-0700"), e.Hostname, e.Identifier, e.PID, e.Message)
}

// Cat is journalctl -o cat: the message alone.
func Cat(w io.Writer, e Entry) { fmt.Fprintln(w, e.Message) }

// JSON is journalctl -o json: one entry a line.
func JSON(w io.Writer, e Entry) {
	b, _ := json.Marshal(e)
	fmt.Fprintf(w, "%s\n", b)
}
