package etcd

import (
	"context"
	"fmt"
	"time"

	"github.com/bootlab/bootlab/internal/kube"
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
