package lab

import (
	"context"
	"time"

	"github.com/bootlab/bootlab/internal/diagram"
	"github.com/bootlab/bootlab/lab/diagnose"
	"github.com/bootlab/bootlab/lab/internal/engine"
	"github.com/bootlab/bootlab/lab/labdir"
)

// DiagnoseBundle is `lab diagnose --bundle FILE`: the bootstrap
// troubleshooting tree walked over the log bundle at file (bootlab's, or
// openshift-install gather bootstrap's log-bundle-<id>.tar.gz). It needs no
// lab: a bundle from any machine is diagnosed the same. A file that is no
// bundle is an invalid input (InvalidInput) naming it.
func DiagnoseBundle(ctx context.Context, file string) (*diagnose.Report, error) {
	b, err := diagnose.ReadBundle(ctx, file)
	if err != nil {
		return nil, err
	}
	return diagnose.Diagnose(b, diagnose.Options{}), nil
}

// DiagnosisTree is the tree lab diagnose walks, bare: each question with
// the ids of the checks that answer it (docs/troubleshooting.md draws it).
func DiagnosisTree() *diagram.Decision { return diagnose.Tree() }

// Diagnose is `lab diagnose` of the running lab: what bootlab's gather
// collects of it (engine.CollectLive, the same collection as Gather's,
// held in memory, only the files the checks read), the connections tried
// from the nodes that must make them where bootlab can run a command
// there, the load balancer tried and the lab's DNS asked from the host;
// then the same tree as DiagnoseBundle. A probe or rehearsal lab only: an
// OpenShift lab's bootstrap is diagnosed from its bundle (lab gather, then
// DiagnoseBundle). Nothing on the lab changes: the lab directory keeps
// what it found (labdir.Diagnosis: the first check that failed, no log
// line) for the trainer's class status.
func (l *Lab) Diagnose(ctx context.Context) (*diagnose.Report, error) {
	st, err := l.recorded()
	if err != nil {
		return nil, err
	}
	s := l.spec
	n, done, err := l.labNet(ctx, s)
	if err != nil {
		return nil, err
	}
	defer done()
	src := l.gatherSources(n)
	src.Verify = nil // the last verify may be older than the lab as it stands
	if n.Dial != nil {
		src.DialHost = n.Dial
	}
	b := diagnose.NewBundle(s.Name)
	b.Live = true
	eo := engine.GatherOptions{Log: l.o.Log, Status: l.o.Status, Sources: src}
	if err := engine.CollectLive(ctx, s, st, eo, b, diagnose.LiveReads); err != nil {
		return nil, err
	}
	r := diagnose.Diagnose(b, diagnose.Options{})
	rec := labdir.Diagnosis{Time: time.Now().UTC(), FailedAt: r.FirstFailure, Healthy: r.Healthy, Complete: r.Complete, Reached: r.Reached}
	if err := labdir.AddDiagnosis(s.LabDir, st.UUID, rec); err != nil {
		l.o.Log.Warn("the lab directory could not keep this diagnosis (class status will not show it)", "err", err)
	}
	return r, nil
}

// Diagnosis is one live `lab diagnose` of a lab, as its directory keeps
// it: when, the first check that failed ("" for none), and how far the
// bootstrap had got.
type Diagnosis struct {
	Time     time.Time `json:"time"`
	FailedAt string    `json:"failedAt,omitempty"`
	Healthy  bool      `json:"healthy"`
	Complete bool      `json:"complete"`
	Reached  string    `json:"reached,omitempty"`
}

// Diagnoses are the lab's live diagnoses, oldest first (none when it was
// never diagnosed live).
func (l *Lab) Diagnoses() ([]Diagnosis, error) {
	d, err := labdir.LoadDiagnoses(l.spec.LabDir, l.UUID())
	if d == nil || err != nil {
		return nil, err
	}
	out := make([]Diagnosis, 0, len(d.Runs))
	for _, r := range d.Runs {
		out = append(out, Diagnosis(r))
	}
	return out, nil
}
