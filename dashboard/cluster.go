package dashboard

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// ServingView names the nodes haproxy sends each service to right now
// (its backends that are up): who serves the API and the MCS.
type ServingView struct {
	API []string `json:"api"`
	MCS []string `json:"mcs"`
}

// serving reads the load balancer's view: the servers of the 6443 and
// 22623 frontends whose health is up.
func serving(lb LBView) ServingView {
	sv := ServingView{API: []string{}, MCS: []string{}}
	for _, f := range lb.Frontends {
		for _, b := range f.Backends {
			if b.Health != HealthUp {
				continue
			}
			switch f.Port {
			case loadbalancer.PortAPI:
				sv.API = append(sv.API, b.Server)
			case loadbalancer.PortMachineConfig:
				sv.MCS = append(sv.MCS, b.Server)
			}
		}
	}
	return sv
}

// ClusterView is the lab's Kubernetes as its real API tells it, read with
// the kubeconfig `bootlab lab kubeconfig` wrote (none: not shown).
type ClusterView struct {
	// Nodes are the registered Nodes with the pods bound to each.
	Nodes []ClusterNodeView `json:"nodes"`
	// PendingCSRs are the CSRs nobody approved or denied yet.
	PendingCSRs []CSRView `json:"pendingCSRs"`
	// Error says why the API could not be read (the rest is then empty).
	Error string `json:"error,omitempty"`
	// Time is when it was read.
	Time time.Time `json:"time"`
}

// ClusterNodeView is one Node and its pods: the mirror pods of its static
// control-plane pods (etcd, kube-apiserver) first.
type ClusterNodeView struct {
	Name  string    `json:"name"`
	Ready bool      `json:"ready"`
	Pods  []PodView `json:"pods"`
}

// PodView is one pod on a node.
type PodView struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	// Static is true for a mirror pod: a static pod the kubelet runs from
	// its manifests directory, published to the API.
	Static bool `json:"static"`
}

// CSRView is one pending certificate signing request.
type CSRView struct {
	Name      string `json:"name"`
	Requestor string `json:"requestor"`
	Signer    string `json:"signer"`
}

// clusterEvery bounds how often a lab's API is read: the page polls every
// second, the cluster changes on the scale of stages.
const clusterEvery = 5 * time.Second

// mirrorAnnotation marks a mirror pod (the kubelet's, for a static pod).
const mirrorAnnotation = "kubernetes.io/config.mirror"

// cluster returns the lab's cluster view, read again once clusterEvery has
// passed; nil when the lab has no kubeconfig written.
func (c *Collector) cluster(ctx context.Context, s *spec.Spec) *ClusterView {
	path := labdir.Kubeconfig(s)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	c.mu.Lock()
	cached, ok := c.clusters[s.LabDir]
	c.mu.Unlock()
	if ok && time.Since(cached.Time) < clusterEvery {
		return cached
	}
	v := readCluster(ctx, path, s)
	c.mu.Lock()
	if c.clusters == nil {
		c.clusters = map[string]*ClusterView{}
	}
	c.clusters[s.LabDir] = v
	c.mu.Unlock()
	return v
}

// readCluster reads the Nodes, the pods and the CSRs with the kubeconfig at
// path, through the lab's load balancer address.
func readCluster(ctx context.Context, path string, s *spec.Spec) *ClusterView {
	v := &ClusterView{Nodes: []ClusterNodeView{}, PendingCSRs: []CSRView{}, Time: time.Now()}
	k, err := cluster.LoadKubeconfig(path)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	api, err := cluster.NewClient(k, "", nil)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var nodes corev1.NodeList
	var pods corev1.PodList
	var csrs certv1.CertificateSigningRequestList
	for p, out := range map[string]any{"/api/v1/nodes": &nodes, "/api/v1/pods": &pods,
		"/apis/certificates.k8s.io/v1/certificatesigningrequests": &csrs} {
		if err := api.Get(ctx, p, out); err != nil {
			v.Error = err.Error()
			return v
		}
	}
	v.Nodes = nodeViews(nodes, pods)
	v.PendingCSRs = pendingCSRs(csrs)
	return v
}

// nodeViews groups the pods by the Node they are bound to, static pods
// first, each group by name.
func nodeViews(nodes corev1.NodeList, pods corev1.PodList) []ClusterNodeView {
	out := []ClusterNodeView{}
	byNode := map[string][]PodView{}
	for _, p := range pods.Items {
		_, static := p.Annotations[mirrorAnnotation]
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], PodView{Namespace: p.Namespace, Name: p.Name, Phase: string(p.Status.Phase), Static: static})
	}
	for _, n := range nodes.Items {
		nv := ClusterNodeView{Name: n.Name, Pods: byNode[n.Name]}
		if nv.Pods == nil {
			nv.Pods = []PodView{}
		}
		sort.Slice(nv.Pods, func(i, j int) bool {
			if nv.Pods[i].Static != nv.Pods[j].Static {
				return nv.Pods[i].Static
			}
			return nv.Pods[i].Namespace+"/"+nv.Pods[i].Name < nv.Pods[j].Namespace+"/"+nv.Pods[j].Name
		})
		for _, c := range n.Status.Conditions {
			nv.Ready = nv.Ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		out = append(out, nv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// pendingCSRs are the CSRs with neither an Approved nor a Denied condition.
func pendingCSRs(csrs certv1.CertificateSigningRequestList) []CSRView {
	out := []CSRView{}
	for _, r := range csrs.Items {
		if len(r.Status.Conditions) > 0 {
			continue
		}
		out = append(out, CSRView{Name: r.Name, Requestor: r.Spec.Username, Signer: r.Spec.SignerName})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
