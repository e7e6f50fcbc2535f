package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var labNodes = []LabNode{
	{Name: "master-0", FQDN: "master-0.ocp.lab.local", IP: "192.168.126.11"},
	{Name: "master-1", FQDN: "master-1.ocp.lab.local", IP: "192.168.126.12"},
	{Name: "worker-0", FQDN: "worker-0.ocp.lab.local", IP: "192.168.126.20"},
}

type csrSpec struct {
	name, signer, user, cn string
	org                    []string
	dns                    []string
	ips                    []string
	usages                 []certv1.KeyUsage
	approved               bool
}

func makeCSR(t *testing.T, s csrSpec) certv1.CertificateSigningRequest {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: s.cn, Organization: s.org}, DNSNames: s.dns}
	for _, ip := range s.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, k)
	require.NoError(t, err)
	c := certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: s.name},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: s.signer, Username: s.user, Usages: s.usages,
		},
	}
	if s.approved {
		c.Status.Conditions = []certv1.CertificateSigningRequestCondition{{Type: certv1.CertificateApproved, Status: corev1.ConditionTrue}}
	}
	return c
}

var (
	clientUsages  = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth}
	servingUsages = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}
	nodes         = []string{"system:nodes"}
)

func clientCSR(name, cn string) csrSpec {
	return csrSpec{name: name, signer: SignerKubeletClient, user: NodeBootstrapper, cn: cn, org: nodes, usages: clientUsages}
}

func servingCSR(name, node string, dns, ips []string) csrSpec {
	return csrSpec{name: name, signer: SignerKubeletServing, user: "system:node:" + node, cn: "system:node:" + node, org: nodes, dns: dns, ips: ips, usages: servingUsages}
}

func TestReviewCSR(t *testing.T) {
	t.Parallel()
	evil := clientCSR("c-evil-user", "system:node:master-0")
	evil.user = "system:serviceaccount:default:builder"
	badUsage := clientCSR("c-usage", "system:node:master-0")
	badUsage.usages = []certv1.KeyUsage{certv1.UsageServerAuth}
	clientSAN := clientCSR("c-san", "system:node:master-0")
	clientSAN.dns = []string{"master-0"}
	other := csrSpec{name: "o-1", signer: "kubernetes.io/kube-apiserver-client", user: "alice", cn: "alice", usages: clientUsages}
	mismatch := servingCSR("s-mismatch", "worker-0", []string{"worker-0"}, nil)
	mismatch.cn = "system:node:master-0"
	noOrg := clientCSR("c-org", "system:node:master-0")
	noOrg.org = nil
	cases := []struct {
		spec    csrSpec
		approve bool
		kind    string
		reason  string
	}{
		{clientCSR("c-ok", "system:node:master-0"), true, KindClient, "node master-0 joining through the node-bootstrapper"},
		{clientCSR("c-fqdn", "system:node:master-1.ocp.lab.local"), true, KindClient, "node master-1"},
		{clientCSR("c-unknown", "system:node:intruder"), false, KindClient, `"intruder" is not a node of this lab`},
		{clientCSR("c-bootstrap", "system:node:bootstrap"), false, KindClient, "not a node of this lab"},
		{clientCSR("c-cn", "admin"), false, KindClient, `subject "admin" is not system:node:<name>`},
		{evil, false, KindClient, "must come from system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"},
		{badUsage, false, KindClient, "not those of a client certificate"},
		{clientSAN, false, KindClient, "carries no SANs"},
		{noOrg, false, KindClient, "is not [system:nodes]"},
		{servingCSR("s-ok", "worker-0", []string{"worker-0", "worker-0.ocp.lab.local"}, []string{"192.168.126.20"}), true, KindServing, "node worker-0's serving certificate"},
		{servingCSR("s-extra-dns", "worker-0", []string{"worker-0", "evil.example.com"}, nil), false, KindServing, `DNS name "evil.example.com" is not node worker-0's`},
		{servingCSR("s-other-ip", "worker-0", []string{"worker-0"}, []string{"192.168.126.11"}), false, KindServing, "IP address 192.168.126.11 is not node worker-0's"},
		{servingCSR("s-other-node-dns", "worker-0", []string{"master-0"}, nil), false, KindServing, `DNS name "master-0"`},
		{servingCSR("s-unknown", "intruder", []string{"intruder"}, nil), false, KindServing, "not a node of this lab"},
		{mismatch, false, KindServing, "is not the requesting node"},
		{other, false, KindOther, "is not a kubelet signer"},
	}
	for _, c := range cases {
		t.Run(c.spec.name, func(t *testing.T) {
			r := ReviewCSR(makeCSR(t, c.spec), labNodes)
			assert.Equal(t, "Pending", r.State)
			assert.Equal(t, c.approve, r.Approve, r.Reason)
			assert.Equal(t, c.kind, r.Kind)
			assert.Contains(t, r.Reason, c.reason)
			if !c.approve {
				assert.Contains(t, r.Reason, "refused: ")
			}
			assert.NotEmpty(t, Explain(r.Kind))
		})
	}
	done := clientCSR("c-done", "system:node:master-0")
	done.approved = true
	r := ReviewCSR(makeCSR(t, done), labNodes)
	assert.Equal(t, "Approved", r.State)
	assert.False(t, r.Approve)
}

func TestReviewAndApproveAgainstAPI(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	api := newFakeAPI(t, p, true)
	done := clientCSR("csr-old", "system:node:master-0")
	done.approved = true
	list := certv1.CertificateSigningRequestList{Items: []certv1.CertificateSigningRequest{
		makeCSR(t, clientCSR("csr-m1", "system:node:master-1")),
		makeCSR(t, clientCSR("csr-intruder", "system:node:intruder")),
		makeCSR(t, servingCSR("csr-w0", "worker-0", []string{"worker-0"}, []string{"192.168.126.20"})),
		makeCSR(t, done),
	}}
	api.set(CSRPath, response{body: list})
	c := newTestClient(t, p, api)

	reviews, err := ReviewAndApprove(context.Background(), c, labNodes, true, nil)
	require.NoError(t, err)
	require.Len(t, reviews, 4)
	assert.Equal(t, 0, api.putCount(), "a dry run approves nothing")

	reviews, err = ReviewAndApprove(context.Background(), c, labNodes, false, nil)
	require.NoError(t, err)
	approved := map[string]bool{}
	for _, r := range reviews {
		approved[r.Name] = r.Approved
	}
	assert.Equal(t, map[string]bool{"csr-m1": true, "csr-intruder": false, "csr-w0": true, "csr-old": false}, approved)
	assert.Equal(t, 2, api.putCount())
	body := api.puts[CSRPath+"/csr-m1/approval"]
	require.NotEmpty(t, body, "approval goes through the approval subresource")
	var sent certv1.CertificateSigningRequest
	require.NoError(t, json.Unmarshal(body, &sent))
	require.Len(t, sent.Status.Conditions, 1)
	assert.Equal(t, certv1.CertificateApproved, sent.Status.Conditions[0].Type)
	assert.Equal(t, corev1.ConditionTrue, sent.Status.Conditions[0].Status)
	assert.Contains(t, sent.Status.Conditions[0].Message, "bootlab lab approve-csrs")
	assert.Empty(t, api.puts[CSRPath+"/csr-intruder/approval"])
}

func TestLoadKubeconfigErrors(t *testing.T) {
	t.Parallel()
	_, err := LoadKubeconfig("/nonexistent/auth/kubeconfig")
	assert.ErrorContains(t, err, "bootlab lab up")
}
