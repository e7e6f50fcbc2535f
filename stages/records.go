package stages

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Record is one event of a stage run, in the shape of bootkube's service
// records (/var/log/openshift/bootkube.json: timestamp, phase, stage,
// result, errorLine, errorMessage) plus what a replay adds: the stage
// number, the node, the duration and why a stage was skipped.
type Record struct {
	Timestamp time.Time `json:"timestamp"`
	// Phase is "stage start", "stage end" or "stage skip".
	Phase  string `json:"phase"`
	Stage  string `json:"stage"`
	Number int    `json:"number"`
	Node   string `json:"node,omitempty"`
	// Result is success, failure, interrupted or skipped.
	Result Result `json:"result,omitempty"`
	Reason string `json:"reason,omitempty"`
	// DurationSeconds is set on "stage end".
	DurationSeconds float64 `json:"durationSeconds,omitempty"`
	ErrorLine       string  `json:"errorLine,omitempty"`
	// ErrorMessage holds the error and the last lines of output, as
	// bootkube's records hold the last journal lines of the unit.
	ErrorMessage string `json:"errorMessage,omitempty"`
	// LabUUID is the identity (labdir.State.UUID) of the lab the record was
	// written for: a lab of the same name built later has another UUID and
	// never takes these records for its own.
	LabUUID string `json:"labUUID,omitempty"`
}

// Of says whether r was written for the lab whose state has labUUID.
// Records from before records carried a UUID have none: they belong only
// to a lab whose state has none either (one built before labs had UUIDs),
// never to a lab with a UUID, which cannot prove they are its own.
func (r Record) Of(labUUID string) bool { return r.LabUUID == labUUID }

// Record phases.
const (
	PhaseStart = "stage start"
	PhaseEnd   = "stage end"
	PhaseSkip  = "stage skip"
)

// Result is how a stage ended: in a record (success, failure, skipped) or
// in a run's outcome, which adds dry-run (printed, not run).
type Result string

const (
	ResultSuccess Result = "success"
	ResultFailure Result = "failure"
	ResultSkipped Result = "skipped"
	// ResultInterrupted is a stage whose script ended without an exit
	// status: the node rebooted or the connection was lost while it ran.
	// Its marker says whether its work was done; run it again.
	ResultInterrupted Result = "interrupted"
	// ResultDryRun is an outcome only: the stage's script was printed.
	ResultDryRun Result = "dry-run"
)

// RecordSink receives records.
type RecordSink interface {
	Record(Record) error
}

// JSONLines writes each record as one JSON line.
type JSONLines struct {
	mu sync.Mutex
	W  io.Writer
	// LabUUID is stamped on every record that names no lab itself.
	LabUUID string
}

// Record writes r as one line.
func (j *JSONLines) Record(r Record) error {
	if r.LabUUID == "" {
		r.LabUUID = j.LabUUID
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err = j.W.Write(append(data, '\n'))
	return err
}

// Log is a lab's stage log on the workstation: records.jsonl (one JSON
// line per event) and output.log (every line the scripts printed).
type Log struct {
	Dir     string
	Records *JSONLines
	Output  io.Writer
	files   []*os.File
}

// Log file names inside the stage log directory.
const (
	RecordsFile = "records.jsonl"
	OutputFile  = "output.log"
)

// OpenLog opens (appending) the stage log in dir (labdir.Stages(spec)) of
// the lab whose state has labUUID: every record written carries it.
func OpenLog(dir, labUUID string) (*Log, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create stage log directory: %w", err)
	}
	l := &Log{Dir: dir}
	for _, name := range []string{RecordsFile, OutputFile} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("open stage log: %w", err)
		}
		l.files = append(l.files, f)
	}
	l.Records = &JSONLines{W: l.files[0], LabUUID: labUUID}
	l.Output = l.files[1]
	return l, nil
}

// Close closes the log files.
func (l *Log) Close() error {
	var first error
	for _, f := range l.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ReadRecords reads the records in the stage log directory dir (oldest
// first) that were written for the lab whose state has labUUID (Record.Of);
// the rest belong to another lab and are left out. No log is no records.
// A line that is not a record (cut short by a crash) is skipped.
func ReadRecords(dir, labUUID string) ([]Record, error) {
	f, err := os.Open(filepath.Join(dir, RecordsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read stage records: %w", err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) != nil || !r.Of(labUUID) {
			continue
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read stage records %s: %w", f.Name(), err)
	}
	return out, nil
}
