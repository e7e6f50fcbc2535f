package node

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootlab/bootlab/internal/agent/endpoints"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/lab/cluster"
)

func TestNewChecksTheConfig(t *testing.T) {
	t.Parallel()
	ok := Config{Name: "master-0", BootstrapKubeconfig: "/etc/kubernetes/kubeconfig", Kubeconfig: "/var/lib/kubelet/kubeconfig",
		CertDir: "/var/lib/kubelet/pki", KubeletVersion: "v1.32.13"}
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"no name":      {func(c *Config) { c.Name = "" }, "no node name"},
		"no bootstrap": {func(c *Config) { c.BootstrapKubeconfig = "" }, "bootstrap kubeconfig"},
		"no cert dir":  {func(c *Config) { c.CertDir = "" }, "certificate directory"},
		"no version":   {func(c *Config) { c.KubeletVersion = "" }, "kubelet version"},
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			_, err := New(slog.New(slog.DiscardHandler), c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	n, err := New(slog.New(slog.DiscardHandler), ok)
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, n.cfg.Heartbeat, "the kubelet's status frequency by default")
}

// Only the container that runs is shown running; a pod with one that
// does not is not Ready, and one whose container never ran stays Pending.
func TestStaticStatusShowsOnlyWhatRuns(t *testing.T) {
	t.Parallel()
	n := &Node{cfg: Config{Name: "master-0", Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.126.11"}}}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "openshift-etcd"}, Spec: corev1.PodSpec{HostNetwork: true,
		Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}, {Name: "etcd-metrics", Image: "etcd"}}}}
	for name, tc := range map[string]struct {
		sp          StaticPod
		phase       corev1.PodPhase
		running     []bool
		ready       corev1.ConditionStatus
		waitingSays string
	}{
		"one of two runs": {StaticPod{Pod: pod, Container: "etcd", Running: true}, corev1.PodRunning, []bool{true, false}, corev1.ConditionFalse, "one container a pod (etcd)"},
		"none runs":       {StaticPod{Pod: pod, Detail: "not run: no program"}, corev1.PodPending, []bool{false, false}, corev1.ConditionFalse, "no program"},
		"exited":          {StaticPod{Pod: pod, Container: "etcd", Detail: "exited: exit status 1"}, corev1.PodPending, []bool{false, false}, corev1.ConditionFalse, "exit status 1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := n.staticStatus(tc.sp)
			assert.Equal(t, tc.phase, st.Phase)
			assert.Equal(t, "192.168.126.11", st.PodIP, "host network: the node's address")
			require.Len(t, st.ContainerStatuses, 2)
			for i, cs := range st.ContainerStatuses {
				assert.Equal(t, tc.running[i], cs.State.Running != nil, cs.Name)
				if !tc.running[i] {
					assert.Equal(t, NotRunReason, cs.State.Waiting.Reason)
					assert.Contains(t, cs.State.Waiting.Message, tc.waitingSays)
				}
			}
			for _, c := range st.Conditions {
				if c.Type == corev1.PodReady {
					assert.Equal(t, tc.ready, c.Status)
				}
			}
		})
	}
}

// The probe lab's API stand-in answers /readyz but serves no CSRs: a node
// does not try to join it.
func TestRealAPIRefusesTheStandIn(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(endpoints.APIHealth("bootstrap"))
	defer srv.Close()
	ca, err := pki.NewCA("test")
	require.NoError(t, err)
	client, err := pki.NewClient(ca, cluster.NodeBootstrapper, nil)
	require.NoError(t, err)
	b64 := base64.StdEncoding.EncodeToString
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %s, certificate-authority-data: %s}}]
users: [{name: u, user: {client-certificate-data: %s, client-key-data: %s}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, srv.URL, b64(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})), b64(client.CertPEM), b64(client.KeyPEM))), 0o600))
	n, err := New(slog.New(slog.DiscardHandler), Config{Name: "master-0", BootstrapKubeconfig: kc, Kubeconfig: kc + ".node",
		CertDir: t.TempDir(), KubeletVersion: "v1.32.13"})
	require.NoError(t, err)
	err = n.RealAPI(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "serves no certificates.k8s.io/v1")
}
