package stages

import (
	"fmt"

	"github.com/bootlab/bootlab/internal/diagram"
)

// Timeline is the bootstrap timeline drawn from the catalog's After
// fields: per stage, what runs on the bootstrap and who answers the API and
// the MCS through the load balancer, ending with `lab pivot`.
func (c Catalog) Timeline() *diagram.Timeline {
	t := &diagram.Timeline{
		Title:   "The bootstrap, stage by stage: what runs, who serves the API and the MCS",
		Heading: "stage",
		Lanes:   []string{"runs on the bootstrap", "API (6443)", "MCS (22623)"},
		Note:    "Each row: while the stage runs and after it. Amber: the bootstrap; blue: the masters; purple: the hand-over in stage 13.",
	}
	var now After
	for _, s := range c {
		now = now.then(s.After)
		t.Rows = append(t.Rows, diagram.TimelineRow{Label: s.Label(), Cells: []diagram.Cell{
			{Text: now.Runs, Tone: runsTone(now.Runs)},
			{Text: string(now.API), Tone: now.API.tone()},
			{Text: string(now.MCS), Tone: now.MCS.tone()},
		}})
	}
	// `lab pivot` is the lab's step, not bootkube's: the load balancer
	// drops the bootstrap (lab/loadbalancer.LabConfig with bootstrapRemoved).
	t.Rows = append(t.Rows, diagram.TimelineRow{Label: "lab pivot", Cells: []diagram.Cell{
		{Text: "out of the load balancer (a real lab destroys the VM)", Tone: diagram.ToneNone},
		{Text: string(ServedByMasters), Tone: ServedByMasters.tone()},
		{Text: string(ServedByMasters), Tone: ServedByMasters.tone()},
	}})
	return t
}

// EtcdMembership is the etcd membership on the rehearsal lab with masters
// masters, at each stage that changes it: 1 -> masters+1 -> masters.
func (c Catalog) EtcdMembership(masters int) *diagram.Membership {
	m := &diagram.Membership{
		Title: fmt.Sprintf("etcd membership on the rehearsal lab: 1 -> %d -> %d", masters+1, masters),
		Note:  "Real etcd on every node: stage 07 starts the bootstrap's member, the masters join once 13's API answers, the bootstrap's stays through 14 and leaves after 15, once progress.service has written kube-system/bootstrap.",
	}
	var now EtcdMembers
	for _, s := range c {
		if d := s.After.DuringEtcd; d != "" && d != now {
			now = d
			m.Steps = append(m.Steps, diagram.MembershipStep{Label: "during stage " + s.ID() + " " + s.Slug, How: s.After.DuringEtcdHow, Members: now.members(masters)})
		}
		if s.After.RehearsalEtcd == "" || s.After.RehearsalEtcd == now || s.After.RehearsalEtcd == EtcdNone {
			continue
		}
		now = s.After.RehearsalEtcd
		m.Steps = append(m.Steps, diagram.MembershipStep{Label: "after stage " + s.ID() + " " + s.Slug, How: s.After.EtcdHow, Members: now.members(masters)})
	}
	return m
}

// then is the state after a stage whose After is next: its set fields
// replace the current ones.
func (a After) then(next After) After {
	if next.Runs != "" {
		a.Runs = next.Runs
	}
	if next.API != "" {
		a.API = next.API
	}
	if next.MCS != "" {
		a.MCS = next.MCS
	}
	if next.RehearsalEtcd != "" {
		a.RehearsalEtcd, a.EtcdHow = next.RehearsalEtcd, next.EtcdHow
	}
	return a
}

// members names the etcd members, as etcd lists them (the masters by
// node name).
func (e EtcdMembers) members(masters int) []diagram.Member {
	var out []diagram.Member
	if e == EtcdBootstrap || e == EtcdBootstrapAndMasters {
		out = append(out, diagram.Member{Name: "etcd-bootstrap", Tone: diagram.ToneBootstrap})
	}
	if e == EtcdBootstrapAndMasters || e == EtcdMasters {
		for i := 0; i < masters; i++ {
			out = append(out, diagram.Member{Name: fmt.Sprintf("master-%d", i), Tone: diagram.ToneMasters})
		}
	}
	return out
}

func (s Server) tone() diagram.Tone {
	switch s {
	case ServedByBootstrap:
		return diagram.ToneBootstrap
	case ServedByHandover:
		return diagram.ToneBoth
	case ServedByMasters:
		return diagram.ToneMasters
	}
	return diagram.ToneNone
}

// runsTone is amber while something of bootkube's runs on the bootstrap.
func runsTone(runs string) diagram.Tone {
	if runs == "" || runs[:min(len(runs), 7)] == "nothing" {
		return diagram.ToneNone
	}
	return diagram.ToneBootstrap
}
