//go:build integration

package approvecsr

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet/node"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
)

// approve-csr.service's stand-in against the release's real API and
// controller manager: a CSR sent before it looks is approved within a
// round and signed by the controller manager; once .bootkube.done exists
// it stops, and a CSR sent then stays Pending (someone else must approve
// it: `bootlab lab approve-csrs`).
func TestApproveCSRApprovesUntilBootkubeDone(t *testing.T) {
	t.Parallel()
	cp, _ := realControlPlane(t)
	cp.StartControllerManager(t, "--controllers=csrsigning")
	assets := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(assets, "auth"), 0o700))
	kcfg, err := os.ReadFile(cp.Files["kubeconfig"])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(assets, "auth", "kubeconfig-loopback"), kcfg, 0o600))

	sendCSR(t, cp, "first")
	// A kubelet stand-in that registered without its node-role labels
	// (upstream's NodeRestriction) asked for them; a node that asked for
	// nothing keeps its labels as they are.
	createNode(t, cp, "asks", `{"`+node.RoleLabelsAnnotation+`":"node-role.kubernetes.io/master,node-role.kubernetes.io/control-plane"}`)
	createNode(t, cp, "quiet", `{}`)
	var log testutil.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		Service{Assets: assets, Interval: 500 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))}.Run(ctx)
		close(stopped)
	}()
	require.Eventually(t, func() bool {
		out, _ := cp.Kubectl("get", "csr", "first", "-o", "jsonpath={.status.certificate}")
		return out != ""
	}, time.Minute, 500*time.Millisecond, "the controller manager signs what the stand-in approved:\n%s", log.String())
	reason, err := cp.Kubectl("get", "csr", "first", "-o", `jsonpath={.status.conditions[?(@.type=="Approved")].reason}`)
	require.NoError(t, err, reason)
	assert.Equal(t, "KubectlApprove", reason)
	assert.Contains(t, log.String(), "approve-csr.service (bootlab stand-in of approve-csr.sh): Approving all CSR requests until bootstrapping is complete...")
	assert.Contains(t, log.String(), "certificatesigningrequest.certificates.k8s.io/first approved")
	require.Eventually(t, func() bool {
		out, _ := cp.Kubectl("get", "nodes", "-l", "node-role.kubernetes.io/master,node-role.kubernetes.io/control-plane", "-o", "name")
		return strings.TrimSpace(out) == "node/asks"
	}, 30*time.Second, 200*time.Millisecond, "the stand-in sets the labels the node asked for, on it only:\n%s", log.String())
	assert.Contains(t, log.String(), "node/asks labelled with the node-role labels its kubelet asked for")
	assert.NotContains(t, log.String(), "node/quiet")

	require.NoError(t, os.WriteFile(filepath.Join(assets, ".bootkube.done"), nil, 0o644))
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatalf("the stand-in goes on after .bootkube.done:\n%s", log.String())
	}
	assert.Contains(t, log.String(), "bootstrapping is complete: stopped")
	sendCSR(t, cp, "late")
	time.Sleep(2 * time.Second)
	out, err := cp.Kubectl("get", "csr", "late", "--no-headers")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Pending", "after .bootkube.done nothing approves it")
}

// createNode registers a Node named name with the given annotations (JSON).
func createNode(t *testing.T, cp *kubetest.ControlPlane, name, annotations string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node.json")
	require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"annotations":%s}}`, name, annotations)), 0o600))
	out, err := cp.Kubectl("create", "-f", p)
	require.NoError(t, err, out)
}

// sendCSR creates a CSR for a client certificate, as a kubelet sends one.
func sendCSR(t *testing.T, cp *kubetest.ControlPlane, name string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "learner-" + name}}, key)
	require.NoError(t, err)
	req := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	p := filepath.Join(t.TempDir(), "csr.json")
	require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(`{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":%q},"spec":{"request":%q,"signerName":"kubernetes.io/kube-apiserver-client","usages":["digital signature","client auth"]}}`, name, req)), 0o600))
	out, err := cp.Kubectl("create", "-f", p)
	require.NoError(t, err, out)
	assert.True(t, strings.HasPrefix(out, "certificatesigningrequest"), out)
}

// realControlPlane starts the default release's etcd and kube-apiserver
// on loopback (built once into the run's shared cache) and returns them
// with the etcd binary.
func realControlPlane(t *testing.T, apiArgs ...string) (*kubetest.ControlPlane, string) {
	t.Helper()
	rel := kuberelease.Build(t, kuberelease.DefaultMinor)
	return kubetest.StartControlPlane(t, rel.Etcd, rel.Programs, apiArgs...), rel.Etcd
}
