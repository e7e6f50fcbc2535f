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
// through the bootstrap's; the masters are Ready Nodes, their client CSRs
// approved by approve-csr on the bootstrap during stage 13.
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

	// The masters' kubelet stand-ins sent real client CSRs once the API was
	// real (stage 13); approve-csr's stand-in on the bootstrap approved them
	// and the bootstrap's controller manager signed them: every master is
	// a Ready Node, read from the masters' API.
	want := make([]string, 0, len(masters))
	for _, n := range masters {
		want = append(want, n.Name+"=True")
	}
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
		r = kubectl(`get nodes -l node-role.kubernetes.io/master -o 'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{" "}{end}'`)
		if strings.Join(strings.Fields(r.Stdout), " ") == strings.Join(want, " ") {
			break
		}
	}
	assert.Equal(t, strings.Join(want, " "), strings.Join(strings.Fields(r.Stdout), " "), "kubectl get nodes lists the masters Ready:\n%s", r)
	t.Logf("BENCH rehearsal nodes: %s Ready %.1fs after stage 14", strings.Join(want, " "), time.Since(start).Seconds())
	r = kubectl(`get csr -o 'jsonpath={range .items[*]}{.spec.signerName}={.status.conditions[?(@.type=="Approved")].reason}/{.status.certificate}{"\n"}{end}'`)
	clients := 0
	for _, line := range strings.Split(r.Stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "kubernetes.io/kube-apiserver-client-kubelet="); ok {
			clients++
			assert.True(t, strings.HasPrefix(rest, "KubectlApprove/") && len(rest) > len("KubectlApprove/"),
				"a master's client CSR approved by approve-csr (oc adm certificate approve's reason) and signed: %s", rest)
		}
	}
	assert.GreaterOrEqual(t, clients, len(masters), "one client CSR per master at least:\n%s", r)
	// lab approve-csrs reads the same CSRs from the masters' API: nothing
	// left pending for a master's client certificate.
	a := mustRun(t, "lab", "approve-csrs", "--all", "-f", l.SpecFile, "-o", "json")
	reviewed := 0
	for _, line := range strings.Split(strings.TrimSpace(a.Stdout), "\n") {
		var rev struct {
			Kind  string `json:"kind"`
			State string `json:"state"`
		}
		if line != "" && json.Unmarshal([]byte(line), &rev) == nil && rev.Kind == "kubelet client" {
			reviewed++
			assert.Equal(t, "Approved", rev.State, line)
		}
	}
	assert.GreaterOrEqual(t, reviewed, len(masters), "lab approve-csrs lists the masters' client CSRs:\n%s", a)
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
