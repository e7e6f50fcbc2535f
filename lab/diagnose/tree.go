package diagnose

import (
	"github.com/bootlab/bootlab/internal/diagram"
)

// Step is one question of the tree. The guide's four (etcd, api, masters,
// bootkube) come after the node's own: a bootstrap whose release image
// never came, whose clock is off or whose certificates are out of date
// fails every question after it for that one reason.
type Step struct {
	ID       string
	Question string
	// Otherwise is the guide's "no": where to look.
	Otherwise []string
	// Checks are the checks that answer it, in the order they are walked
	// (service.* stands for each service record the bundle holds; dns.names
	// is walked on a live lab only).
	Checks []string
}

// Steps is the tree, in the order it is walked.
func Steps() []Step {
	return []Step{
		{ID: "node", Question: "Bootstrap node up?",
			Otherwise: []string{"Check release-image, crio-configure, kubelet", "(their service records and journals);", "compare the nodes' clocks; renew certificates"},
			Checks:    []string{"service.release-image", "service.*", "clock.skew", "certs.valid", "certs.chain"}},
		{ID: "etcd", Question: "etcd healthy?",
			Otherwise: []string{"Check etcd logs (crictl logs of etcd);", "verify networking: 2379-2380 between", "the bootstrap and the masters"},
			Checks:    []string{"etcd.healthy", "conn.bootstrap-masters.etcd", "conn.masters-bootstrap.etcd", "conn.masters-masters.etcd"}},
		{ID: "api", Question: "API accessible?",
			Otherwise: []string{"Check the MCS and the kube-apiserver's log;", "verify DNS (api, api-int) and the", "load balancer (6443, 22623)"},
			Checks:    []string{"api.dns", "dns.names", "api.readyz", "api.lb", "conn.bootstrap-masters.api", "conn.masters-masters.api"}},
		{ID: "masters", Question: "Masters joining?",
			Otherwise: []string{"Check the masters' Ignition (pointer config, CA);", "verify the MCS is reachable (22623);", "approve pending CSRs"},
			// csr.pending before masters.joined: a kubelet registers its
			// Node only once its client CSR is approved.
			Checks: []string{"masters.ignition", "conn.masters-bootstrap.mcs", "csr.pending", "masters.joined", "etcd.members"}},
		{ID: "bootkube", Question: "bootkube completing?",
			Otherwise: []string{"Check bootkube.service's journal", "(journalctl -b -u bootkube.service);", "look for operator failures"},
			Checks:    []string{"service.bootkube", "bootkube.complete", "service.progress"}},
	}
}

// stepQuestion is the question of step id.
func stepQuestion(id string) string {
	for _, s := range Steps() {
		if s.ID == id {
			return s.Question
		}
	}
	return id
}

// stepOf is the step a check id belongs to: the step that lists it, or,
// for a service record no step names, the node's.
func stepOf(id string) string {
	for _, s := range Steps() {
		for _, c := range s.Checks {
			if c == id {
				return s.ID
			}
		}
	}
	return "node"
}

// Tree is the bare tree, as docs/troubleshooting.md draws it: each
// question with the ids of the checks that answer it.
func Tree() *diagram.Decision {
	d := &diagram.Decision{Title: "Troubleshooting the bootstrap: the tree bootlab lab diagnose walks",
		End:  "Bootstrap complete",
		Note: "Each check is a point of bootlab lab diagnose; the first that fails is where to look (the box on its right)."}
	for _, s := range Steps() {
		st := diagram.DecisionStep{Question: s.Question, Otherwise: s.Otherwise}
		for _, c := range s.Checks {
			st.Checks = append(st.Checks, diagram.DecisionCheck{Name: c})
		}
		d.Steps = append(d.Steps, st)
	}
	return d
}

// Picture is the tree with the report's verdicts: each check's mark, each
// step failed when one of its checks failed, unknown when one could not
// see, passed when all passed.
func (r *Report) Picture() *diagram.Decision {
	d := &diagram.Decision{Title: "bootlab lab diagnose: " + r.Bundle, End: "Bootstrap complete", Note: r.Summary()}
	for _, s := range Steps() {
		st := diagram.DecisionStep{Question: s.Question, Otherwise: s.Otherwise, Verdict: diagram.VerdictPassed}
		for _, c := range r.Checks {
			if c.Step != s.ID {
				continue
			}
			v := verdict(c.State)
			st.Checks = append(st.Checks, diagram.DecisionCheck{Name: c.ID, Verdict: v})
			if v == diagram.VerdictFailed || v == diagram.VerdictUnknown && st.Verdict == diagram.VerdictPassed {
				st.Verdict = v
			}
		}
		d.Steps = append(d.Steps, st)
	}
	return d
}

func verdict(s State) diagram.Verdict {
	switch s {
	case Passed:
		return diagram.VerdictPassed
	case Failed:
		return diagram.VerdictFailed
	}
	return diagram.VerdictUnknown
}
