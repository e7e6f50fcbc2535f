package archtest

import (
	"regexp"
	"strings"
	"testing"
)

// faultReaders are the only files that may read which faults a trainer
// set (lab break's record, labdir.Faults) or name the catalogue's faults:
// the trainer's verb and the code that sets and undoes them.
var faultReaders = map[string]bool{
	"lab/internal/engine/faults.go": true, // sets, undoes and reads the record
	// the port blocks' filters, and lab down's removal of those still set
	"lab/internal/engine/faults_ports.go": true,
	"lab/faults.go":                       true, // the facade's Break, Unbreak, ActiveFaults, Faults
	"cmd/internal/labcmd/break.go":        true, // lab break, the trainer's verb
	"cmd/internal/classcmd/break.go":      true, // class break, lab break on every learner's lab
	"cmd/internal/classcmd/status.go":     true, // class status, the trainer's view of the class
	"dashboard/faults.go":                 true, // the dashboard's trainer's view, behind its own token
}

// What a fault is stays the trainer's (issue 55: "the learner's view (lab
// status, verify, the dashboard without the trainer token) shows
// symptoms, never the fault's name"): no other source reads the record,
// calls the facade's fault verbs, or names a fault of the catalogue.
func TestOnlyTheTrainersVerbKnowsTheFaults(t *testing.T) {
	t.Parallel()
	use := regexp.MustCompile(`labdir\.Faults\(|\.ActiveFaults\(|\bActiveFaults\(|\bActiveFaultsOf\(|lab\.Faults\(|\.Break\(|\.Unbreak\(|"api-int-wrong-address"|"lb-no-bootstrap-mcs"|"csr-approval-stopped"|"mcs-blocked-from-masters"|"etcd-peer-blocked"|"power-cycle-master"`)
	seen := map[string]bool{}
	goSources(t, func(rel string, data []byte) {
		if faultReaders[rel] {
			seen[rel] = true
			return
		}
		for i, line := range strings.Split(string(data), "\n") {
			if use.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d reads or names the trainer's faults: only lab break may (the learner's views show symptoms, never a fault's name): %s", rel, i+1, strings.TrimSpace(line))
			}
		}
	})
	for rel := range faultReaders {
		if !seen[rel] {
			t.Errorf("faultReaders lists %s, which is not a source file any more: drop it", rel)
		}
	}
}
