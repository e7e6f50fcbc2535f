package labdir

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bootlab/bootlab/internal/atomicfile"
)

// MaxDiagnoses is how many diagnoses a lab directory keeps, the newest.
const MaxDiagnoses = 50

// Diagnosis is what one `lab diagnose` of the running lab found: the
// first check that failed ("" for none), whether bootkube had completed,
// and the stage the bootstrap had reached. Check ids and stage names
// only, never a log line.
type Diagnosis struct {
	Time time.Time `json:"time"`
	// FailedAt is the id of the first check that failed ("" when none).
	FailedAt string `json:"failedAt,omitempty"`
	Healthy  bool   `json:"healthy"`
	Complete bool   `json:"complete"`
	Reached  string `json:"reached,omitempty"`
}

// Diagnoses is the lab's history of live diagnoses, oldest first.
type Diagnoses struct {
	// LabUUID is the lab's identity: another lab's history (one of the
	// same name built earlier) is not this lab's.
	LabUUID string      `json:"labUUID"`
	Runs    []Diagnosis `json:"runs"`
}

// LoadDiagnoses reads the diagnoses of the lab in labDir whose state has
// labUUID; none (nil, nil) when it was never diagnosed live, or the file
// is another lab's.
func LoadDiagnoses(labDir, labUUID string) (*Diagnoses, error) {
	var d Diagnoses
	ok, err := readRecord(DiagnosesPath(labDir), &d, "the lab's diagnoses", "bootlab lab diagnose")
	if !ok || err != nil || d.LabUUID != labUUID {
		return nil, err
	}
	return &d, nil
}

// AddDiagnosis appends r to the history of the lab in labDir (the newest
// MaxDiagnoses are kept), starting a new history when the file is
// another lab's or unreadable.
func AddDiagnosis(labDir, labUUID string, r Diagnosis) error {
	d, err := LoadDiagnoses(labDir, labUUID)
	if err != nil || d == nil {
		d = &Diagnoses{LabUUID: labUUID}
	}
	d.Runs = append(d.Runs, r)
	if len(d.Runs) > MaxDiagnoses {
		d.Runs = d.Runs[len(d.Runs)-MaxDiagnoses:]
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(DiagnosesPath(labDir), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("the lab's diagnoses: %w", err)
	}
	return nil
}
