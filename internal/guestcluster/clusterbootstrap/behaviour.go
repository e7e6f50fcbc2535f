package clusterbootstrap

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/kube"
)

// What cluster-bootstrap start does differently from one release to the
// next, read on openshift/cluster-bootstrap's release branches (pkg/start):
// release-4.16 and release-4.17 are the same code; release-4.18 replaced
// the wait for two master Nodes with ha_checker.go's wait for a revision on
// two nodes, added the 30 s load-balancer delay and sends bootstrap-finished
// before the teardown; release-4.19 runs that wait only on a control plane
// of three replicas or more (isHAControlPlane).

// HA gates: what start waits for between the required pods and the
// teardown.
const (
	// GateMasterNodes: two Nodes labelled node-role.kubernetes.io/master,
	// Ready or not (4.16, 4.17: status.go waitUntilMastersJoined), inside
	// the required pods' 20 minutes.
	GateMasterNodes = "master-nodes"
	// GateRevisions: kubeapiservers, kubeschedulers and
	// kubecontrollermanagers "cluster" each list a current revision on two
	// nodes (4.18 on: ha_checker.go), 30 minutes each.
	GateRevisions = "revisions"
)

// requiredNumberOfJoinedMaster is upstream's count for both gates.
const requiredNumberOfJoinedMaster = 2

// minimumTeardownDelay is 4.18's minimum wait for the load balancers on an
// HA control plane.
const minimumTeardownDelay = 30 * time.Second

// Behaviour is a release's cluster-bootstrap start.
type Behaviour struct {
	// Branch is the release branch read: 4.16 ... 4.19.
	Branch string
	// Gate is the HA gate (GateMasterNodes or GateRevisions).
	Gate string
	// HAFrom is the least controlPlane.replicas the gate applies to, with
	// SingleReplica (1) never gated: 2 up to 4.18 (isSingleNodeControlPlane:
	// replicas == 1 skips it), 3 from 4.19 (isHAControlPlane).
	HAFrom int
	// MinTearDownDelay is the least delay before bootstrap-success on a
	// gated control plane (0 before 4.18).
	MinTearDownDelay time.Duration
	// FinishedBeforeTeardown: bootstrap-finished is sent, then the
	// temporary control plane torn down (4.18 on); before, teardown first.
	FinishedBeforeTeardown bool
}

// BehaviourFor is the behaviour of OpenShift version v ("4.19.10"): a
// release before 4.16 gets 4.16's, one after 4.19 (or unknown) 4.19's,
// which the branches 4.20 to 4.22 keep (inferred from their history, not
// read per branch).
func BehaviourFor(v string) Behaviour {
	minor := 19
	if n := controlplane.OpenShiftMinor(v); n != 0 {
		minor = min(max(n, 16), 19)
	}
	b := Behaviour{Branch: "4." + strconv.Itoa(minor), Gate: GateRevisions, HAFrom: 2,
		MinTearDownDelay: minimumTeardownDelay, FinishedBeforeTeardown: true}
	switch {
	case minor <= 17:
		b.Gate, b.MinTearDownDelay, b.FinishedBeforeTeardown = GateMasterNodes, 0, false
	case minor >= 19:
		b.HAFrom = 3
	}
	return b
}

// HAGate is the gate a control plane of replicas masters waits at, ""
// when none.
func (b Behaviour) HAGate(replicas int) string {
	if replicas == 1 || replicas < b.HAFrom {
		return ""
	}
	return b.Gate
}

// TearDownDelay is the delay before bootstrap-success: flag
// (--tear-down-delay), raised to the release's minimum on a gated control
// plane.
func (b Behaviour) TearDownDelay(replicas int, flag time.Duration) time.Duration {
	if b.HAGate(replicas) != "" && flag <= b.MinTearDownDelay {
		return b.MinTearDownDelay
	}
	return flag
}

// installConfigReplicas is controlPlane.replicas of the install-config the
// installer keeps in manifests/cluster-config.yaml (ConfigMap
// kube-system/cluster-config-v1), as start.go's getInstallConfig reads it.
func installConfigReplicas(assets string) (int, error) {
	p := filepath.Join(assets, "manifests", "cluster-config.yaml")
	fail := func(why string) (int, error) {
		return 0, fmt.Errorf("failed to get install config from cluster configmap %s: %s (the installer writes it from install-config.yaml)", p, why)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return fail(err.Error())
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if yaml.Unmarshal(data, &cm) != nil {
		return fail("not a ConfigMap")
	}
	ic, ok := cm.Data["install-config"]
	if !ok {
		return fail("no data.install-config")
	}
	var c struct {
		ControlPlane struct {
			Replicas *int `json:"replicas"`
		} `json:"controlPlane"`
	}
	if yaml.Unmarshal([]byte(ic), &c) != nil {
		return fail("data.install-config is not YAML")
	}
	if c.ControlPlane.Replicas == nil || *c.ControlPlane.Replicas < 1 {
		return fail("data.install-config has no controlPlane.replicas of 1 or more")
	}
	return *c.ControlPlane.Replicas, nil
}

// waitHA waits at gate: two master Nodes within ctx (4.16, 4.17), or a
// current revision on two nodes for each of the three control-plane
// operators, HAWait each (4.18 on).
func (t *Start) waitHA(ctx context.Context, c *kube.Client, gate string, say func(string, ...any)) error {
	if gate == GateMasterNodes {
		say("Waiting for %d masters to join", requiredNumberOfJoinedMaster)
		seen := map[string]bool{}
		err := pollUntil(ctx, t.PodsWait, t.PodsPoll, func() bool {
			names, err := masterNodes(ctx, c)
			if err != nil {
				return false
			}
			for _, n := range names {
				if !seen[n] {
					say("\tMaster %s joined the cluster", n)
					seen[n] = true
				}
			}
			say("\t%d masters joined the cluster", len(names))
			return len(names) >= requiredNumberOfJoinedMaster
		})
		if err != nil {
			return fmt.Errorf("error while checking for nodes status: %w", err)
		}
		return nil
	}
	say("Waiting for self hosted control plane to be available")
	for _, o := range haOperators {
		if err := t.waitRevisions(c, o, say); err != nil {
			return err
		}
	}
	return nil
}

// haOperators are what ha_checker.go asks: each operator's "cluster"
// resource, with the words of its condition.
var haOperators = []struct{ resource, what string }{
	{"kubeapiservers", "API should be available on at least two master nodes"},
	{"kubeschedulers", "scheduler should be available on at least two master nodes"},
	{"kubecontrollermanagers", "kcm should be available on at least two master nodes"},
}

// waitRevisions polls operator.openshift.io/v1 resource "cluster" every
// HAPoll until two of its status.nodeStatuses have currentRevision >= 1.
// On a rehearsal lab the masters' installer stand-ins write them, where the
// operators' installer controllers do.
func (t *Start) waitRevisions(c *kube.Client, o struct{ resource, what string }, say func(string, ...any)) error {
	say("Waiting up to %s for condition: %s", t.HAWait, o.what)
	last := ""
	err := pollUntil(context.Background(), t.HAWait, t.HAPoll, func() bool {
		reason, ok := nodeRevisions(c, o.resource)
		if ok {
			say("condition %q has been satisfied, reason: %s", o.what, reason)
			return true
		}
		if reason != last {
			say("polling will continue, last status: %s", reason)
			last = reason
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("time out waiting for condition: %q, err: %w", o.what, err)
	}
	return nil
}

// nodeRevisions reads resource/cluster's nodeStatuses: what it says, and
// whether two nodes have a current revision.
func nodeRevisions(c *kube.Client, resource string) (string, bool) {
	var obj struct {
		Status struct {
			NodeStatuses []struct {
				NodeName        string `json:"nodeName"`
				CurrentRevision int    `json:"currentRevision"`
				TargetRevision  int    `json:"targetRevision"`
			} `json:"nodeStatuses"`
		} `json:"status"`
	}
	if err := c.Do(context.Background(), http.MethodGet, "/apis/operator.openshift.io/v1/"+resource+"/cluster", nil, &obj); err != nil {
		return fmt.Sprintf("error getting %s/cluster - %v", resource, err), false
	}
	if len(obj.Status.NodeStatuses) == 0 {
		return fmt.Sprintf("NodeStatuses for %s/cluster is empty (the masters' installer stand-ins write them once their pods run)", resource), false
	}
	available, msg := 0, ""
	for _, s := range obj.Status.NodeStatuses {
		msg += fmt.Sprintf(" [%s at Current: %d, Target: %d]", s.NodeName, s.CurrentRevision, s.TargetRevision)
		if s.CurrentRevision >= 1 {
			available++
		}
	}
	return fmt.Sprintf("%s/cluster NodeStatuses:%s", resource, msg), available >= requiredNumberOfJoinedMaster
}

// masterNodes lists the Nodes labelled node-role.kubernetes.io/master, as
// status.go's node informer does (a master counts once it has the label,
// which approve-csr's stand-in sets in a rehearsal lab).
func masterNodes(ctx context.Context, c *kube.Client) ([]string, error) {
	var l struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/nodes?labelSelector="+url.QueryEscape("node-role.kubernetes.io/master"), nil, &l); err != nil {
		return nil, err
	}
	var out []string
	for _, it := range l.Items {
		out = append(out, it.Metadata.Name)
	}
	return out, nil
}
