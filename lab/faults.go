package lab

import (
	"context"
	"time"

	"github.com/bootlab/bootlab/lab/internal/engine"
	"github.com/bootlab/bootlab/lab/spec"
)

// Fault is one fault `lab break` sets for a trainer: what it breaks, where
// it bites, the `lab diagnose` check that names it and the learner's fix.
type Fault struct {
	Name, What, Bites, Check, Fix string
	// RehearsalOnly faults need a rehearsal lab (Applies).
	RehearsalOnly bool
}

// Applies says whether f can be set on the lab of spec s: a probe or
// rehearsal lab, a rehearsal one for a RehearsalOnly fault.
func (f Fault) Applies(s *spec.Spec) bool {
	return engine.Fault{RehearsalOnly: f.RehearsalOnly}.Applies(s)
}

// ActiveFault is a fault set on a lab, with when.
type ActiveFault struct {
	Name string
	At   time.Time
}

// Faults is `lab break --list`'s catalogue.
func Faults() []Fault {
	var out []Fault
	for _, f := range engine.Faults() {
		out = append(out, Fault{Name: f.Name, What: f.What, Bites: f.Bites, Check: f.Check, Fix: f.Fix, RehearsalOnly: f.RehearsalOnly})
	}
	return out
}

// ActiveFaults are the faults set on the lab (the trainer's record; the
// learner's views never read it).
func (l *Lab) ActiveFaults() ([]ActiveFault, error) {
	return ActiveFaultsOf(l.spec)
}

// Break is `lab break FAULT`: it sets the fault on the lab's network, load
// balancer or bootstrap node and records it for the trainer.
func (l *Lab) Break(ctx context.Context, fault string) error {
	t, err := l.faultTarget(ctx)
	if err != nil {
		return err
	}
	return engine.BreakFault(ctx, l.spec, t, fault, time.Now())
}

// Unbreak is `lab break --undo [FAULT]`: it undoes fault (every fault set
// when ""), and returns those it undid.
func (l *Lab) Unbreak(ctx context.Context, fault string) ([]string, error) {
	t, err := l.faultTarget(ctx)
	if err != nil {
		return nil, err
	}
	return engine.UndoFault(ctx, l.spec, t, fault)
}

func (l *Lab) faultTarget(ctx context.Context) (engine.FaultTarget, error) {
	st, err := l.recorded()
	if err != nil {
		return engine.FaultTarget{}, err
	}
	hv, err := l.hypervisor(ctx)
	if err != nil {
		return engine.FaultTarget{}, err
	}
	dial := func(ctx context.Context, n spec.Node) (engine.GatherNode, func(), error) {
		c, done, err := l.DialNode(ctx, n, DialOptions{})
		if err != nil {
			return nil, nil, err
		}
		return sshNode{c}, done, nil
	}
	return engine.FaultTarget{Networks: hv, Host: hv.Host(), State: st, Dial: dial}, nil
}

// ActiveFaultsOf are the faults set on the lab of spec s, read from its
// directory without opening the lab (the trainer's dashboard).
func ActiveFaultsOf(s *spec.Spec) ([]ActiveFault, error) {
	active, err := engine.ActiveFaults(s)
	var out []ActiveFault
	for _, a := range active {
		out = append(out, ActiveFault{Name: a.Name, At: a.At})
	}
	return out, err
}
