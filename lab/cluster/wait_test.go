package cluster

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/status"
)

// fakeNode answers the SSH commands of the narrative from canned outputs,
// one per call, repeating the last.
type fakeNode struct {
	mu    sync.Mutex
	out   map[string][]string
	calls map[string]int
	fail  int // the first fail calls fail, as before sshd is up
}

// node is f as a node.Node, as the wait sees the bootstrap.
func (f *fakeNode) asNode() node.Node { return cannedNode("fake-bootstrap", f.Run) }

// cannedNode makes a node.Node of a function from command to stdout.
func cannedNode(name string, run func(ctx context.Context, cmd string) (string, error)) node.Node {
	return node.Command(name, func(ctx context.Context, cmd string, _ io.Reader, stdout, _ io.Writer) (int, error) {
		out, err := run(ctx, cmd)
		if err != nil {
			return -1, err
		}
		_, err = io.WriteString(stdout, out)
		return 0, err
	})
}

func (f *fakeNode) Run(ctx context.Context, cmd string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return "", errors.New("dial tcp 192.168.126.10:22: connect: connection refused")
	}
	key := "ls"
	if strings.Contains(cmd, "crictl") {
		key = "crictl"
	}
	seq := f.out[key]
	i := f.calls[key]
	f.calls[key]++
	if i >= len(seq) {
		i = len(seq) - 1
	}
	return seq[i], nil
}

func kubeNode(name string, ready bool) corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
}

func etcdOp(removed string) map[string]any {
	return map[string]any{"status": map[string]any{"conditions": []Condition{
		{Type: "EtcdMembersAvailable", Status: "True"},
		{Type: EtcdBootstrapMemberRemoved, Status: removed, Reason: "BootstrapMemberRemoved"},
	}}}
}

func TestWaitBootstrapCompleteNarrative(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	api := newFakeAPI(t, p, true)
	mcs := newFakeAPI(t, p, false)
	notReady := response{code: 500, body: "[-]etcd failed: reason withheld\nreadyz check failed"}
	api.set("/readyz", notReady, notReady, response{body: "ok"})
	api.set("/version", response{body: map[string]string{"gitVersion": "v1.32.5"}})
	cm := func(data map[string]string, ann map[string]string) corev1.ConfigMap {
		return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: ann}, Data: data}
	}
	bootAnn := map[string]string{"alpha.installer.openshift.io/etcd-bootstrap": "192.168.126.10"}
	api.set(EtcdEndpointsPath,
		response{body: cm(map[string]string{"a": "192.168.126.11"}, bootAnn)},
		response{body: cm(map[string]string{"a": "192.168.126.11", "b": "192.168.126.12", "c": "192.168.126.13"}, bootAnn)},
		response{body: cm(map[string]string{"a": "192.168.126.11", "b": "192.168.126.12", "c": "192.168.126.13"}, nil)})
	api.set(MasterNodesPath,
		response{body: corev1.NodeList{}},
		response{body: corev1.NodeList{Items: []corev1.Node{kubeNode("master-0", false)}}},
		response{body: corev1.NodeList{Items: []corev1.Node{kubeNode("master-0", true), kubeNode("master-1", true), kubeNode("master-2", true)}}})
	api.set(BootstrapCMPath, response{code: 404, body: `{"message":"configmaps \"bootstrap\" not found"}`}, response{code: 404}, response{code: 404},
		response{body: cm(map[string]string{"status": "complete"}, nil)})
	api.set(EtcdOperatorPath, response{body: etcdOp("False")}, response{body: etcdOp("False")}, response{body: etcdOp("False")},
		response{body: etcdOp("False")}, response{body: etcdOp("True")})
	mcs.set("/healthz", response{code: 503}, response{code: 200})
	mcs.set("/config/worker", response{code: 500}, response{code: 500}, response{code: 500}, response{code: 200, body: `{"ignition":{"version":"3.2.0"}}`})

	boot := &fakeNode{fail: 1, calls: map[string]int{}, out: map[string][]string{
		"ls": {"", "api-bootstrap.done\n", "api-bootstrap.done\netcd-bootstrap.done\n", "api-bootstrap.done\netcd-bootstrap.done\n.bootkube.done\n"},
		"crictl": {`{"containers":[]}`, `{"containers":[{"metadata":{"name":"etcd"},"labels":{"io.kubernetes.pod.name":"etcd-bootstrap-member-bootstrap"}}]}`,
			`{"containers":[{"metadata":{"name":"etcd"},"labels":{"io.kubernetes.pod.name":"etcd-bootstrap-member-bootstrap"}},{"metadata":{"name":"kube-apiserver"},"labels":{"io.kubernetes.pod.name":"bootstrap-kube-apiserver-bootstrap"}}]}`},
	}}
	m, err := NewMCS(p.caPEM, "ocp.lab.local", "127.0.0.1", nil)
	require.NoError(t, err)
	m.URL = "https://api-int.ocp.lab.local:" + mcs.port()

	var out bytes.Buffer
	workers := 0
	err = WaitBootstrapComplete(context.Background(), BootstrapWaitOptions{
		API: newTestClient(t, p, api), MCS: m, Bootstrap: boot.asNode(),
		Masters:  []LabNode{{Name: "master-0"}, {Name: "master-1"}, {Name: "master-2"}},
		Interval: 1, Status: status.New(&out, false),
		OnWorkerConfig: func(context.Context) error { workers++; return nil },
	})
	require.NoError(t, err, out.String())
	text := out.String()
	want := []string{
		"Waiting up to 20m0s",
		"for the Kubernetes API at https://api.ocp.lab.local:",
		"no SSH to core@bootstrap yet",
		"Machine Config Server answers /healthz on :22623",
		"logged in to core@bootstrap over SSH",
		"API v1.32.5 is up: api.ocp.lab.local answers /readyz through the load balancer",
		"Waiting up to 45m0s",
		"bootkube stage api-bootstrap done (/opt/openshift/api-bootstrap.done)",
		"container etcd of pod etcd-bootstrap-member-bootstrap started",
		"etcd members: 192.168.126.11, 192.168.126.10 (bootstrap)",
		"bootkube stage etcd-bootstrap done",
		"etcd members: 192.168.126.11, 192.168.126.12, 192.168.126.13, 192.168.126.10 (bootstrap)",
		"master master-0 registered (not Ready yet)",
		"the masters' MCS now serves /config/worker: starting the workers",
		"bootkube.service finished: /opt/openshift/.bootkube.done",
		"master master-0 is Ready",
		"all 3 masters are Ready",
		"ConfigMap kube-system/bootstrap says status: complete",
		"Waiting for the bootstrap etcd member to be removed...",
		"etcd operator: EtcdBootstrapMemberRemoved=True (BootstrapMemberRemoved)",
		"It is now safe to remove the bootstrap resources: run `bootlab lab pivot`",
	}
	pos := 0
	for _, w := range want {
		i := strings.Index(text[pos:], w)
		require.GreaterOrEqual(t, i, 0, "missing or out of order: %q\n%s", w, text)
		pos += i
	}
	assert.Equal(t, 1, strings.Count(text, "api-bootstrap done"), "each marker is told once")
	assert.Contains(t, text, "etcd-bootstrap done")
	assert.Contains(t, text, "bootkube.service finished: /opt/openshift/.bootkube.done")
	assert.Contains(t, text, "container kube-apiserver of pod bootstrap-kube-apiserver-bootstrap started")
	assert.Equal(t, 1, workers, "the workers are started once")
	assert.NotContains(t, text, "reason withheld", "readyz failures are not narrated at info level")
}

func TestWaitBootstrapAPITimeout(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	api := newFakeAPI(t, p, true)
	api.set("/readyz", response{code: 503, body: "not ready"})
	var out bytes.Buffer
	err := WaitBootstrapComplete(context.Background(), BootstrapWaitOptions{
		API: newTestClient(t, p, api), APITimeout: 1, Interval: 1, Status: status.New(&out, false),
	})
	var te *TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Contains(t, err.Error(), "the Kubernetes API answering /readyz")
	assert.Contains(t, err.Error(), "last answer: GET /readyz: HTTP 503: not ready")
	assert.Contains(t, err.Error(), "bootlab lab gather")
}

func TestWaitBootstrapTimeoutAfterAPI(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	api := newFakeAPI(t, p, true)
	api.set("/readyz", response{body: "ok"})
	var out bytes.Buffer
	err := WaitBootstrapComplete(context.Background(), BootstrapWaitOptions{
		API: newTestClient(t, p, api), BootstrapTimeout: 1, Interval: 1, Status: status.New(&out, false),
	})
	var te *TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Contains(t, err.Error(), "bootstrap-complete")
	assert.Contains(t, err.Error(), "bootlab lab approve-csrs")
}

func TestWaitBootstrapHonoursCancel(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	api := newFakeAPI(t, p, true)
	api.set("/readyz", response{code: 503})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := WaitBootstrapComplete(ctx, BootstrapWaitOptions{API: newTestClient(t, p, api), Interval: 1})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestClientRejectsWrongCA(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	other := newTestPKI(t)
	api := newFakeAPI(t, p, true)
	api.set("/readyz", response{body: "ok"})
	c := newTestClient(t, other, api) // trusts another CA
	assert.Error(t, c.Readyz(context.Background()))
	assert.NoError(t, newTestClient(t, p, api).Readyz(context.Background()))
}

func TestWaitInstallComplete(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	api := newFakeAPI(t, p, true)
	cv := func(avail, progressing, msg string) map[string]any {
		return map[string]any{"status": map[string]any{
			"desired":    map[string]string{"version": "4.19.10"},
			"conditions": []Condition{{Type: "Available", Status: avail}, {Type: "Failing", Status: "False"}, {Type: "Progressing", Status: progressing, Message: msg}},
		}}
	}
	api.set(ClusterVersionPath,
		response{body: cv("False", "True", "Working towards 4.19.10: 120 of 890 done (13% complete)")},
		response{body: cv("False", "True", "Working towards 4.19.10: 700 of 890 done (78% complete)")},
		response{body: cv("True", "False", "Cluster version is 4.19.10")})
	co := func(name, avail string) map[string]any {
		return map[string]any{"metadata": map[string]string{"name": name}, "status": map[string]any{"conditions": []Condition{{Type: "Available", Status: avail}}}}
	}
	api.set(ClusterOperatorPath, response{body: map[string]any{"items": []any{co("etcd", "True"), co("ingress", "False"), co("console", "False")}}})
	api.set(CSRPath, response{body: map[string]any{"items": []any{map[string]any{"metadata": map[string]string{"name": "csr-abc"}, "spec": map[string]any{"signerName": SignerKubeletClient}}}}})
	var out bytes.Buffer
	err := WaitInstallComplete(context.Background(), InstallWaitOptions{
		API: newTestClient(t, p, api), Interval: 1, Status: status.New(&out, false),
		ClusterDomain: "ocp.lab.local", KubeadminPasswordFile: "/labs/x/assets/auth/kubeadmin-password",
	})
	require.NoError(t, err, out.String())
	text := out.String()
	for _, w := range []string{
		"Waiting up to 40m0s",
		"ClusterVersion: Working towards 4.19.10: 120 of 890 done (13% complete)",
		"1 of 3 cluster operators available (waiting for ingress, console)",
		"1 CSR(s) pending: workers join only once approved: run `bootlab lab approve-csrs`",
		"ClusterVersion: Working towards 4.19.10: 700 of 890 done",
		"Install complete: ClusterVersion 4.19.10 is Available",
		"console: https://console-openshift-console.apps.ocp.lab.local",
		"log in as kubeadmin with the password in /labs/x/assets/auth/kubeadmin-password",
	} {
		assert.Contains(t, text, w)
	}
	assert.Equal(t, 1, strings.Count(text, "cluster operators available"), "unchanged facts are told once")
}

func TestWaitInstallTimeout(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	api := newFakeAPI(t, p, true)
	err := WaitInstallComplete(context.Background(), InstallWaitOptions{API: newTestClient(t, p, api), Timeout: 1, Interval: 1})
	var te *TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Contains(t, err.Error(), "install-complete")
}

// hangingNode never answers: a bootstrap VM that stopped responding
// mid-session. Each call returns only when its context ends.
type hangingNode struct {
	mu    sync.Mutex
	calls int
}

func (h *hangingNode) Run(ctx context.Context, cmd string) (string, error) {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	<-ctx.Done()
	return "", ctx.Err()
}

// A bootstrap node that stops answering over SSH cannot stall the wait:
// each command is bounded, and the cluster's own signals still end it.
func TestWaitBootstrapNotStalledByHangingSSH(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	api := newFakeAPI(t, p, true)
	api.set("/readyz", response{body: "ok"})
	api.set("/version", response{body: map[string]string{"gitVersion": "v1.32.5"}})
	api.set(BootstrapCMPath, response{body: corev1.ConfigMap{Data: map[string]string{"status": "complete"}}})
	api.set(EtcdOperatorPath, response{body: etcdOp("True")})
	boot := &hangingNode{}
	var out bytes.Buffer
	err := WaitBootstrapComplete(context.Background(), BootstrapWaitOptions{
		API: newTestClient(t, p, api), Bootstrap: cannedNode("hanging-bootstrap", boot.Run), Interval: 1, NodeTimeout: 1,
		Status: status.New(&out, false),
	})
	require.NoError(t, err, out.String())
	assert.Contains(t, out.String(), "It is now safe to remove the bootstrap resources")
	assert.GreaterOrEqual(t, boot.calls, 1, "the node was asked")
}
