package verify

import (
	"log/slog"
	"os"
	"time"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// Record turns a verify result into what the lab directory keeps of it:
// counts by state and the failed checks with their messages (no node
// reports).
func Record(res *Result, at time.Time) *labdir.VerifyRecord {
	r := &labdir.VerifyRecord{Time: at.UTC(), OK: res.OK, Total: len(res.Checks), BootstrapRemoved: res.Pivoted, Failed: []labdir.VerifyFailure{}}
	for _, c := range res.Checks {
		switch c.State {
		case check.StatePassed, check.StateWarning:
			r.Passed++
		case check.StatePending:
			r.Pending++
		case check.StateSkipped:
			r.Skipped++
		default:
			r.Failed = append(r.Failed, labdir.VerifyFailure{Group: c.Group, Name: c.Name, Detail: c.Detail, Fix: c.Fix})
		}
	}
	return r
}

// saveRecord keeps the last result in the lab directory for `lab list` and
// the dashboard. A lab directory that does not exist is left alone, and a
// failure to write only warns: the checks themselves ran.
func saveRecord(s *spec.Spec, res *Result, log *slog.Logger) {
	if s.LabDir == "" {
		return
	}
	if fi, err := os.Stat(s.LabDir); err != nil || !fi.IsDir() {
		return
	}
	rec := Record(res, time.Now())
	// The result is the lab's whose state is there (none: not built yet).
	if st, err := labdir.LoadState(s.LabDir); err == nil {
		rec.LabUUID = st.UUID
	}
	if err := labdir.SaveVerifyRecord(s.LabDir, rec); err != nil {
		log.Warn("could not keep the verify result for `lab list`", "err", err)
	}
}
