package stages

import (
	"fmt"
	"strings"
	"time"
)

// ProgressState is where a catalog stage stands in a lab's stage records.
type ProgressState string

const (
	ProgressPending ProgressState = "pending"
	ProgressRunning ProgressState = "running"
	ProgressDone    ProgressState = "done"
	ProgressFailed  ProgressState = "failed"
	ProgressSkipped ProgressState = "skipped"
)

// Progress is one stage of the catalog as a lab's stage records tell it.
type Progress struct {
	Number int
	Slug   string
	State  ProgressState
	// Message is why a stage was skipped or failed, as recorded (raw: a
	// page that shows it redacts it first).
	Message string
	// Time is when the last record of the stage was written.
	Time time.Time
}

// FoldRecords folds one lab's stage records (ReadRecords, oldest first)
// into the state of each stage of the default catalog, in catalog order:
// the last event of a stage wins, but a skip because the stage is already
// done (its markers are on the node: a later `stage run --all`) leaves it
// done, or makes it so; a stage with no record is pending.
func FoldRecords(recs []Record) []Progress {
	var out []Progress
	idx := map[int]int{}
	for i, s := range Default() {
		out = append(out, Progress{Number: s.Number, Slug: s.Slug, State: ProgressPending})
		idx[s.Number] = i
	}
	for _, r := range recs {
		i, ok := idx[r.Number]
		if !ok {
			continue
		}
		p := &out[i]
		p.Time = r.Timestamp
		switch {
		case r.Phase == PhaseStart:
			p.State, p.Message = ProgressRunning, ""
		case r.Phase == PhaseSkip || r.Result == ResultSkipped:
			if strings.HasPrefix(r.Reason, skippedDone) {
				p.State, p.Message = ProgressDone, ""
			} else {
				p.State, p.Message = ProgressSkipped, r.Reason
			}
		case r.Result == ResultSuccess:
			p.State, p.Message = ProgressDone, ""
		case r.Result == ResultFailure || r.Result == ResultInterrupted:
			p.State, p.Message = ProgressFailed, r.ErrorMessage
			if p.Message == "" {
				p.Message = r.ErrorLine
			}
		}
	}
	return out
}

// Reached is the last stage done in progress, as "NN slug" ("" when none).
func Reached(progress []Progress) string {
	reached := ""
	for _, p := range progress {
		if p.State == ProgressDone {
			reached = fmt.Sprintf("%02d %s", p.Number, p.Slug)
		}
	}
	return reached
}
