package stages

import (
	"encoding/json"
	"fmt"
	"io"
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
	// Result is success, failure or skipped.
	Result string `json:"result,omitempty"`
	Reason string `json:"reason,omitempty"`
	// DurationSeconds is set on "stage end".
	DurationSeconds float64 `json:"durationSeconds,omitempty"`
	ErrorLine       string  `json:"errorLine,omitempty"`
	// ErrorMessage holds the error and the last lines of output, as
	// bootkube's records hold the last journal lines of the unit.
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// Record phases and results.
const (
	PhaseStart = "stage start"
	PhaseEnd   = "stage end"
	PhaseSkip  = "stage skip"

	ResultSuccess = "success"
	ResultFailure = "failure"
	ResultSkipped = "skipped"
)

// RecordSink receives records.
type RecordSink interface {
	Record(Record) error
}

// JSONLines writes each record as one JSON line.
type JSONLines struct {
	mu sync.Mutex
	W  io.Writer
}

// Record writes r as one line.
func (j *JSONLines) Record(r Record) error {
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

// OpenLog opens (appending) the stage log in dir (labdir.Stages(spec)).
func OpenLog(dir string) (*Log, error) {
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
	l.Records = &JSONLines{W: l.files[0]}
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
