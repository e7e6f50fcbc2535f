//go:build integration

package node_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/guestcluster/kubelet/node"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
	"github.com/bootlab/bootlab/lab/cluster"
)

func TestMain(m *testing.M) {
	os.Exit(kubetest.RunWithSharedCache(m))
}

// cluster is a real etcd, kube-apiserver (Node and RBAC authorization,
// NodeRestriction, as OpenShift runs it) and kube-controller-manager
// running only the CSR signer: approval is left to bootlab's code, as on
// a platform-none cluster once the bootstrap's approve-csr is gone.
type testCluster struct {
	cp      *kubetest.ControlPlane
	admin   kube.Config
	ca      pki.Pair
	version string
}

func startCluster(t *testing.T) *testCluster {
	t.Helper()
	rel := kuberelease.Build(t, "4.19")
	cp := kubetest.StartControlPlane(t, rel.Etcd, rel.Programs,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction")
	tc := &testCluster{cp: cp, version: rel.Version}
	var err error
	tc.admin, err = kube.LoadKubeconfig(cp.Files["kubeconfig"])
	require.NoError(t, err)
	tc.ca.CertPEM, err = os.ReadFile(cp.Files["ca.crt"])
	require.NoError(t, err)
	tc.ca.KeyPEM, err = os.ReadFile(cp.Files["ca.key"])
	require.NoError(t, err)
	// As the lab's: the controller manager signs with a kubelet-signer,
	// an intermediate of the CA, which the API's client CA bundle adds
	// (kube-apiserver reloads --client-ca-file when it changes).
	signer, err := pki.NewIntermediate(tc.ca, "kubelet-signer")
	require.NoError(t, err)
	dir := t.TempDir()
	signerCert, signerKey := filepath.Join(dir, "kubelet-signer.crt"), filepath.Join(dir, "kubelet-signer.key")
	require.NoError(t, os.WriteFile(signerCert, signer.CertPEM, 0o644))
	require.NoError(t, os.WriteFile(signerKey, signer.KeyPEM, 0o600))
	require.NoError(t, os.WriteFile(cp.Files["ca.crt"], append(append([]byte(nil), tc.ca.CertPEM...), signer.CertPEM...), 0o600))
	cp.StartControllerManager(t, "--controllers=csrsigning",
		"--cluster-signing-cert-file="+signerCert, "--cluster-signing-key-file="+signerKey)
	// What the machine-config-operator's manifests grant the installer's
	// node-bootstrapper: creating and reading CSRs, nothing more.
	tc.kubectl(t, "create", "clusterrolebinding", "node-bootstrapper", "--clusterrole=system:node-bootstrapper",
		"--serviceaccount=openshift-machine-config-operator:node-bootstrapper")
	tc.kubectl(t, "create", "namespace", "openshift-etcd")
	return tc
}

func (tc *testCluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := tc.cp.Kubectl(args...)
	require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	return out
}

// kubeconfig writes a kubeconfig for a client certificate cn/orgs signed by
// the cluster's client CA, as the installer writes auth/kubeconfig-kubelet.
func (tc *testCluster) kubeconfig(t *testing.T, cn string, orgs []string) string {
	t.Helper()
	p, err := pki.NewClient(tc.ca, cn, orgs)
	require.NoError(t, err)
	b64 := base64.StdEncoding.EncodeToString
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- {name: c, cluster: {server: %s, certificate-authority-data: %s}}
users:
- {name: u, user: {client-certificate-data: %s, client-key-data: %s}}
contexts:
- {name: x, context: {cluster: c, user: u}}
current-context: x
`, tc.admin.Server, b64(tc.admin.CAPEM), b64(p.CertPEM), b64(p.KeyPEM))), 0o600))
	return path
}

func (tc *testCluster) bootstrapKubeconfig(t *testing.T) string {
	return tc.kubeconfig(t, cluster.NodeBootstrapper, []string{"system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator"})
}

// approver is bootlab's approval (`lab approve-csrs`) through the admin
// kubeconfig, for the lab's nodes.
func (tc *testCluster) approve(t *testing.T, nodes ...string) []cluster.CSRReview {
	t.Helper()
	k, err := cluster.LoadKubeconfig(tc.cp.Files["kubeconfig"])
	require.NoError(t, err)
	api, err := cluster.NewClient(k, "", nil)
	require.NoError(t, err)
	var lab []cluster.LabNode
	for _, n := range nodes {
		lab = append(lab, cluster.LabNode{Name: n, IP: "127.0.0.1"})
	}
	reviews, err := cluster.ReviewAndApprove(context.Background(), api, lab, false, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return reviews
}

func newNode(t *testing.T, tc *testCluster, name string, pods func() []node.StaticPod) (*node.Node, node.Config) {
	t.Helper()
	dir := t.TempDir()
	cfg := node.Config{Name: name, BootstrapKubeconfig: tc.bootstrapKubeconfig(t),
		Kubeconfig: filepath.Join(dir, "kubeconfig"), CertDir: filepath.Join(dir, "pki"),
		KubeletVersion: tc.version, Roles: []string{"master"}, StaticPods: pods, Poll: 200 * time.Millisecond, Heartbeat: time.Second,
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: name}}}
	n, err := node.New(slog.New(slog.DiscardHandler), cfg)
	require.NoError(t, err)
	return n, cfg
}

const staticPods = `apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: openshift-etcd}
spec:
  hostNetwork: true
  priorityClassName: system-node-critical
  containers:
  - {name: etcd, image: quay.io/openshift/etcd, command: ["sleep"], args: ["300"]}
`

// One real cluster for the three: each start costs most of a minute here.
func TestNodeJoin(t *testing.T) {
	t.Parallel()
	tc := startCluster(t)
	t.Run("joins through the real CSR flow", func(t *testing.T) {
		t.Parallel() // a node of its own on the shared cluster
		testJoin(t, tc)
	})
	t.Run("unapproved stays unregistered", func(t *testing.T) {
		t.Parallel() // a node of its own on the shared cluster
		testUnapproved(t, tc)
	})
	t.Run("approval refuses a non-node requester", func(t *testing.T) {
		t.Parallel() // a node of its own on the shared cluster
		testRefusesNonNodeRequester(t, tc)
	})
	t.Run("Run joins once approved and keeps the lease fresh", func(t *testing.T) {
		t.Parallel() // a node of its own on the shared cluster
		testRunHeartbeat(t, tc)
	})
}

// Run waits for approval, registers, then renews the Lease and the Ready
// heartbeat every Heartbeat, as the kubelet does every 10 s. The Lease has
// a loop of its own, as the kubelet's node lease controller: with the
// status sync stuck (here its static pod listing never returns, as a
// sync whose every request waits out a loaded API), the Lease is still
// renewed, so the node controller never sees the node go quiet.
func testRunHeartbeat(t *testing.T, tc *testCluster) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stuck := make(chan struct{})
	calls := 0
	pods := func() []node.StaticPod {
		if calls++; calls == 1 {
			return nil // Start's first heartbeat
		}
		if calls == 2 {
			close(stuck)
		}
		<-ctx.Done()
		return nil
	}
	n, _ := newNode(t, tc, "master-3", pods)
	go n.Run(ctx)
	require.Eventually(t, func() bool {
		r, ok := find(tc.approve(t, "master-3"), "master-3")
		return ok && r.Approved
	}, 30*time.Second, 500*time.Millisecond)
	renew := func() string {
		out, err := tc.cp.Kubectl("get", "lease", "-n", "kube-node-lease", "master-3", "-o", "jsonpath={.spec.renewTime}")
		if err != nil {
			return "" // not there yet
		}
		return out
	}
	var first string
	require.Eventually(t, func() bool { first = renew(); return first != "" }, 30*time.Second, 500*time.Millisecond, "the node registers and takes its lease")
	select {
	case <-stuck: // the first sync, Start's, is done: the status is posted
	case <-time.After(30 * time.Second):
		t.Fatal("the second status sync never started")
	}
	assert.Equal(t, "True", tc.kubectl(t, "get", "node", "master-3", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`))
	seen := renew()
	for i := 0; i < 2; i++ {
		prev := seen
		require.Eventually(t, func() bool { seen = renew(); return seen > prev }, 10*time.Second, 300*time.Millisecond,
			"the lease is renewed while the status sync is stuck (renewal %d after %s)", i+1, prev)
	}
}

// A node joins as the kubelet does: its client CSR, approved by bootlab's
// approval code, is signed by the real signer; the Node is Ready for the
// release's kubectl, with its lease; the static pod that runs is a mirror
// pod Running, the one whose program the node lacks is Pending and says
// why; a pod scheduled to it is never shown Running.
func testJoin(t *testing.T, tc *testCluster) {

	manifests := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "etcd-pod.yaml"), []byte(staticPods), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "kube-scheduler-pod.yaml"), []byte(strings.NewReplacer(
		"name: etcd,", "name: kube-scheduler,", "openshift-etcd", "kube-system", `["sleep"]`, `["no-such-scheduler"]`).Replace(staticPods)), 0o644))
	kl := kubelet.New(slog.New(slog.DiscardHandler), manifests, nil).WithPaths(filepath.Join(t.TempDir(), "kubelet.json"), t.TempDir())
	kctx, stopKubelet := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { kl.Run(kctx); close(ran) }()
	t.Cleanup(func() {
		// Stop the stand-in and its processes as a node shutdown does, and
		// wait: their logs are written into the test's directories.
		stopKubelet()
		<-ran
		kl.Shutdown(context.Background())
	})

	n, cfg := newNode(t, tc, "master-0", kl.StaticPods)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, n.RealAPI(ctx), "the real kube-apiserver serves CSRs: the node joins it")
	started := make(chan error, 1)
	go func() { started <- n.Start(ctx) }()

	var r cluster.CSRReview
	require.Eventually(t, func() bool {
		var ok bool
		r, ok = find(tc.approve(t, "master-0"), "master-0")
		return ok && r.Approved
	}, time.Minute, 500*time.Millisecond, "bootlab's approval approves the node's client CSR")
	assert.Equal(t, cluster.KindClient, r.Kind)
	assert.Equal(t, cluster.NodeBootstrapper, r.Requestor)
	require.NoError(t, <-started)

	assert.Regexp(t, `(?m)^master-0\s+Ready\s+\S+\s+\S+\s+`+tc.version+`$`, tc.kubectl(t, "get", "nodes"))
	assert.Equal(t, "True", tc.kubectl(t, "get", "node", "master-0", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`))
	assert.Contains(t, tc.kubectl(t, "get", "node", "master-0", "-o", "jsonpath={.metadata.annotations}"), node.StandInAnnotation)
	// NodeRestriction refused the node-role label: the node asks for it.
	assert.Equal(t, "node-role.kubernetes.io/master", tc.kubectl(t, "get", "node", "master-0", "-o",
		`jsonpath={.metadata.annotations.bootlab\.io/node-role-labels}`))
	assert.NotContains(t, tc.kubectl(t, "get", "node", "master-0", "-o", "jsonpath={.metadata.labels}"), "node-role.kubernetes.io")
	assert.Equal(t, "master-0", tc.kubectl(t, "get", "lease", "-n", "kube-node-lease", "master-0", "-o", "jsonpath={.spec.holderIdentity}"))
	kc, err := os.Stat(cfg.Kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), kc.Mode().Perm(), "the node's kubeconfig names its key: 0600")
	pem, err := os.Stat(filepath.Join(cfg.CertDir, node.ClientCertFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), pem.Mode().Perm())
	issued, err := os.ReadFile(filepath.Join(cfg.CertDir, node.ClientCertFile))
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(issued, issued)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, "kubelet-signer", leaf.Issuer.CommonName, "the controller manager's signer issued it")
	assert.Equal(t, "system:node:master-0", leaf.Subject.CommonName)
	assert.Equal(t, []string{"system:nodes"}, leaf.Subject.Organization)

	assert.Regexp(t, `(?m)^etcd-master-0\s+1/1\s+Running\s`, tc.kubectl(t, "get", "pods", "-n", "openshift-etcd"))
	assert.NotEmpty(t, tc.kubectl(t, "get", "pod", "-n", "openshift-etcd", "etcd-master-0", "-o", `jsonpath={.metadata.annotations.kubernetes\.io/config\.mirror}`))
	assert.Equal(t, "Pending "+node.NotRunReason, tc.kubectl(t, "get", "pod", "-n", "kube-system", "kube-scheduler-master-0", "-o",
		`jsonpath={.status.phase} {.status.containerStatuses[0].state.waiting.reason}`))

	// A scheduled pod (bound by the admin, as the scheduler would) is
	// reported not run, with a Warning event.
	tc.kubectl(t, "create", "serviceaccount", "default") // no serviceaccount controller runs here
	tc.kubectl(t, "run", "web", "--image=nginx", "--overrides", `{"spec":{"nodeName":"master-0"}}`)
	require.NoError(t, n.Sync(ctx))
	assert.Equal(t, "Pending "+node.NotRunReason, tc.kubectl(t, "get", "pod", "web", "-o", `jsonpath={.status.phase} {.status.containerStatuses[0].state.waiting.reason}`))
	assert.Contains(t, tc.kubectl(t, "get", "events", "--field-selector", "involvedObject.name=web", "-o", "jsonpath={.items[*].reason}"), "NotRun")

	// The static pod's process ends: its mirror pod is no longer Running.
	require.NoError(t, os.Remove(filepath.Join(manifests, "etcd-pod.yaml")))
	require.Eventually(t, func() bool {
		for _, p := range kl.StaticPods() {
			if p.Pod.Name == "etcd" {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond)
	require.NoError(t, n.Sync(ctx))
	out, err := tc.cp.Kubectl("get", "pod", "-n", "openshift-etcd", "etcd-master-0")
	assert.Error(t, err, "the mirror pod goes with its manifest")
	assert.Contains(t, out, "NotFound")
}

// A CSR nobody approves leaves the node unregistered, and the join says
// which CSR waits and what to run.
func testUnapproved(t *testing.T, tc *testCluster) {
	n, _ := newNode(t, tc, "master-1", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := n.Start(ctx)
	var na *node.NotApprovedError
	require.True(t, errors.As(err, &na), "%v", err)
	assert.Equal(t, "master-1", na.Node)
	assert.Contains(t, err.Error(), "bootlab lab approve-csrs")
	assert.Contains(t, err.Error(), "pending")
	assert.Contains(t, tc.kubectl(t, "get", "csr"), na.CSR)
	out, err := tc.cp.Kubectl("get", "node", "master-1")
	assert.Error(t, err)
	assert.Contains(t, out, "NotFound")
}

// bootlab's approval refuses a node CSR that does not come from the
// node-bootstrapper, however well it names a lab node; it stays pending.
func testRefusesNonNodeRequester(t *testing.T, tc *testCluster) {
	// Someone else (a user in no node group) asks for master-0's identity.
	other := tc.kubeconfig(t, "mallory", []string{"developers"})
	tc.kubectl(t, "create", "clusterrolebinding", "mallory-csr", "--clusterrole=system:node-bootstrapper", "--user=mallory")
	cfg := node.Config{Name: "master-2", BootstrapKubeconfig: other, Kubeconfig: filepath.Join(t.TempDir(), "kc"),
		CertDir: t.TempDir(), KubeletVersion: tc.version, Poll: 200 * time.Millisecond}
	n, err := node.New(slog.New(slog.DiscardHandler), cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- n.Start(ctx) }()
	var r cluster.CSRReview
	require.Eventually(t, func() bool {
		for _, rv := range tc.approve(t, "master-2") {
			if rv.Requestor == "mallory" {
				r = rv
				return true
			}
		}
		return false
	}, 10*time.Second, 200*time.Millisecond)
	assert.False(t, r.Approve)
	assert.False(t, r.Approved)
	assert.Equal(t, "master-2", r.Node, "the CSR names a lab node")
	assert.Contains(t, r.Reason, cluster.NodeBootstrapper)
	require.Error(t, <-done)
	assert.Regexp(t, `Pending\s*$`, strings.TrimSpace(tc.kubectl(t, "get", "csr", r.Name)))
	out, err := tc.cp.Kubectl("get", "node", "master-2")
	assert.Error(t, err)
	assert.Contains(t, out, "NotFound")
}

// find is the review of the node's client CSR from the node-bootstrapper.
func find(rs []cluster.CSRReview, node string) (cluster.CSRReview, bool) {
	for _, r := range rs {
		if r.Node == node && r.Requestor == cluster.NodeBootstrapper {
			return r, true
		}
	}
	return cluster.CSRReview{}, false
}
