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
// keeps etcds/cluster's conditions, and wait-for-ceo (stage 14) reads
// EtcdBootstrapMemberRemoved from it. Once the masters serve the API with
// their real kube-apiservers, nothing in memory answers for the operator:
// its stand-in writes the condition where the operator does.

// etcdStatusCondition is EtcdBootstrapMemberRemoved for the member list.
func etcdStatusCondition(ms []Member, now time.Time) (map[string]any, bool) {
	c := map[string]any{"type": "EtcdBootstrapMemberRemoved", "status": "True", "reason": "BootstrapMemberRemoved",
		"message": "etcd bootstrap member is removed; members " + MemberSummary(ms), "lastTransitionTime": now.UTC().Format(time.RFC3339)}
	for _, m := range ms {
		if m.Name == BootstrapMemberName {
			c["status"], c["reason"] = "False", "BootstrapMemberPresent"
			c["message"] = "still waiting for the bootstrap teardown; members " + MemberSummary(ms)
			return c, false
		}
	}
	return c, true
}

// WriteStatus creates etcds/cluster if the API lacks it and sets its
// EtcdBootstrapMemberRemoved condition from ms; it returns whether the
// bootstrap member is removed.
func WriteStatus(ctx context.Context, c *kube.Client, ms []Member) (bool, error) {
	obj := map[string]any{"apiVersion": "operator.openshift.io/v1", "kind": "Etcd",
		"metadata": map[string]any{"name": "cluster"}, "spec": map[string]any{"managementState": "Managed"}}
	err := c.Do(ctx, "POST", "/apis/operator.openshift.io/v1/etcds", obj, nil)
	if err != nil && !kube.IsAlreadyExists(err) {
		return false, fmt.Errorf("create etcds/cluster: %w", err)
	}
	cond, removed := etcdStatusCondition(ms, time.Now())
	patch := map[string]any{"status": map[string]any{"conditions": []any{cond}}}
	if err := c.Patch(ctx, etcdOperatorPath+"/status", patch, nil); err != nil {
		return false, fmt.Errorf("set etcds/cluster status: %w", err)
	}
	return removed, nil
}

// statusPoll is how often the status is written again.
const statusPoll = 10 * time.Second

// PublishStatus plays the etcd operator's status on the real API, on the
// master that plays its teardown: every statusPoll it writes
// etcds/cluster's EtcdBootstrapMemberRemoved from the member list, until
// it has written True (stage 14's wait-for-ceo reads it). An API that does
// not serve etcds yet (stage 13 creates its CRD) is retried. kubeconfig is
// the operator's credential; dial opens the connections (the node's
// resolver for api-int).
func (o *Operator) PublishStatus(ctx context.Context, self wire.NodeExpect, kubeconfig string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	local := MasterEtcdctl("https://" + self.IP + ":2379")
	last := ""
	for {
		removed, err := publishStatusOnce(ctx, local, kubeconfig, dial)
		if err == nil && removed {
			o.Log.Info("etcd operator stand-in: wrote EtcdBootstrapMemberRemoved=True to etcds/cluster through the real API")
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
func publishStatusOnce(ctx context.Context, local Etcdctl, kubeconfig string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (bool, error) {
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
	return WriteStatus(ctx, c, ms)
}
