package verify

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// KubeAPI is what verify reads of the lab's Kubernetes API (a
// cluster.Client): GET path, decoded into out (*string: the raw body).
type KubeAPI interface {
	Get(ctx context.Context, path string, out any) error
}

// KubeClients opens the lab's API twice through the load balancer: by
// its name api.<domain> and by api-int.<domain> (the name the nodes use),
// with the admin kubeconfig.
type KubeClients func(ctx context.Context) (api, apiInt KubeAPI, err error)

// The checks of the real API on a rehearsal lab, and the stages they wait
// for: cb-bootstrap (13) starts the bootstrap's kube-apiserver; the masters
// are Nodes, Ready, once they have joined through the CSR flow, which stage
// 14 waits for; kube-system/bootstrap is created by progress.service
// (report-progress.sh) once stage 15 wrote .bootkube.done.
const (
	stageNodes    = 14
	stageComplete = 15
)

// apiChecks are the host's checks of the real Kubernetes API of a
// rehearsal lab: /readyz through api and api-int (with the servers haproxy
// sends 6443 to: who serves the API now), after stage 14 the masters Ready,
// and after stage 15 the ConfigMap progress.service creates. A check whose stage has not run is
// pending and reads nothing; the API is opened only when one is due.
func apiChecks(ctx context.Context, s *spec.Spec, run map[int]bool, open KubeClients, lbc loadbalancer.Config) []check.Result {
	type apiCheck struct {
		name string
		gate int
		run  func(c check.Result, api, apiInt KubeAPI) check.Result
	}
	checks := []apiCheck{
		{"api /readyz", stageAPI, func(c check.Result, api, _ KubeAPI) check.Result { return readyzCheck(ctx, c, api, servedBy(ctx, lbc)) }},
		{"api-int /readyz", stageAPI, func(c check.Result, _, apiInt KubeAPI) check.Result {
			return readyzCheck(ctx, c, apiInt, servedBy(ctx, lbc))
		}},
		{"configmap kube-system/bootstrap", stageComplete, func(c check.Result, api, _ KubeAPI) check.Result { return bootstrapConfigMapCheck(ctx, c, api) }},
		{"nodes Ready", stageNodes, func(c check.Result, api, _ KubeAPI) check.Result { return nodesReadyCheck(ctx, c, api, s) }},
	}
	out := make([]check.Result, len(checks))
	var api, apiInt KubeAPI
	var openErr error
	opened := false
	for i, ac := range checks {
		c := check.Result{Group: HostGroup, Name: ac.name}
		if !run[ac.gate] {
			c.State, c.Detail = check.StatePending, pendingAPIDetail(ac.gate)
			c.Fix = fmt.Sprintf("`bootlab stage run --to %d` (`bootlab stage status` names the next stage)", ac.gate)
			out[i] = c
			continue
		}
		start := time.Now()
		if !opened {
			api, apiInt, openErr = open(ctx)
			opened = true
		}
		if openErr != nil {
			c.State, c.Detail = check.StateFailed, "cannot open the API: "+openErr.Error()
			c.Fix = "the admin kubeconfig is read from the bootstrap over SSH: is it up? `bootlab lab status`, `bootlab lab ssh bootstrap`"
		} else {
			c = ac.run(c, api, apiInt)
		}
		c.DurationMS = time.Since(start).Milliseconds()
		out[i] = c
	}
	return out
}

func pendingAPIDetail(stage int) string {
	switch stage {
	case stageNodes:
		return "waits for stage 14: the masters register as Nodes through the CSR flow and report Ready while the handoff completes"
	case stageComplete:
		return "waits for stage 15: after .bootkube.done progress.service (report-progress.sh) creates kube-system/bootstrap through api-int"
	}
	return "waits for stage 13: cb-bootstrap starts the real kube-apiserver on the bootstrap"
}

// servedBy names the servers haproxy sends the API's port to now (its
// backends that are up), or says it cannot tell.
func servedBy(ctx context.Context, lbc loadbalancer.Config) string {
	st, err := loadbalancer.Inspect(ctx, lbc)
	switch {
	case err != nil || st == nil:
		return "haproxy's stats unreadable"
	case !st.Running:
		return "haproxy not running"
	}
	var up []string
	for _, fe := range lbc.Frontends {
		if fe.Port != apiPort {
			continue
		}
		for _, b := range st.Backends {
			if b.Frontend == fe.Name && b.Up() {
				up = append(up, b.Server)
			}
		}
	}
	if len(up) == 0 {
		return "no backend up in haproxy"
	}
	return "served by " + strings.Join(up, " ")
}

// apiPort is the Kubernetes API's port behind the load balancer.
const apiPort = 6443

func readyzCheck(ctx context.Context, c check.Result, api KubeAPI, served string) check.Result {
	var body string
	err := api.Get(ctx, "/readyz", &body)
	if err == nil && strings.TrimSpace(body) != "ok" {
		err = fmt.Errorf("/readyz says %q", strings.TrimSpace(body))
	}
	if err != nil {
		c.State, c.Detail = check.StateFailed, err.Error()+" ("+served+")"
		c.Fix = "the kube-apiserver behind haproxy must answer: `bootlab lab ssh bootstrap -- sudo crictl ps` (or the stage 13 output log); `bootlab lab status` for the backends"
		return c
	}
	c.State, c.Detail = check.StatePassed, "ok, "+served
	return c
}

func bootstrapConfigMapCheck(ctx context.Context, c check.Result, api KubeAPI) check.Result {
	var cm corev1.ConfigMap
	if err := api.Get(ctx, "/api/v1/namespaces/kube-system/configmaps/bootstrap", &cm); err != nil {
		c.State, c.Detail = check.StateFailed, err.Error()
		c.Fix = "progress.service on the bootstrap creates it after .bootkube.done (stage 15): its lines in `bootlab lab console bootstrap` start with progress.service"
		return c
	}
	c.State, c.Detail = check.StatePassed, fmt.Sprintf("status: %s (created %s)", cm.Data["status"], cm.CreationTimestamp.UTC().Format(time.RFC3339))
	return c
}

// nodesReadyCheck passes when every master of the spec is a Node whose
// Ready condition is True.
func nodesReadyCheck(ctx context.Context, c check.Result, api KubeAPI, s *spec.Spec) check.Result {
	var nodes corev1.NodeList
	if err := api.Get(ctx, "/api/v1/nodes", &nodes); err != nil {
		c.State, c.Detail = check.StateFailed, err.Error()
		c.Fix = "`bootlab lab kubectl -- get nodes`"
		return c
	}
	ready := map[string]bool{}
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready[n.Name] = true
			}
		}
	}
	if len(nodes.Items) == 0 {
		// After stage 14 the masters must have joined: approve-csr on the
		// bootstrap approved their client CSRs during stage 13 and the
		// bootstrap's controller manager signed them.
		c.State = check.StateFailed
		c.Detail = "no Node registered after stage 14: the masters' client CSRs were not approved and signed while the bootstrap's control plane ran"
		c.Fix = "`bootlab lab kubectl -- get csr` shows the masters' CSRs; approve pending ones with `bootlab lab approve-csrs`; the masters' console logs (`bootlab lab console master-0`) say why a join waits"
		return c
	}
	var ok, missing []string
	for _, m := range s.NodesByRole(spec.RoleMaster) {
		if ready[m.Name] || ready[s.FQDN(m)] {
			ok = append(ok, m.Name)
		} else {
			missing = append(missing, m.Name)
		}
	}
	if len(missing) > 0 {
		c.State = check.StateFailed
		readyNow := "none"
		if len(ok) > 0 {
			readyNow = strings.Join(ok, " ")
		}
		c.Detail = fmt.Sprintf("not Ready: %s (Ready: %s)", strings.Join(missing, " "), readyNow)
		c.Fix = "a master registers once its CSRs are approved: `bootlab lab approve-csrs`; then `bootlab lab kubectl -- get nodes`"
		return c
	}
	c.State, c.Detail = check.StatePassed, strings.Join(ok, " ")+" Ready"
	return c
}
