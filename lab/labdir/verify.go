package labdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bootlab/bootlab/internal/atomicfile"
)

// VerifyRecord is the outcome of the last `lab verify`, kept in the lab
// directory so `lab list` and the dashboard can show it without running the
// checks again. It holds check names and messages only, never secrets.
type VerifyRecord struct {
	Time   time.Time `json:"time"`
	OK     bool      `json:"ok"`
	Total  int       `json:"total"`
	Passed int       `json:"passed"`
	// Pending and Skipped count the checks that neither passed nor failed
	// (a record written before they were kept lists pending checks under
	// Failed, and counts them so).
	Pending int             `json:"pending,omitempty"`
	Skipped int             `json:"skipped,omitempty"`
	Failed  []VerifyFailure `json:"failed"`
	// BootstrapRemoved is whether the run expected the bootstrap gone (after `lab pivot`).
	BootstrapRemoved bool `json:"bootstrapRemoved,omitempty"`
	// LabUUID is the identity (State.UUID) of the lab that was verified: a
	// record of another lab, one of the same name built earlier, is never
	// shown as this lab's.
	LabUUID string `json:"labUUID,omitempty"`
}

// VerifyFailure is one failed check of a VerifyRecord.
type VerifyFailure struct {
	Group  string `json:"group"`
	Name   string `json:"name"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Summary is the one-line form: "104/104 ok", "3 of 104 failed", with
// ", 4 pending" when checks wait for a stage.
func (r *VerifyRecord) Summary() string {
	if r == nil {
		return "never verified"
	}
	out := fmt.Sprintf("%d/%d ok", r.Passed, r.Total)
	if !r.OK {
		out = fmt.Sprintf("%d of %d failed", r.Total-r.Passed-r.Pending-r.Skipped, r.Total)
	}
	if r.Pending > 0 {
		out += fmt.Sprintf(", %d pending", r.Pending)
	}
	return out
}

// LoadVerifyRecord reads the last verify result of the lab in labDir whose
// state has labUUID; (nil, nil) when that lab was never verified. A record
// of another lab is not this lab's result: nil too. As with stage records,
// one without a UUID (older versions) is only a lab's without one.
func LoadVerifyRecord(labDir, labUUID string) (*VerifyRecord, error) {
	var r VerifyRecord
	ok, err := readRecord(VerifyRecordPath(labDir), &r, "last verify result", "bootlab lab verify")
	if !ok || err != nil || r.LabUUID != labUUID {
		return nil, err
	}
	return &r, nil
}

// readRecord reads the JSON record at path into v: false when there is
// none; a record that does not parse is an error naming the file and the
// command (writer) that writes it again once it is deleted.
func readRecord(path string, v any, what, writer string) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", what, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("parse %s %s: %w (delete it; the next `%s` writes it again)", what, path, err, writer)
	}
	return true, nil
}

// SaveVerifyRecord writes r atomically into labDir (which must exist: a lab
// that was never built has nothing to verify).
func SaveVerifyRecord(labDir string, r *VerifyRecord) error {
	if r.Failed == nil {
		r.Failed = []VerifyFailure{}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(VerifyRecordPath(labDir), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("last verify result: %w", err)
	}
	return nil
}
