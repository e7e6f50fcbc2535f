//go:build integration

package clusterbootstrap

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cluster-bootstrap's required-pods wait, through the release's real
// kube-apiserver: while a master's own kube-apiserver answers but it has
// not joined as a Node it waits; once it joined and publishes a mirror pod that is not
// Ready yet, it waits for it, then says which pods are not run in a
// rehearsal lab and does not block; with every required pod Ready it
// says they started.
func TestRequiredPodsWaitThroughARealAPI(t *testing.T) {
	t.Parallel()
	cp, _ := realControlPlane(t)
	assets := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(assets, "auth"), 0o700))
	kcfg, err := os.ReadFile(cp.Files["kubeconfig"])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(assets, "auth", "kubeconfig-loopback"), kcfg, 0o600))
	master := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	defer master.Close()
	tl := New()
	tl.MastersWait, tl.BootstrapPoll = 2*time.Minute, 500*time.Millisecond
	masters := map[string]string{"master-0": master.URL + "/readyz"}
	required, err := parseRequiredPods("openshift-kube-apiserver/kube-apiserver,openshift-cluster-version/cluster-version-operator")
	require.NoError(t, err)
	waitErr := func() (string, error) {
		var out bytes.Buffer
		say := func(format string, a ...any) { fmt.Fprintf(&out, format+"\n", a...) }
		err := tl.waitRequiredPods(assets, required, func(context.Context) (map[string]string, int) { return masters, len(masters) }, say)
		return out.String(), err
	}
	wait := func() string {
		t.Helper()
		out, err := waitErr()
		require.NoError(t, err, out)
		return out
	}

	// Its own kube-apiserver answers but it has not joined as a Node: the
	// wait holds, as upstream's (approve-csr and the controller manager
	// let it join), here until its short deadline.
	tl.MastersWait = 3 * time.Second
	out, err := waitErr()
	require.Error(t, err, out)
	assert.Contains(t, out, "\tPod Status:openshift-kube-apiserver/kube-apiserver\tDoesNotExist")
	assert.Contains(t, out, "Waiting for the masters: master-0 its own kube-apiserver; 0 of 1 masters joined as Ready Nodes")
	assert.NotContains(t, out, "Not waiting")

	kubectl := func(args ...string) {
		t.Helper()
		got, err := cp.Kubectl(args...)
		require.NoError(t, err, got)
	}
	apply := func(doc string) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "obj.json")
		require.NoError(t, os.WriteFile(p, []byte(doc), 0o600))
		kubectl("create", "-f", p)
	}
	// A Ready Node without its node-role label (registered under
	// upstream's NodeRestriction, approve-csr's stand-in not yet round)
	// is not a master yet: the wait holds.
	apply(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"master-0"}}`)
	kubectl("patch", "node", "master-0", "--subresource=status", "--type=merge", "-p", `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"stand-in","lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
	out, err = waitErr()
	require.Error(t, err, out)
	assert.Contains(t, out, "Waiting for the masters: master-0 its own kube-apiserver; 0 of 1 masters joined as Ready Nodes")
	kubectl("label", "node", "master-0", "node-role.kubernetes.io/master=")
	tl.MastersWait = 2 * time.Minute

	// master-0 joins and publishes its kube-apiserver mirror pod, Running
	// but not Ready: the wait holds until it is Ready.
	for _, ns := range []string{"openshift-kube-apiserver", "openshift-cluster-version"} {
		apply(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`)
	}
	apply(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"kube-apiserver-master-0","namespace":"openshift-kube-apiserver","annotations":{"kubernetes.io/config.mirror":"mirror"}},"spec":{"nodeName":"master-0","containers":[{"name":"kube-apiserver","image":"hk"}]}}`)
	status := func(ready string) {
		kubectl("patch", "pod", "-n", "openshift-kube-apiserver", "kube-apiserver-master-0", "--subresource=status", "--type=merge", "-p",
			`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"`+ready+`"}]}}`)
	}
	status("False")
	go func() {
		time.Sleep(3 * time.Second)
		status("True")
	}()
	start := time.Now()
	out = wait()
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "it waited for the mirror pod to be Ready:\n%s", out)
	assert.Contains(t, out, "\tPod Status:openshift-kube-apiserver/kube-apiserver\tRunningNotReady")
	assert.Contains(t, out, "\tPod Status:openshift-kube-apiserver/kube-apiserver\tReady")
	assert.Contains(t, out, "Not waiting for required pods not run in a rehearsal lab: openshift-cluster-version/cluster-version-operator (DoesNotExist): 1 masters joined as Nodes")

	required = required[:1]
	out = wait()
	assert.Contains(t, out, "All self-hosted control plane components successfully started")
	assert.False(t, strings.Contains(out, "Not waiting"), out)
}

func TestParseRequiredPods(t *testing.T) {
	t.Parallel()
	got, err := parseRequiredPods("a/b, c/d,")
	require.NoError(t, err)
	assert.Equal(t, []requiredPod{{"a", "b"}, {"c", "d"}}, got)
	_, err = parseRequiredPods("a/b,nope")
	assert.ErrorContains(t, err, `--required-pods: "nope" is not namespace/name-prefix`)
}
