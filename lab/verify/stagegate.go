package verify

import (
	"fmt"
	"net"
	"strings"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
	"github.com/bootlab/bootlab/stages"
)

// On a rehearsal lab the bootstrap starts nothing at boot: the stages start
// the Machine Config Server (12) and the temporary API (13). Until they
// have run, the masters retry their pointer Ignition, the workers wait for
// the masters' MCS, and nothing serves 6443 or 22623: those checks are
// pending, not failed. Once the stage has run they count for real.
const (
	stageMCS      = 12 // mco-bootstrap: the bootstrap MCS, then the masters' config
	stageAPI      = 13 // cb-bootstrap: the bootstrap's temporary control plane
	stageTeardown = 14 // wait-for-ceo and the bootstrap MCS pod removed

	// bootstrapMCSCheck is the agent's check of the bootstrap MCS.
	bootstrapMCSCheck = "serve mcs :22623"
	// masterAPICheck is the agent's check of a master's :6443 (the
	// bootstrap's too).
	masterAPICheck = "serve api :6443"
	// masterEtcdCheck is the agent's check of a master's etcd member.
	masterEtcdCheck = "etcd member"
)

// stagesRun reads which stages have run on a rehearsal lab's bootstrap from
// its stage records (the last event of each stage wins, as `stage reset`
// restores them with the node). Nil when the lab is no rehearsal lab; an
// unreadable log counts as nothing run, which can only leave a check
// pending that has no chance yet anyway.
func stagesRun(s *spec.Spec, st *labdir.State) map[int]bool {
	if !s.Rehearsal() || st == nil {
		return nil
	}
	recs, err := stages.ReadRecords(labdir.Stages(s), st.UUID)
	if err != nil {
		return map[int]bool{}
	}
	done := map[int]bool{}
	for _, r := range recs {
		switch r.Phase {
		case stages.PhaseStart:
			done[r.Number] = false
		case stages.PhaseEnd, stages.PhaseSkip:
			done[r.Number] = r.Result == stages.ResultSuccess || r.Result == stages.ResultSkipped
		}
	}
	return done
}

// awaitStages marks pending each failed check that waits for a stage not
// yet run (gate), saying which stage and what to run. A check that fails
// for another reason (a wrong answer, a stopped VM, haproxy down) stays
// failed, and every check counts for real once its stage has run.
func awaitStages(s *spec.Spec, checks []check.Result, run map[int]bool) []check.Result {
	if run == nil {
		return checks
	}
	for i, c := range checks {
		if !c.Failed() {
			continue
		}
		if why, ok := awaitsPivot(s, c, run); ok {
			c.State = check.StatePending
			c.Detail = fmt.Sprintf("waits for `lab pivot`: %s (now: %s)", why, c.Detail)
			c.Fix = "`bootlab lab pivot` takes the bootstrap out of the load balancer, as the docs require once bootstrap is complete"
			checks[i] = c
			continue
		}
		stage, why := gate(s, c)
		if stage == 0 || run[stage] {
			continue
		}
		c.State = check.StatePending
		c.Detail = fmt.Sprintf("waits for stage %d: %s (now: %s)", stage, why, strings.TrimPrefix(c.Detail, "still pending: "))
		c.Fix = fmt.Sprintf("`bootlab stage run --to %d` (`bootlab stage status` names the next stage)", stage)
		checks[i] = c
	}
	return checks
}

// awaitsPivot says whether c is a bootstrap backend that is down because
// the stages stopped what served it: 6443 after stage 13 tore the
// temporary control plane down, 22623 after stage 14 removed the MCS. A
// real bootstrap's backends go down the same way, until the bootstrap is
// taken out of the load balancer (`lab pivot`; after it the checks are
// gone): the expected state of a lab whose learner has not pivoted yet,
// which no wait can change, so verify must not wait for it.
func awaitsPivot(s *spec.Spec, c check.Result, run map[int]bool) (string, bool) {
	if n, ok := s.Node(c.Group); ok && n.Role == spec.RoleBootstrap {
		// The bootstrap's agent says it stopped serving: the same end,
		// seen from the node.
		switch {
		case c.Name == masterAPICheck && run[stageAPI] && strings.Contains(c.Detail, "stopped"):
			return "the bootstrap's temporary API stopped when stage 13 finished, as on a real bootstrap", true
		case c.Name == bootstrapMCSCheck && run[stageTeardown] && strings.Contains(c.Detail, "stopped"):
			return "the bootstrap MCS stopped when stage 14 removed its pod, as on a real bootstrap", true
		}
		return "", false
	}
	if c.Group != HostGroup || !strings.HasPrefix(c.Name, "backend ") || !nothingListens(c.Detail) {
		return "", false
	}
	_, server, _ := strings.Cut(strings.TrimPrefix(c.Name, "backend "), "/")
	if n, ok := s.Node(server); !ok || n.Role != spec.RoleBootstrap {
		return "", false
	}
	switch backendPort(c.Detail) {
	case "6443":
		if run[stageAPI] {
			return "the bootstrap's temporary API stopped when stage 13 finished, as on a real bootstrap", true
		}
	case "22623":
		if run[stageTeardown] {
			return "the bootstrap MCS stopped when stage 14 removed its pod, as on a real bootstrap", true
		}
	}
	return "", false
}

// gate is the stage a failed check waits for on a rehearsal lab, and why
// (0: none, the failure is real).
func gate(s *spec.Spec, c check.Result) (int, string) {
	if c.Group == HostGroup {
		return hostGate(s, c)
	}
	n, ok := s.Node(c.Group)
	if !ok || n.Role == spec.RoleBootstrap || !strings.HasPrefix(c.Detail, "still pending: ") {
		// The bootstrap needs no stage for its own checks, and a check
		// the node's agent gave up on has failed, whatever ran.
		return 0, ""
	}
	if n.Role == spec.RoleMaster && c.Name == masterAPICheck {
		return stageAPI, "a master's kube-apiserver starts once stage 13 created the objects its installer copies"
	}
	if n.Role == spec.RoleMaster && c.Name == masterEtcdCheck {
		return stageAPI, "a master joins etcd once the cluster's API answers, as the etcd operator is a pod of the cluster: stage 13 starts the bootstrap's"
	}
	if n.Role == spec.RoleMaster {
		return stageMCS, "masters fetch their config once stage 12 starts the MCS"
	}
	return stageMCS, "workers fetch their config from the masters' MCS, which serves once the masters have theirs from stage 12"
}

// hostGate gates the load balancer checks: a backend nothing listens on
// yet, a frontend with no live backend yet.
func hostGate(s *spec.Spec, c check.Result) (int, string) {
	switch {
	case strings.HasPrefix(c.Name, "backend ") && nothingListens(c.Detail):
		_, server, _ := strings.Cut(strings.TrimPrefix(c.Name, "backend "), "/")
		n, ok := s.Node(server)
		if !ok {
			return 0, ""
		}
		port := backendPort(c.Detail)
		switch {
		case n.Role == spec.RoleBootstrap && port == "22623":
			return stageMCS, "the bootstrap MCS starts with stage 12"
		case n.Role == spec.RoleBootstrap && port == "6443":
			return stageAPI, "the bootstrap API answers while stage 13 runs the temporary control plane"
		case n.Role == spec.RoleMaster && port == "6443" && s.Rehearsal():
			return stageAPI, n.Name + "'s kube-apiserver starts once stage 13 created the objects its installer copies"
		case n.Role != spec.RoleBootstrap:
			return stageMCS, n.Name + " serves once it has its config, which the MCS of stage 12 gives"
		}
	case strings.HasPrefix(c.Name, "lb ") && strings.HasSuffix(c.Name, ":6443") && s.Rehearsal() && noBackendYet(c.Detail):
		return stageAPI, "nothing serves 6443 before stage 13 starts the bootstrap's temporary control plane (the masters' kube-apiservers come after it)"
	case strings.HasPrefix(c.Name, "lb ") && (strings.HasSuffix(c.Name, ":6443") || strings.HasSuffix(c.Name, ":22623")) && noBackendYet(c.Detail):
		return stageMCS, "nothing serves behind it before stage 12 starts the MCS and the masters get their config"
	}
	return 0, ""
}

// nothingListens says whether a backend check's detail is haproxy's
// connection failure: "L4CON Connection refused", or L4CON alone while its
// next check runs ("DOWN * L4CON": haproxy drops the message then; seen on
// CI right after a stage ran).
func nothingListens(detail string) bool {
	d := strings.ToLower(detail)
	return strings.Contains(d, "connection refused") || strings.Contains(d, "l4con")
}

// backendPort is the port of a backend check's detail ("ADDR:PORT STATUS ...").
func backendPort(detail string) string {
	_, port, err := net.SplitHostPort(strings.Fields(detail + " ")[0])
	if err != nil {
		return ""
	}
	return port
}

// noBackendYet is true for a frontend with no live backend: verify did not
// ask it, as no server has passed haproxy's check (unproven), or haproxy
// accepted and closed (EOF, reset). A TLS or HTTP answer that is wrong is
// a real failure.
func noBackendYet(detail string) bool {
	if strings.HasPrefix(detail, noServerPassed) {
		return true
	}
	d := strings.ToLower(detail)
	return strings.HasSuffix(d, ": eof") || strings.Contains(d, "connection reset")
}

// BackendExpectedDown says whether a rehearsal lab's backend b, which
// haproxy lists down, is down as the stages leave it (what verify shows as
// pending), and why; run says which stages have run (stage number: done).
// The dashboard asks it, so that a trainer's projector never shows as
// broken what verify calls expected.
func BackendExpectedDown(s *spec.Spec, run map[int]bool, b loadbalancer.BackendStatus) (string, bool) {
	if !s.Rehearsal() || b.Up() {
		return "", false
	}
	c := check.Result{Group: HostGroup, Name: "backend " + b.Frontend + "/" + b.Server, State: check.StateFailed,
		Detail: strings.TrimSpace(fmt.Sprintf("%s %s %s", b.Address, b.Status, b.LastCheck))}
	got := awaitStages(s, []check.Result{c}, run)[0]
	if got.State != check.StatePending {
		return "", false
	}
	why, _, _ := strings.Cut(got.Detail, " (now: ")
	return why, true
}
