package diagnose

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// record is one entry of a service record, /var/log/openshift/<service>.json,
// as bootstrap-service-record.sh appends it (installer
// data/data/bootstrap/files/usr/local/bin/bootstrap-service-record.sh;
// the fields as pkg/gather/service/entry.go names them).
type record struct {
	Timestamp    string `json:"timestamp"`
	Phase        string `json:"phase"`
	Result       string `json:"result"`
	Stage        string `json:"stage"`
	PreCommand   string `json:"preCommand"`
	PostCommand  string `json:"postCommand"`
	ErrorLine    string `json:"errorLine"`
	ErrorMessage string `json:"errorMessage"`
	// line is the entry's first line in the file.
	line int
}

// Record phases and results.
const (
	phaseServiceStart = "service start"
	phaseServiceEnd   = "service end"
	phaseStageStart   = "stage start"
	phaseStageEnd     = "stage end"
	phasePostEnd      = "post-command end"
	resultSuccess     = "success"
	resultFailure     = "failure"
)

// service is what one service's record says.
type service struct {
	name string
	file *File
	recs []record
	// starts counts the service's starts; commands counts the starts of
	// its pre- and post-commands (kubelet.json holds only its
	// pre-command's: kubelet-pause-image).
	starts, commands int
	// successful: the last entry is a successful end of the service or of
	// its post-command (the installer's own rule, pkg/gather/service/analyze.go).
	successful bool
	// endedOK: the last entry is any successful end (a pre-command's too).
	endedOK bool
	// failure is the entry of the last failure; failingStage its stage,
	// kept from a failed stage end when the service's end follows it (as
	// the installer's analysis keeps it).
	failure      *record
	failingStage string
	// open is the stage the service was in when the record ends ("" when
	// none was open), and running is true when the record ends with a start.
	open    string
	running bool
	// failingNow: the record ends in a failure, or in a retry of the stage
	// that failed last (release-image's pull loop, bootkube restarted).
	failingNow bool
	// stageFailures are the failed ends of the stages a run carries on
	// after (bootkube's resolve-api-url, check-api-url: carriesOn).
	stageFailures []record
	err           error
}

// services reads every service record of the bundle, by name.
func (d *diag) readServices() {
	d.services = map[string]*service{}
	for _, f := range d.b.Glob("bootstrap/services/*.json") {
		name := strings.TrimSuffix(path.Base(f.Name), ".json")
		s := &service{name: name, file: f}
		s.recs, s.err = parseRecords(f.Data())
		if s.err == nil {
			s.analyze()
		}
		d.services[name] = s
	}
}

// parseRecords decodes a record file (a JSON array of entries), noting
// the line each entry starts on.
func parseRecords(data []byte) ([]record, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return nil, errors.New("it is empty or not JSON")
	}
	if delim, ok := t.(json.Delim); !ok || delim != '[' {
		return nil, errors.New("it is not a JSON array of entries")
	}
	var out []record
	for dec.More() {
		off := dec.InputOffset()
		var r record
		if err := dec.Decode(&r); err != nil {
			return out, fmt.Errorf("entry %d is not a record entry", len(out)+1)
		}
		r.line = lineAt(data, off)
		out = append(out, r)
	}
	return out, nil
}

// lineAt is the line (from 1) of the first non-blank byte at or after off.
func lineAt(data []byte, off int64) int {
	i := int(off)
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t' || data[i] == ',') {
		i++
	}
	return bytes.Count(data[:min(i, len(data))], []byte{'\n'}) + 1
}

// analyze walks the entries as the installer's analysis does, and adds
// what the record says of its end: the open stage, a retry of a failure.
func (s *service) analyze() {
	var prev *record
	// run and last are the failures of this run and of the run before.
	type fail struct {
		failed bool
		stage  string
	}
	var run, last fail
	for i := range s.recs {
		r := &s.recs[i]
		switch r.Phase {
		case phaseServiceStart:
			s.starts++
			last, run = run, fail{}
			s.open = ""
		case "pre-command start", "post-command start":
			s.commands++
		case phaseStageStart:
			s.open = r.Stage
		case phaseStageEnd:
			s.open = ""
		}
		s.successful = r.Result == resultSuccess && (r.Phase == phaseServiceEnd || r.Phase == phasePostEnd)
		s.endedOK = r.Result == resultSuccess && strings.HasSuffix(r.Phase, " end")
		if r.Result == resultFailure && r.Phase == phaseStageEnd && carriesOn[r.Stage] {
			s.stageFailures = append(s.stageFailures, *r)
			prev = r
			continue
		}
		if r.Result == resultFailure {
			// A stage's failure ends the service too: the failing stage
			// (and, when the end has none, the error) is the stage's.
			follows := prev != nil && prev.Phase == phaseStageEnd && prev.Result == resultFailure
			if !follows {
				s.failingStage = r.Stage
				if s.failingStage == "" && r.PreCommand != "" {
					s.failingStage = "pre-command " + r.PreCommand
				}
			}
			if !follows || s.failure == nil || r.ErrorMessage != "" && r.ErrorMessage != s.failure.ErrorMessage {
				s.failure = r
			}
			run = fail{true, s.failingStage}
		}
		prev = r
	}
	if prev == nil {
		return
	}
	s.running = strings.HasSuffix(prev.Phase, " start")
	switch {
	case prev.Result == resultFailure && !(prev.Phase == phaseStageEnd && carriesOn[prev.Stage]):
		s.failingNow = true
	case s.running && run.failed && s.open != "" && s.open == run.stage:
		s.failingNow = true // a loop retrying the stage that failed
	case s.running && !run.failed && last.failed && (s.open == "" || s.open == last.stage):
		s.failingNow = true // restarted, back at the stage that failed
	}
}

// carriesOn are the stages whose failure bootkube.sh records and carries
// on after (bootstrap-verify-api-server-urls.sh: "We do not want to stop
// bootkube service due to this failure").
var carriesOn = map[string]bool{"resolve-api-url": true, "resolve-api-int-url": true, "check-api-url": true, "check-api-int-url": true}

// failureMessage is what the installer's analysis logs for a failed
// service: its own words for release-image and bootkube's konnectivity
// stages, and for the rest the form it uses for bootkube.
func (s *service) failureMessage() string {
	switch s.name {
	case "release-image":
		return "The bootstrap machine failed to download the release image"
	case "bootkube":
		switch s.failingStage {
		case "konnectivity-certs":
			return "The bootstrap machine failed to generate konnectivity certificates"
		case "konnectivity-server-bootstrap":
			return "The bootstrap machine failed to start the konnectivity server"
		case "konnectivity-agent-manifest":
			return "The bootstrap machine failed to create konnectivity agent manifests"
		case "konnectivity-cleanup":
			return "The bootstrap machine failed to clean up konnectivity resources"
		}
	}
	if s.failingStage == "" {
		return fmt.Sprintf("The %s service failed", s.name)
	}
	return fmt.Sprintf("The %s service failed at stage %q", s.name, s.failingStage)
}

// failureEvidence is the failing entry and its last error's lines (the
// last journal lines of the unit the record keeps), each with the entry's
// line in the record file.
func (s *service) failureEvidence() []Evidence {
	if s.failure == nil {
		return nil
	}
	r := s.failure
	what := r.Phase + " " + r.Result
	if r.Stage != "" {
		what = fmt.Sprintf("%s %q: %s", r.Phase, r.Stage, r.Result)
	}
	if r.Timestamp != "" {
		what += " at " + r.Timestamp
	}
	if r.ErrorLine != "" {
		what += " (error line: " + r.ErrorLine + ")"
	}
	ev := []Evidence{{File: s.file.Name, Line: r.line, Text: Shown(what)}}
	for _, l := range strings.Split(strings.TrimSpace(r.ErrorMessage), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ev = append(ev, Evidence{File: s.file.Name, Line: r.line, Text: Shown(l)})
		}
	}
	return ev
}

// lastEntry is the record's last entry as evidence.
func (s *service) lastEntry() Evidence {
	r := s.recs[len(s.recs)-1]
	what := r.Phase
	if r.Stage != "" {
		what += fmt.Sprintf(" %q", r.Stage)
	}
	if r.Result != "" {
		what += ": " + r.Result
	}
	if r.Timestamp != "" {
		what += " at " + r.Timestamp
	}
	return Evidence{File: s.file.Name, Line: r.line, Text: Shown(what)}
}
