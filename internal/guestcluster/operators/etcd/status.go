package etcd

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
)

// The etcd operator's status through the real API: upstream the operator
// keeps etcds/cluster's conditions, set by its bootstrap teardown
// controller (bootstrap_teardown_controller.go): EtcdRunningInCluster once
// there are enough healthy members (stage 14's wait-for-ceo waits for it),
// EtcdBootstrapMemberRemoved once etcd-bootstrap is gone (openshift-install
// wait-for bootstrap-complete waits for it). Once the masters serve the API
// with their real kube-apiservers, nothing in memory answers for the
// operator: its stand-in writes the conditions where the operator does.

// etcdStatusConditions are EtcdRunningInCluster (running: the teardown found
// enough healthy members, or the bootstrap member is gone) and
// EtcdBootstrapMemberRemoved for the member list, in upstream's reasons and
// messages.
func etcdStatusConditions(ms []Member, running bool, now time.Time) (conds []any, removed bool) {
	removed = true
	for _, m := range ms {
		if m.Name == BootstrapMemberName {
			removed = false
		}
	}
	at := now.UTC().Format(time.RFC3339)
	cond := func(typ string, ok bool, reason, message string) map[string]any {
		st := "False"
		if ok {
			st = "True"
		}
		return map[string]any{"type": typ, "status": st, "reason": reason, "message": message + "; members " + MemberSummary(ms), "lastTransitionTime": at}
	}
	run := cond("EtcdRunningInCluster", false, "NotEnoughEtcdMembers", "still waiting for three healthy etcd members")
	switch {
	case removed:
		run = cond("EtcdRunningInCluster", true, "BootstrapAlreadyRemoved", "etcd-bootstrap member is already removed")
	case running:
		run = cond("EtcdRunningInCluster", true, "EnoughEtcdMembers", "enough members found")
	}
	gone := cond("EtcdBootstrapMemberRemoved", false, "BootstrapMemberPresent", "the bootstrap teardown waits for kube-system/bootstrap to say complete")
	if removed {
		gone = cond("EtcdBootstrapMemberRemoved", true, "BootstrapMemberRemoved", "etcd bootstrap member is removed")
	}
	return []any{run, gone}, removed
}

// WriteStatus creates etcds/cluster if the API lacks it and sets its
// EtcdRunningInCluster and EtcdBootstrapMemberRemoved conditions from ms
// and running; it returns whether the bootstrap member is removed.
func WriteStatus(ctx context.Context, c *kube.Client, ms []Member, running bool) (bool, error) {
	obj := map[string]any{"apiVersion": "operator.openshift.io/v1", "kind": "Etcd",
		"metadata": map[string]any{"name": "cluster"}, "spec": map[string]any{"managementState": "Managed"}}
	err := c.Do(ctx, "POST", "/apis/operator.openshift.io/v1/etcds", obj, nil)
	if err != nil && !kube.IsAlreadyExists(err) {
		return false, fmt.Errorf("create etcds/cluster: %w", err)
	}
	conds, removed := etcdStatusConditions(ms, running, time.Now())
	patch := map[string]any{"status": map[string]any{"conditions": conds}}
	if err := c.Patch(ctx, etcdOperatorPath+"/status", patch, nil); err != nil {
		return false, fmt.Errorf("set etcds/cluster status: %w", err)
	}
	return removed, nil
}

// statusPoll is how often the status is written again.
const statusPoll = 10 * time.Second

// PublishStatus plays the etcd operator's status on the real API, on the
// master that plays its teardown: every statusPoll it writes
// etcds/cluster's conditions from the member list and what the teardown
// found, until EtcdBootstrapMemberRemoved is True (stage 14's wait-for-ceo
// reads EtcdRunningInCluster before that). An API that does
// not serve etcds yet (stage 13 creates its CRD) is retried. kubeconfig is
// the operator's credential; dial opens the connections (the node's
// resolver for api-int).
func (o *Operator) PublishStatus(ctx context.Context, self wire.NodeExpect, kubeconfig string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	local := MasterEtcdctl("https://" + self.IP + ":2379")
	last := ""
	for {
		removed, err := publishStatusOnce(ctx, local, kubeconfig, dial, o.running.Load())
		if err == nil && removed {
			o.Log.Info("etcd operator stand-in: wrote EtcdRunningInCluster=True and EtcdBootstrapMemberRemoved=True to etcds/cluster through the real API")
			return
		}
		if err != nil && err.Error() != last {
			last = err.Error()
			o.Log.Info("etcd operator stand-in: etcds/cluster status not written yet", "why", last)
		}
		if !timing.Sleep(ctx, statusPoll) {
			return
		}
	}
}

// publishStatusOnce asks the API first: etcd is read only once a real API
// serves the etcd operator's kind.
func publishStatusOnce(ctx context.Context, local Etcdctl, kubeconfig string, dial func(ctx context.Context, network, addr string) (net.Conn, error), running bool) (bool, error) {
	cfg, err := kube.LoadKubeconfig(kubeconfig)
	if err != nil {
		return false, err
	}
	cfg.Dial = dial
	c, err := kube.NewClient(cfg)
	if err != nil {
		return false, err
	}
	if err := c.Do(ctx, "GET", "/apis/operator.openshift.io/v1/etcds", nil, nil); err != nil {
		return false, fmt.Errorf("no real API serving etcds at %s yet: %w", c.Server(), err)
	}
	ms, err := local.Members(ctx)
	if err != nil {
		return false, err
	}
	return WriteStatus(ctx, c, ms, running)
}
