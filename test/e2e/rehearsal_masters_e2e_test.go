//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/spec"
)

// assertMastersServeTheAPI is TestRehearsalLab's check after stage 14,
// once the bootstrap's kube-apiserver is gone (torn down at 13) and its
// etcd member removed: the API through the load balancer (api, with the
// installer's admin kubeconfig on the bootstrap and the release's kubectl)
// is the masters' real kube-apiservers, serving what stage 13 created
// through the bootstrap's; `lab approve-csrs` approves the masters' real
// client CSRs.
// console is a node's console log, where its agent reports.
func assertMastersServeTheAPI(t *testing.T, l labEnv, masters []spec.Node, console func(spec.Node) string) {
	t.Helper()
	kubectl := func(args string) result {
		return run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--",
			"sudo -n kubectl --kubeconfig=/opt/openshift/auth/kubeconfig "+args)
	}
	start := time.Now()
	var r result
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
		if r = kubectl("get --raw /readyz"); r.Code == 0 && strings.TrimSpace(r.Stdout) == "ok" {
			break
		}
	}
	require.Equal(t, "ok", strings.TrimSpace(r.Stdout), "the masters' kube-apiservers answer /readyz through the load balancer:\n%s", r)
	t.Logf("BENCH rehearsal handoff: the masters' API ready through the LB %.1fs after stage 14 validated", time.Since(start).Seconds())
	r = kubectl("get configmap -n kube-system bootstrap -o jsonpath={.data.status}")
	assert.Equal(t, "complete", r.Stdout, "the object stage 13 created through the bootstrap's API, read from the masters':\n%s", r)
	r = kubectl("get secret -n openshift-kube-apiserver bound-service-account-signing-key -o name")
	assert.Equal(t, "secret/bound-service-account-signing-key\n", r.Stdout, r.String())

	// The masters' kubelet stand-ins send real client CSRs once the API is
	// real; lab approve-csrs approves them. Nothing signs them after stage
	// 13 (a rehearsal lab's masters run no kube-controller-manager yet), so
	// no master registers: the test checks the approval, not Ready Nodes.
	approved := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Minute); len(approved) < len(masters) && time.Now().Before(deadline); time.Sleep(10 * time.Second) {
		a := mustRun(t, "lab", "approve-csrs", "-f", l.SpecFile, "-o", "json")
		for _, line := range strings.Split(strings.TrimSpace(a.Stdout), "\n") {
			var rev struct {
				Name        string `json:"name"`
				ApprovedNow bool   `json:"approvedNow"`
			}
			if line != "" && json.Unmarshal([]byte(line), &rev) == nil && rev.ApprovedNow {
				approved[rev.Name] = true
			}
		}
	}
	assert.Len(t, approved, len(masters), "lab approve-csrs approved one real client CSR per master")
	r = kubectl("get csr -o name")
	for name := range approved {
		assert.Contains(t, r.Stdout, "certificatesigningrequest.certificates.k8s.io/"+name, "the approved CSR is in the masters' API")
	}
	t.Logf("BENCH rehearsal CSRs: lab approve-csrs approved %d real CSRs %.1fs after stage 14", len(approved), time.Since(start).Seconds())
	for _, n := range masters {
		t.Logf("BENCH rehearsal %s: %s", n.Name, consoleCheck(t, console(n), "serve api :6443"))
	}
}

// consoleCheck is check name's state and detail in the console log at path.
func consoleCheck(t *testing.T, path, name string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rep, _ := probe.ParseConsole(f)
	if rep != nil {
		for _, c := range rep.Checks {
			if c.Name == name {
				return fmt.Sprintf("ok=%v %s", c.OK, c.Detail)
			}
		}
	}
	return "no " + name + " check"
}
