//go:build integration

package clusterbootstrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
)

func TestMain(m *testing.M) {
	os.Exit(kubetest.RunWithSharedCache(m))
}

// realControlPlane starts the default release's etcd and kube-apiserver
// on loopback (built once into the run's shared cache).
func realControlPlane(t *testing.T, apiArgs ...string) *kubetest.ControlPlane {
	t.Helper()
	rel := kuberelease.Build(t, kuberelease.DefaultMinor)
	return kubetest.StartControlPlane(t, rel.Etcd, rel.Programs, apiArgs...)
}

// startNode lays out a bootstrap's /opt/openshift and /etc/kubernetes for
// cp: the loopback kubeconfig, a pod to land, an install-config of
// replicas masters, the manifests given and the release version.
func startNode(t *testing.T, cp *kubetest.ControlPlane, version string, replicas int, manifests map[string]string) (*Start, string, string) {
	t.Helper()
	assets, kube := t.TempDir(), t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(assets, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o600))
	}
	kcfg, err := os.ReadFile(cp.Files["kubeconfig"])
	require.NoError(t, err)
	write("auth/kubeconfig-loopback", string(kcfg))
	write("tls/root-ca.crt", "ca")
	write("bootstrap-manifests/kube-apiserver-pod.yaml", "kind: Pod\n")
	write("manifests/cluster-config.yaml", fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-config-v1, namespace: kube-system}\ndata:\n  install-config: |\n    controlPlane: {name: master, replicas: %d}\n", replicas))
	for f, data := range manifests {
		write("manifests/"+f, data)
	}
	write("release.json", fmt.Sprintf(`{"version":%q}`, version))
	require.NoError(t, os.MkdirAll(filepath.Join(kube, "manifests"), 0o755))
	s := New()
	s.ReleasePath, s.APIURL = filepath.Join(assets, "release.json"), "https://127.0.0.1:"+cp.APIPort+"/readyz"
	s.PodsPoll, s.HAPoll, s.APIWait, s.PodsWait, s.HAWait, s.AssetsWait = 200*time.Millisecond, 200*time.Millisecond, time.Minute, 2*time.Minute, 2*time.Minute, 2*time.Minute
	return s, assets, kube
}

// cluster-bootstrap start through the release's real kube-apiserver, as
// release-4.18 runs it on three masters: the API wait ends on /readyz's
// answer; the manifests are created in the background in lexical order
// (the KubeAPIServer sorts before its CRD and is created once discovery
// serves it) while the required pods are waited for; once the masters'
// mirror pods are Ready it waits for a current revision on two nodes of
// each control-plane operator, which the installer stand-ins write; then
// the 30 s delay, bootstrap-success, the rest of the assets,
// bootstrap-finished and only then the teardown. The same on 4.16 waits
// for two master Nodes instead, and tears down before bootstrap-finished.
func TestStartThroughARealAPI(t *testing.T) {
	t.Parallel()
	cp := realControlPlane(t)
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := cp.Kubectl(args...)
		require.NoError(t, err, out)
		return out
	}
	apply := func(doc string) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "obj.json")
		require.NoError(t, os.WriteFile(p, []byte(doc), 0o600))
		kubectl("create", "-f", p)
	}
	const required = "openshift-kube-apiserver/kube-apiserver,openshift-cluster-version/cluster-version-operator"
	s, assets, kube := startNode(t, cp, "4.18.1", 3, map[string]string{
		"000-kube-apiserver-operator-config.yaml": "apiVersion: operator.openshift.io/v1\nkind: KubeAPIServer\nmetadata: {name: cluster}\nspec: {managementState: Managed}\n",
		"0000_00_namespace.yaml":                  "apiVersion: v1\nkind: Namespace\nmetadata: {name: openshift-kube-apiserver}\n",
	})
	var delays []time.Duration
	s.sleep = func(d time.Duration) { delays = append(delays, d) }
	// The master's mirror pod, Ready, as its kubelet stand-in publishes it.
	apply(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"openshift-kube-apiserver"}}`)
	apply(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"kube-apiserver-master-0","namespace":"openshift-kube-apiserver","annotations":{"kubernetes.io/config.mirror":"mirror"}},"spec":{"nodeName":"master-0","containers":[{"name":"kube-apiserver","image":"hk"}]}}`)
	kubectl("patch", "pod", "-n", "openshift-kube-apiserver", "kube-apiserver-master-0", "--subresource=status", "--type=merge", "-p",
		`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`)

	var out testutil.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- s.Run(assets, kube, required, &out, &out) }()
	kubetest.WaitFor(t, 2*time.Minute, "the revisions wait", cp.API, func() (string, bool) {
		return out.String(), strings.Contains(out.String(), "polling will continue, last status: NodeStatuses for kubeapiservers/cluster is empty")
	})
	// What the masters' installer stand-ins write once their pods run.
	for _, r := range []string{"kubeapiservers", "kubeschedulers", "kubecontrollermanagers"} {
		if r != "kubeapiservers" {
			apply(`{"apiVersion":"operator.openshift.io/v1","kind":"` + map[string]string{"kubeschedulers": "KubeScheduler", "kubecontrollermanagers": "KubeControllerManager"}[r] + `","metadata":{"name":"cluster"},"spec":{"managementState":"Managed"}}`)
		}
		kubectl("patch", r, "cluster", "--subresource=status", "--type=merge", "-p",
			`{"status":{"nodeStatuses":[{"nodeName":"master-0","currentRevision":1},{"nodeName":"master-1","currentRevision":1},{"nodeName":"master-2","currentRevision":0,"targetRevision":1}]}}`)
	}
	require.NoError(t, <-done, out.String())
	text := out.String()
	at := 0
	for _, want := range []string{
		"Starting temporary bootstrap control plane...",
		"Waiting up to 1m0s for the Kubernetes API",
		"API is up",
		"\tPod Status:openshift-kube-apiserver/kube-apiserver\tReady",
		"Waiting for self hosted control plane to be available",
		"Waiting up to 2m0s for condition: API should be available on at least two master nodes",
		`condition "API should be available on at least two master nodes" has been satisfied, reason: kubeapiservers/cluster NodeStatuses: [master-0 at Current: 1, Target: 0] [master-1 at Current: 1, Target: 0] [master-2 at Current: 0, Target: 1]`,
		`condition "kcm should be available on at least two master nodes" has been satisfied`,
		"Waiting 30s to give load-balancers time to observe the self-hosted control-plane",
		"Sending bootstrap-success event.",
		"Waiting for remaining assets to be created.",
		"Sending bootstrap-finished event.",
		"Tearing down temporary bootstrap control plane...",
	} {
		i := strings.Index(text[at:], want)
		require.GreaterOrEqual(t, i, 0, "%q after byte %d of:\n%s", want, at, text)
		at += i + len(want)
	}
	// The create ran beside the waits: the KubeAPIServer, sorted before its
	// CRD, failed its first round and was created in a later one.
	assert.Contains(t, text, `"000-kube-apiserver-operator-config.yaml": the API does not serve operator.openshift.io/v1 (kind KubeAPIServer) yet`)
	assert.Contains(t, text, `Created "000-kube-apiserver-operator-config.yaml" kubeapiservers.v1.operator.openshift.io/cluster`)
	assert.Contains(t, text, "not run in a rehearsal lab (its masters' kubelet stand-ins run only their kube-apiserver, controller manager and scheduler): openshift-cluster-version/cluster-version-operator (DoesNotExist)")
	assert.Equal(t, []time.Duration{30 * time.Second}, delays)
	for _, ev := range []string{"bootstrap-success", "bootstrap-finished"} {
		assert.Equal(t, "Required control plane pods have been created", kubectl("get", "event", "-n", "kube-system", ev, "-o", "jsonpath={.message}"), ev)
	}
	assert.Equal(t, "Managed", kubectl("get", "kubeapiserver", "cluster", "-o", "jsonpath={.spec.managementState}"))
	assert.NoFileExists(t, filepath.Join(kube, "manifests", "kube-apiserver-pod.yaml"), "torn down")
	assert.NoDirExists(t, filepath.Join(kube, "bootstrap-secrets"), "torn down")

	// 4.16 on the same API: two master Nodes, no delay, teardown first.
	s, assets, kube = startNode(t, cp, "4.16.3", 3, nil)
	delays = nil
	s.sleep = func(d time.Duration) { delays = append(delays, d) }
	var out2 testutil.SyncBuffer
	go func() { done <- s.Run(assets, kube, required, &out2, &out2) }()
	kubetest.WaitFor(t, 2*time.Minute, "the master Nodes wait", cp.API, func() (string, bool) {
		return out2.String(), strings.Contains(out2.String(), "\t0 masters joined the cluster")
	})
	for _, n := range []string{"master-0", "master-1"} {
		apply(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + n + `","labels":{"node-role.kubernetes.io/master":""}}}`)
	}
	require.NoError(t, <-done, out2.String())
	text, at = out2.String(), 0
	for _, want := range []string{
		"Waiting for 2 masters to join",
		"\tMaster master-0 joined the cluster",
		"\t2 masters joined the cluster",
		"Sending bootstrap-success event.",
		"Tearing down temporary bootstrap control plane...",
		"Sending bootstrap-finished event.",
	} {
		i := strings.Index(text[at:], want)
		require.GreaterOrEqual(t, i, 0, "%q after byte %d of:\n%s", want, at, text)
		at += i + len(want)
	}
	assert.Empty(t, delays, "no load-balancer delay before 4.18")
	assert.NotContains(t, text, "Waiting for self hosted control plane")
}

// With one master, no release gates: 4.19 goes from the required pods
// straight to bootstrap-success, with no delay.
func TestStartOnOneMasterHasNoGate(t *testing.T) {
	t.Parallel()
	cp := realControlPlane(t)
	s, assets, kube := startNode(t, cp, "4.19.10", 1, nil)
	var delays []time.Duration
	s.sleep = func(d time.Duration) { delays = append(delays, d) }
	var out testutil.SyncBuffer
	require.NoError(t, s.Run(assets, kube, "", &out, &out), out.String())
	assert.Contains(t, out.String(), "Sending bootstrap-finished event.")
	assert.NotContains(t, out.String(), "Waiting for self hosted control plane")
	assert.NotContains(t, out.String(), "masters to join")
	assert.Empty(t, delays)
}
