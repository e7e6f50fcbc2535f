//go:build e2e

package e2e

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bootlab/bootlab/dashboard"
	"github.com/bootlab/bootlab/lab"
)

// clusterSource serves one lab whose cluster card is set, as the collector
// fills it from the lab's real API (dashboard's TestClusterViewFromTheRealAPI
// proves that part against a real kube-apiserver).
type clusterSource []dashboard.LabView

func (s clusterSource) Snapshot(context.Context) ([]dashboard.LabView, error) { return s, nil }

// TestDashboardClusterCardInBrowser: headless Chromium draws the cluster
// card of a lab after the handoff: who serves the API and the MCS, each
// Node with its static pods first, the CSRs waiting for approval. No VM:
// the page is what is tested.
func TestDashboardClusterCardInBrowser(t *testing.T) {
	t.Parallel()
	v := dashboard.LabView{Name: "cards", Phase: dashboard.PhaseHandoff, Nodes: []dashboard.NodeView{}, Stages: []dashboard.StageView{}, DNS: []lab.DNSRecord{},
		Failures: []string{}, LoadBalancer: dashboard.LBView{Frontends: []dashboard.FrontendView{}},
		Serving: dashboard.ServingView{API: []string{"master-0", "master-1"}, MCS: []string{"master-0"}},
		Cluster: &dashboard.ClusterView{Time: time.Now(),
			Nodes: []dashboard.ClusterNodeView{{Name: "master-0", Ready: true, Pods: []dashboard.PodView{
				{Namespace: "openshift-etcd", Name: "etcd-master-0", Phase: "Running", Static: true},
				{Namespace: "openshift-kube-apiserver", Name: "kube-apiserver-master-0", Phase: "Running", Static: true}}},
				{Name: "master-1", Pods: []dashboard.PodView{}}},
			PendingCSRs: []dashboard.CSRView{{Name: "csr-abc", Requestor: "system:node:master-1", Signer: "kubernetes.io/kubelet-serving"}}}}
	ts := httptest.NewServer(dashboard.New(dashboard.Options{Source: clusterSource{v}, Interval: 200 * time.Millisecond}).Handler())
	// Registered before the browser's cleanup, so it runs after it: Close
	// waits for the page's event stream, which ends with the browser.
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	b := startBrowser(t)
	p := b.open(t, ts.URL+"/#lab=cards")
	p.waitFor(t, "the cluster card", `!!document.querySelector('[data-csr="csr-abc"]')`, pageState, 30*time.Second)
	assert.Equal(t, "API served by master-0 master-1 · MCS served by master-0", p.eval(t, `document.getElementById('serving').textContent`))
	assert.Equal(t, "true false", p.eval(t, `[...document.querySelectorAll('[data-cluster-node]')].map(e => e.dataset.ready).join(' ')`))
	assert.Equal(t, "openshift-etcd/etcd-master-0=true openshift-kube-apiserver/kube-apiserver-master-0=true",
		p.eval(t, `[...document.querySelectorAll('[data-cluster-node="master-0"] [data-pod]')].map(e => e.dataset.pod + '=' + e.dataset.static).join(' ')`))
	assert.Equal(t, "csr-abc from system:node:master-1 (kubernetes.io/kubelet-serving)", p.eval(t, `document.querySelector('[data-csr="csr-abc"]').textContent`))
	p.screenshot(t, artifactsDir(t, "dashboard")+"/cluster-card.png")
}
