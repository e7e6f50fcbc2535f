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
// Node with its static pods first, the CSRs waiting for approval, and the
// etcd members with their state and node (a learner not started yet). No VM:
// the page is what is tested.
func TestDashboardClusterCardInBrowser(t *testing.T) {
	parallel(t)
	v := dashboard.LabView{Name: "cards", Phase: dashboard.PhaseHandoff, Nodes: []dashboard.NodeView{}, Stages: []dashboard.StageView{}, DNS: []lab.DNSRecord{},
		Failures: []string{}, LoadBalancer: dashboard.LBView{Frontends: []dashboard.FrontendView{}},
		Serving: dashboard.ServingView{API: []string{"master-0", "master-1"}, MCS: []string{"master-0"}},
		Cluster: &dashboard.ClusterView{Time: time.Now(),
			Nodes: []dashboard.ClusterNodeView{{Name: "master-0", Ready: true, Pods: []dashboard.PodView{
				{Namespace: "openshift-etcd", Name: "etcd-master-0", Phase: "Running", Static: true},
				{Namespace: "openshift-kube-apiserver", Name: "kube-apiserver-master-0", Phase: "Running", Static: true}}},
				{Name: "master-1", Pods: []dashboard.PodView{}}},
			PendingCSRs: []dashboard.CSRView{{Name: "csr-abc", Requestor: "system:node:master-1", Signer: "kubernetes.io/kubelet-serving"}}},
		Etcd: &dashboard.EtcdView{From: "master-0", Endpoint: "https://10.0.0.11:2379", Time: time.Now(), Members: []dashboard.EtcdMemberView{
			{ID: "ff", Name: "etcd-bootstrap", Node: "bootstrap", PeerURL: "https://10.0.0.10:2380", State: dashboard.EtcdLeader},
			{ID: "a1", Name: "master-0", Node: "master-0", PeerURL: "https://10.0.0.11:2380", State: dashboard.EtcdVoter},
			{ID: "b2", Node: "master-1", PeerURL: "https://10.0.0.12:2380", State: dashboard.EtcdLearner}}}}
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
	assert.Equal(t, "etcd-bootstrap=leader@bootstrap master-0=voter@master-0 https://10.0.0.12:2380=learner@master-1",
		p.eval(t, `[...document.querySelectorAll('[data-etcd-member]')].map(e => e.dataset.etcdMember + '=' + e.dataset.state + '@' + e.dataset.node).join(' ')`))
	assert.Equal(t, "(not started) learner on master-1 · https://10.0.0.12:2380",
		p.eval(t, `document.querySelector('[data-etcd-member="https://10.0.0.12:2380"]').textContent`))
	assert.Equal(t, "3 · as master-0 reads them", p.eval(t, `document.getElementById('etcd-sum').textContent`))
	p.screenshot(t, artifactsDir(t, "dashboard")+"/cluster-card.png")
}
