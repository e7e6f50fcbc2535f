package clusterbootstrap

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

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

// readyNodes counts the master Nodes (node-role.kubernetes.io/master) the
// API has whose Ready condition is True: the masters that joined (the
// bootstrap never joins). A master counts once it has its role label, as
// `oc get nodes` shows it, which approve-csr's stand-in sets in a
// rehearsal lab (node.RoleLabelsAnnotation).
func readyNodes(ctx context.Context, c *kube.Client) (int, error) {
	var l struct {
		Items []struct {
			Status struct {
				Conditions []struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/nodes?labelSelector="+url.QueryEscape("node-role.kubernetes.io/master"), nil, &l); err != nil {
		return 0, err
	}
	n := 0
	for _, it := range l.Items {
		for _, cond := range it.Status.Conditions {
			if cond.Type == "Ready" && cond.Status == "True" {
				n++
			}
		}
	}
	return n, nil
}

// waitRequiredPods is cluster-bootstrap's wait for the required pods,
// through the bootstrap's real API, up to MastersWait (upstream's 20
// minutes). It prints each pod's status as it changes and returns when
// all are Ready, or when the masters run what a rehearsal lab runs and
// cannot publish the rest: enough of the cluster's masters (mastersNeeded)
// serve their own kube-apiserver on 6443 (list names those it knows of,
// each with its /readyz URL, asked each round) and joined as Ready Nodes,
// and none publishes a mirror pod of the rest.
func (t *Start) waitRequiredPods(assets string, required []requiredPod, list masterList, say func(string, ...any)) error {
	cfg, err := kube.LoadKubeconfig(filepath.Join(assets, "auth", "kubeconfig-loopback"))
	if err != nil {
		return err
	}
	c, err := kube.NewClient(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	probe := kube.NewProbe(5 * time.Second)
	say("Waiting up to %s for the required pods: %s", t.MastersWait, joinPods(required))
	last, lastErr, why, lastProgress := map[requiredPod]podStatus{}, "", "", ""
	served := map[string]bool{} // masters whose own kube-apiserver answered ready
	err = t.waitFor(t.MastersWait, func() bool {
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
				say("\tPod Status:%s\t%s", r, st[r])
			}
		}
		last = st
		var progress string
		masters, want := list(ctx)
		why, progress = rehearsalWhyNotRun(ctx, c, probe, st, masters, want, served)
		if progress != lastProgress && progress != "" {
			say("Waiting for the masters: %s", progress)
			lastProgress = progress
		}
		return why != "" || allReady(st)
	})
	if err != nil {
		return fmt.Errorf("the required pods are not all Ready: %w (bootlab lab verify shows the masters' joins)", err)
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
	say("Not waiting for required pods not run in a rehearsal lab: %s: %s", strings.Join(notRun, ", "), why)
	return nil
}

// rehearsalWhyNotRun says why the pods not Ready yet will not come in a
// rehearsal lab, or "" while they may, with what the masters' 6443 answer
// and how many joined. It waits, as upstream, until enough of the want
// masters (mastersNeeded) serve their own kube-apiserver and joined as
// Ready Nodes; masters are those the bootstrap knows of so far
// (approve-csr approves their client CSRs, the bootstrap's controller
// manager signs them); then only for mirror pods not Ready yet.
//
// A master counts once its kube-apiserver answered ready (served): under
// load a master's /readyz blips (an etcd check timing out) and waiting
// for all three to answer in the same round took minutes longer, while
// upstream's wait looks only at the mirror pods.
func rehearsalWhyNotRun(ctx context.Context, c *kube.Client, probe *kube.Probe, st map[requiredPod]podStatus, masters map[string]string, want int, served map[string]bool) (why, progress string) {
	nodes, err := readyNodes(ctx, c)
	if err != nil {
		return "", "cannot count the master Nodes yet: " + err.Error()
	}
	names := make([]string, 0, len(masters))
	for n := range masters {
		names = append(names, n)
	}
	slices.Sort(names)
	var states []string
	real := 0
	for _, n := range names {
		if served[n] {
			states = append(states, n+" its own kube-apiserver")
			real++
			continue
		}
		if bad := readyzAnswer(probe, masters[n]); bad != "" {
			states = append(states, n+" not ready ("+bad+")")
			continue
		}
		states = append(states, n+" its own kube-apiserver")
		served[n] = true
		real++
	}
	want = max(want, len(names))
	const joins = "joined the bootstrap's etcd (each joins once it has its config, which stage 12 serves)"
	switch {
	case want == 0:
		return "", "no master has " + joins
	case len(names) < want:
		states = append(states, fmt.Sprintf("%d of %d %s", len(names), want, joins))
	}
	if need := mastersNeeded(want); real < need || nodes < need || nodes == 0 {
		return "", fmt.Sprintf("%s; %d of %d masters joined as Ready Nodes (approve-csr approves their client CSRs, the bootstrap's controller manager signs them); waiting for %d of %d",
			strings.Join(states, ", "), nodes, want, need, want)
	}
	for r, s := range st {
		if s == podPending || s == podRunningNotReady {
			return "", "" // a master runs it: wait until it is Ready
		}
		if s != podReady && mastersRun(r) {
			// Its installer stand-in writes it once the master's
			// kube-apiserver serves: still to come.
			return "", fmt.Sprintf("%s: the masters' installer stand-ins write it", r)
		}
	}
	return fmt.Sprintf("%d masters joined as Nodes; their kubelet stand-ins publish mirror pods only for the static pods they run", nodes), ""
}

// mastersNeeded is how many of n masters must serve their own
// kube-apiserver and have joined as Ready Nodes before the temporary
// control plane goes: in an HA cluster (3 masters or more) upstream's
// cluster-bootstrap waits for the control-plane operators to report a
// revision on at least 2 nodes, not on all (the last master catches up
// through api-int, served by the others); a smaller cluster waits for
// every master.
func mastersNeeded(n int) int {
	if n >= 3 {
		return 2
	}
	return n
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

func joinPods(rs []requiredPod) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return strings.Join(out, ",")
}
