package installer

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/timing"
)

// What a static-pod operator's installer controller records once a node
// runs a revision (library-go pkg/operator/staticpod/controller/installer,
// as the kube-apiserver, controller manager and scheduler operators run
// it): status.nodeStatuses of its operator resource ("cluster" of
// kubeapiservers, kubecontrollermanagers, kubeschedulers), one entry per
// node with its currentRevision. cluster-bootstrap's HA gate (release-4.18
// on, pkg/start/ha_checker.go) and report-progress.sh's wait-for-ha-api.sh
// read them. No operator runs in a rehearsal lab: the installer stand-ins
// write them where the operators would, once the pod they wrote serves.

// operatorResource is the operator.openshift.io/v1 resource and kind of
// component's operator.
func operatorResource(c controlplane.Component) (resource, kind string) {
	switch c {
	case controlplane.KubeControllerManager:
		return "kubecontrollermanagers", "KubeControllerManager"
	case controlplane.KubeScheduler:
		return "kubeschedulers", "KubeScheduler"
	}
	return "kubeapiservers", "KubeAPIServer"
}

// nodeStatusEntry is one node's entry of status.nodeStatuses.
type nodeStatusEntry struct {
	NodeName        string `json:"nodeName"`
	CurrentRevision int    `json:"currentRevision"`
	TargetRevision  int    `json:"targetRevision"`
}

// RecordRevision sets node's currentRevision to revision in component's
// operator resource "cluster" (created, as the CVO creates it from the
// payload, when absent), keeping the other nodes' entries: a read and an
// update with the read's resourceVersion, again on a conflict with another
// master's update.
func RecordRevision(ctx context.Context, c *kube.Client, component controlplane.Component, node string, revision int) error {
	resource, kind := operatorResource(component)
	coll := "/apis/operator.openshift.io/v1/" + resource
	obj := map[string]any{"apiVersion": "operator.openshift.io/v1", "kind": kind,
		"metadata": map[string]any{"name": "cluster"}, "spec": map[string]any{"managementState": "Managed"}}
	if err := c.Do(ctx, http.MethodPost, coll, obj, nil); err != nil && !kube.IsAlreadyExists(err) {
		return fmt.Errorf("create %s/cluster: %w", resource, err)
	}
	for try := 0; ; try++ {
		var cur map[string]any
		if err := c.Do(ctx, http.MethodGet, coll+"/cluster", nil, &cur); err != nil {
			return fmt.Errorf("get %s/cluster: %w", resource, err)
		}
		status, _ := cur["status"].(map[string]any)
		if status == nil {
			status = map[string]any{}
		}
		entries, _ := status["nodeStatuses"].([]any)
		var out []any
		for _, e := range entries {
			if m, ok := e.(map[string]any); ok && m["nodeName"] == node {
				continue
			}
			out = append(out, e)
		}
		out = append(out, nodeStatusEntry{NodeName: node, CurrentRevision: revision})
		status["nodeStatuses"] = out
		status["latestAvailableRevision"] = revision
		cur["status"] = status
		err := c.Do(ctx, http.MethodPut, coll+"/cluster/status", cur, nil)
		if err == nil {
			return nil
		}
		if !kube.HasCode(err, http.StatusConflict) || try >= 10 {
			return fmt.Errorf("update %s/cluster status: %w", resource, err)
		}
	}
}

// recordWhenServing waits until the pod of operand o answers on its
// secure port (any HTTP answer from /healthz: the process serves), then
// records this master's revision, retrying every kasPoll; false when ctx
// ended first.
func (a Master) recordWhenServing(ctx context.Context, o controlplane.Operand, port, revision int) bool {
	probe := kube.NewProbe(5 * time.Second)
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	last := ""
	for {
		err := func() error {
			if _, err := probe.Get(ctx, url, 0); err != nil {
				return fmt.Errorf("%s not serving yet: %w", url, err)
			}
			api, err := NewAPISource(apiKubeconfig, a.Dial)
			if err != nil {
				return err
			}
			return RecordRevision(ctx, api.c, o.Component, a.Self.Name, revision)
		}()
		if err == nil {
			a.Log.Info(string(o.Component)+" installer stand-in: recorded the node's current revision in its operator's nodeStatuses (as the operator's installer controller)",
				"node", a.Self.Name, "revision", revision)
			return true
		}
		if msg := err.Error(); msg != last {
			last = msg
			a.Log.Info(string(o.Component)+" installer stand-in: revision not recorded yet", "why", msg)
		}
		if !timing.Sleep(ctx, kasPoll) {
			return false
		}
	}
}
