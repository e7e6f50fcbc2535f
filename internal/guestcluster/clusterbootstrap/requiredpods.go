package clusterbootstrap

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/kube"
)

// cluster-bootstrap's wait for the required pods, through the real
// bootstrap API: each --required-pods entry (namespace/name-prefix) is
// DoesNotExist, Pending, RunningNotReady or Ready, as upstream prints it.
// On a rehearsal lab those pods are the masters' mirror pods, published
// by their kubelet stand-ins once they join as Nodes; a pod the masters do
// not run is said to be not run in a rehearsal lab, never shown Running.

// podStatus is one required pod's state, in upstream's words.
type podStatus string

const (
	podDoesNotExist    podStatus = "DoesNotExist"
	podPending         podStatus = "Pending"
	podRunningNotReady podStatus = "RunningNotReady"
	podReady           podStatus = "Ready"
)

// requiredPod is one --required-pods entry.
type requiredPod struct{ Namespace, Prefix string }

func (r requiredPod) String() string { return r.Namespace + "/" + r.Prefix }

// parseRequiredPods reads --required-pods (comma-separated
// namespace/name-prefix).
func parseRequiredPods(s string) ([]requiredPod, error) {
	var out []requiredPod
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		ns, prefix, ok := strings.Cut(e, "/")
		if !ok || ns == "" || prefix == "" {
			return nil, fmt.Errorf("--required-pods: %q is not namespace/name-prefix", e)
		}
		out = append(out, requiredPod{ns, prefix})
	}
	return out, nil
}

// podList is the part of a PodList the wait reads.
type podList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Phase      string `json:"phase"`
			Conditions []struct {
				Type   string `json:"type"`
				Status string `json:"status"`
			} `json:"conditions"`
		} `json:"status"`
	} `json:"items"`
}

// requiredPodStatuses asks the API for each required pod's status.
func requiredPodStatuses(ctx context.Context, c *kube.Client, pods []requiredPod) (map[requiredPod]podStatus, error) {
	out := map[requiredPod]podStatus{}
	for _, r := range pods {
		var l podList
		if err := c.Do(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(r.Namespace)+"/pods", nil, &l); err != nil && !kube.IsNotFound(err) {
			return nil, fmt.Errorf("list pods in %s: %w", r.Namespace, err)
		}
		out[r] = podDoesNotExist
		for _, p := range l.Items {
			if !strings.HasPrefix(p.Metadata.Name, r.Prefix) {
				continue
			}
			st := podPending
			if p.Status.Phase == "Running" {
				st = podRunningNotReady
				for _, cond := range p.Status.Conditions {
					if cond.Type == "Ready" && cond.Status == "True" {
						st = podReady
					}
				}
			}
			if rank(st) > rank(out[r]) {
				out[r] = st
			}
		}
	}
	return out, nil
}

func rank(s podStatus) int {
	switch s {
	case podPending:
		return 1
	case podRunningNotReady:
		return 2
	case podReady:
		return 3
	}
	return 0
}

// waitRequiredPods is status.go's waitUntilPodsRunning, through the
// bootstrap's real API, every PodsPoll within ctx (upstream's 20 minutes,
// shared with the create beside it): it prints each pod's status as it
// changes and returns when all are Ready. A rehearsal lab's masters run
// only their kube-apiserver, controller manager and scheduler (mastersRun):
// once those required pods are Ready, the others (the cluster version
// operator) are said not to be run in a rehearsal lab, never shown Running,
// and the wait ends as upstream's would with them Ready.
func (t *Start) waitRequiredPods(ctx context.Context, c *kube.Client, required []requiredPod, say func(string, ...any)) error {
	last, lastErr, lastNodes := map[requiredPod]podStatus{}, "", -1
	err := pollUntil(ctx, t.PodsWait, t.PodsPoll, func() bool {
		st, err := requiredPodStatuses(ctx, c, required)
		if err != nil {
			if err.Error() != lastErr {
				say("Error checking pod status: %v", err)
				lastErr = err.Error()
			}
			return false
		}
		for _, r := range required {
			if st[r] != last[r] {
				say("\tPod Status:%24s\t%s", r, st[r])
			}
		}
		last = st
		if names, err := masterNodes(ctx, c); err == nil && len(names) != lastNodes && !mastersRunReady(st) {
			lastNodes = len(names)
			say("Waiting for the masters' mirror pods: %d master Node(s) so far (each registers once approve-csr approves its client CSR and the bootstrap's controller manager signs it)", len(names))
		}
		return mastersRunReady(st)
	})
	if err != nil {
		return fmt.Errorf("error while checking pod status: %w (bootlab lab verify shows the masters' joins)", err)
	}
	if allReady(last) {
		say("All self-hosted control plane components successfully started")
		return nil
	}
	var notRun []string
	for _, r := range required {
		if last[r] != podReady {
			notRun = append(notRun, fmt.Sprintf("%s (%s)", r, last[r]))
		}
	}
	say("All self-hosted control plane components a rehearsal lab runs successfully started; not run in a rehearsal lab (its masters' kubelet stand-ins run only their kube-apiserver, controller manager and scheduler): %s", strings.Join(notRun, ", "))
	return nil
}

// mastersRunReady is true when every required pod a rehearsal master runs
// is Ready, and the others are not run there.
func mastersRunReady(st map[requiredPod]podStatus) bool {
	for r, s := range st {
		if s != podReady && mastersRun(r) {
			return false
		}
	}
	return true
}

// mastersRun says whether a rehearsal lab's masters run r: one of their
// control-plane pods (the kube-apiserver, controller manager, scheduler),
// which their installer stand-ins write and kubelet stand-ins run.
func mastersRun(r requiredPod) bool {
	for _, o := range controlplane.MasterOperands() {
		if o.Namespace == r.Namespace && strings.HasPrefix(o.PodName, r.Prefix) {
			return true
		}
	}
	return false
}

func allReady(st map[requiredPod]podStatus) bool {
	for _, s := range st {
		if s != podReady {
			return false
		}
	}
	return true
}
