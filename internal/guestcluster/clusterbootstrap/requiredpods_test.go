package clusterbootstrap

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/pki"
)

// In an HA cluster cluster-bootstrap waits for the control plane on 2
// masters, not 3; a smaller one waits for every master.
func TestMastersNeeded(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 5: 2} {
		assert.Equal(t, want, mastersNeeded(n), "%d masters", n)
	}
}

// Of three masters, two serving their own kube-apiserver and joined as
// Ready Nodes end the wait for them, while the third still starts; one
// serving does not.
func TestRehearsalWaitEndsOnTwoOfThreeMasters(t *testing.T) {
	t.Parallel()
	readyz := func(ok bool) *httptest.Server {
		s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if !ok {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, "[+]ping ok\n[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\nreadyz check failed")
				return
			}
			fmt.Fprint(w, "ok")
		}))
		t.Cleanup(s.Close)
		return s
	}
	var readyNodes atomic.Int32
	readyNodes.Store(3)
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/api/v1/nodes", r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		items := make([]string, readyNodes.Load())
		for i := range items {
			items[i] = `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`
		}
		fmt.Fprintf(w, `{"items":[%s]}`, strings.Join(items, ","))
	}))
	defer api.Close()
	ca, err := pki.NewCA("test")
	require.NoError(t, err)
	cl, err := pki.NewClient(ca, "admin", nil)
	require.NoError(t, err)
	c, err := kube.NewClient(kube.Config{Server: api.URL, CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}),
		CertPEM: cl.CertPEM, KeyPEM: cl.KeyPEM})
	require.NoError(t, err)
	client := kube.NewProbe(5 * time.Second)
	st := map[requiredPod]podStatus{{"openshift-kube-apiserver", "kube-apiserver"}: podReady}

	masters := map[string]string{"master-0": readyz(false).URL, "master-1": readyz(true).URL, "master-2": readyz(false).URL}
	why, progress := rehearsalWhyNotRun(context.Background(), c, client, st, masters, 3, map[string]bool{})
	assert.Empty(t, why, "one master of three serves: the wait holds")
	assert.Contains(t, progress, "master-0 not ready (500 Internal Server Error: [-]poststarthook/rbac/bootstrap-roles failed: reason withheld)")
	assert.Contains(t, progress, "master-1 its own kube-apiserver")
	assert.Contains(t, progress, "waiting for 2 of 3")

	masters["master-2"] = readyz(true).URL
	why, _ = rehearsalWhyNotRun(context.Background(), c, client, st, masters, 3, map[string]bool{})
	assert.NotEmpty(t, why, "two masters of three serve and joined: the wait ends, master-0 catches up")

	readyNodes.Store(1)
	why, progress = rehearsalWhyNotRun(context.Background(), c, client, st, masters, 3, map[string]bool{})
	assert.Empty(t, why, "two serve but only one joined as a Ready Node: the wait holds")
	assert.Contains(t, progress, "1 of 3 masters joined as Ready Nodes")

	// The masters join the bootstrap's etcd one by one, maybe after
	// stage 13 began: none joined yet holds the wait (it used to fail the
	// stage), and the first to join, serving and Ready, does not end it
	// for a cluster of three (it used to: need was counted of the masters
	// joined so far).
	why, progress = rehearsalWhyNotRun(context.Background(), c, client, st, map[string]string{}, 3, map[string]bool{})
	assert.Empty(t, why, "no master joined yet: the wait holds")
	assert.Contains(t, progress, "0 of 3 joined the bootstrap's etcd")
	assert.Contains(t, progress, "waiting for 2 of 3")
	why, progress = rehearsalWhyNotRun(context.Background(), c, client, st, map[string]string{"master-1": readyz(true).URL}, 3, map[string]bool{})
	assert.Empty(t, why, "one master of three joined, serves and is Ready: the wait holds")
	assert.Contains(t, progress, "master-1 its own kube-apiserver, 1 of 3 joined the bootstrap's etcd")
	why, progress = rehearsalWhyNotRun(context.Background(), c, client, st, map[string]string{}, 0, map[string]bool{})
	assert.Empty(t, why, "nothing known of the masters: the wait holds")
	assert.Equal(t, "no master has joined the bootstrap's etcd (each joins once it has its config, which stage 12 serves)", progress)
}

// cluster-bootstrap's required pods a rehearsal lab's masters run (the
// wait holds for them) and those it does not (the wait says so).
func TestMastersRunTheirControlPlanePods(t *testing.T) {
	t.Parallel()
	rs, err := parseRequiredPods("openshift-kube-apiserver/kube-apiserver,openshift-kube-scheduler/openshift-kube-scheduler," +
		"openshift-kube-controller-manager/kube-controller-manager,openshift-cluster-version/cluster-version-operator")
	require.NoError(t, err)
	got := map[string]bool{}
	for _, r := range rs {
		got[r.String()] = mastersRun(r)
	}
	assert.Equal(t, map[string]bool{"openshift-kube-apiserver/kube-apiserver": true, "openshift-kube-scheduler/openshift-kube-scheduler": true,
		"openshift-kube-controller-manager/kube-controller-manager": true, "openshift-cluster-version/cluster-version-operator": false}, got)
}
