//go:build e2e

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/spec"
)

// assertMastersServeTheAPI is rehearseLab's check after stage 14,
// once the bootstrap's kube-apiserver is gone (torn down at 13) and its
// etcd member removed: the API through the load balancer (api, with the
// installer's admin kubeconfig on the bootstrap and the release's kubectl)
// is the masters' real kube-apiservers, serving what stage 13 created
// through the bootstrap's; the masters are Ready Nodes, their client CSRs
// approved by approve-csr on the bootstrap during stage 13.
// console is a node's console log, where its agent reports. It returns
// the check of a CSR it sent after the handoff (see
// sendCSRAfterTheHandoff), for the caller to run later.
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
	r = kubectl("get event -n kube-system bootstrap-success -o jsonpath={.message}")
	assert.Equal(t, "Required control plane pods have been created", r.Stdout, "the event stage 13 sent through the bootstrap's API, read from the masters':\n%s", r)
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
	assertMastersRunTheirControlPlane(t, kubectl, masters)
	sendCSRAfterTheHandoff(t, l, kubectl, masters[0].Name)
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
	rep, _ := wire.ParseConsole(f)
	if rep != nil {
		for _, c := range rep.Checks {
			if c.Name == name {
				return fmt.Sprintf("ok=%v %s", c.OK, c.Detail)
			}
		}
	}
	return "no " + name + " check"
}

// assertMastersRunTheirControlPlane: each master's installer stand-ins
// wrote its kube-controller-manager and kube-scheduler pods, its kubelet
// stand-in runs them and publishes their mirror pods, Running. Stage 13
// waited for 2 masters of 3, as upstream: the last may still be starting
// (its kube-apiserver first, under TCG minutes), so this waits longer.
func assertMastersRunTheirControlPlane(t *testing.T, kubectl func(string) result, masters []spec.Node) {
	t.Helper()
	for _, p := range []struct{ ns, name string }{
		{"openshift-kube-apiserver", "kube-apiserver"},
		{"openshift-kube-controller-manager", "kube-controller-manager"},
		{"openshift-kube-scheduler", "openshift-kube-scheduler"},
	} {
		want := make([]string, 0, len(masters))
		for _, n := range masters {
			want = append(want, p.name+"-"+n.Name+"=Running")
		}
		var r result
		for deadline := time.Now().Add(8 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
			r = kubectl("get pods -n " + p.ns + ` -o 'jsonpath={range .items[*]}{.metadata.name}={.status.phase}{" "}{end}'`)
			if strings.Join(strings.Fields(r.Stdout), " ") == strings.Join(want, " ") {
				break
			}
		}
		assert.Equal(t, strings.Join(want, " "), strings.Join(strings.Fields(r.Stdout), " "), "the masters' %s mirror pods:\n%s", p.name, r)
	}
}

// sendCSRAfterTheHandoff: after stage 14 approve-csr has stopped and the
// bootstrap's controller manager is gone. A kubelet client CSR sent now
// (as a kubelet that lost its certificate does, with the
// node-bootstrapper's kubeconfig) stays Pending until `bootlab lab
// approve-csrs` approves it, and then the masters' own controller manager
// signs it, within a minute: with OpenShift's leader election (15 s lease,
// 3 s retry) a master's holds the lease well before (issue 54; with the
// 137 s lease it was 173 s).
func sendCSRAfterTheHandoff(t *testing.T, l labEnv, kubectl func(string) result, nodeName string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}}, key)
	require.NoError(t, err)
	req := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	doc := fmt.Sprintf(`{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"bootlab-e2e-after-handoff"},`+
		`"spec":{"request":%q,"signerName":"kubernetes.io/kube-apiserver-client-kubelet","usages":["digital signature","client auth"]}}`, req)
	mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--",
		"sudo -n kubectl --kubeconfig=/opt/openshift/auth/kubeconfig-kubelet create -f - <<'EOF'\n"+doc+"\nEOF")
	r := kubectl("get csr bootlab-e2e-after-handoff -o jsonpath={.status.conditions}")
	assert.Empty(t, r.Stdout, "nobody approves it by itself after stage 14:\n%s", r)
	a := mustRun(t, "lab", "approve-csrs", "-f", l.SpecFile, "-o", "json")
	assert.Contains(t, a.Stdout, "bootlab-e2e-after-handoff", "lab approve-csrs reviews the new CSR:\n%s", a)
	csrSignedBy(t, kubectl, nodeName, time.Now())
}

// csrSignedBy waits a minute for the certificate of the CSR
// sendCSRAfterTheHandoff sent (approved at start) and checks who signed it.
func csrSignedBy(t *testing.T, kubectl func(string) result, nodeName string, start time.Time) {
	t.Helper()
	var r result
	for deadline := start.Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		if r = kubectl("get csr bootlab-e2e-after-handoff -o jsonpath={.status.certificate}"); r.Stdout != "" {
			break
		}
	}
	require.NotEmpty(t, r.Stdout, "the masters' kube-controller-manager signs what lab approve-csrs approved within a minute (OpenShift's 15 s lease):\n%s", r)
	t.Logf("BENCH rehearsal CSR after the handoff: approved by lab approve-csrs, signed by a master's controller manager %.1fs later", time.Since(start).Seconds())
	b, _ := pem.Decode([]byte(mustDecodeB64(t, r.Stdout)))
	require.NotNil(t, b, "a PEM certificate")
	cert, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	assert.Equal(t, "system:node:"+nodeName, cert.Subject.CommonName)
	assert.Equal(t, "kubelet-signer", cert.Issuer.CommonName, "signed with the csr-signer the masters' installer copied")
}

func mustDecodeB64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	require.NoError(t, err)
	return string(b)
}
