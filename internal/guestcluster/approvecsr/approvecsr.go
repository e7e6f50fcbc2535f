package approvecsr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet/node"
	"github.com/bootlab/bootlab/internal/kube"
)

// Interval is approve-csr.sh's sleep between rounds.
const Interval = 20 * time.Second

// approveCSRSays starts every line the stand-in logs: it says it is one.
const approveCSRSays = "approve-csr.service (bootlab stand-in of approve-csr.sh)"

// Service is the approve-csr.service stand-in on a rehearsal bootstrap.
type Service struct {
	// Assets is /opt/openshift: auth/kubeconfig-loopback and .bootkube.done.
	Assets string
	// Interval is the pause between rounds (the package's Interval).
	Interval time.Duration
	Log      *slog.Logger
}

// Run approves every pending CSR each Interval until .bootkube.done
// exists or ctx ends. Errors (no API yet, no kubeconfig yet) are logged
// once each, as the loop goes on.
func (a Service) Run(ctx context.Context) {
	done := filepath.Join(a.Assets, ".bootkube.done")
	a.Log.Info(approveCSRSays+": Approving all CSR requests until bootstrapping is complete...", "until", done, "every", a.Interval)
	t := time.NewTicker(a.Interval)
	defer t.Stop()
	lastErr := ""
	for {
		if _, err := os.Stat(done); err == nil {
			a.Log.Info(approveCSRSays+": bootstrapping is complete: stopped", "found", done)
			return
		}
		names, labelled, err := a.round(ctx)
		for _, n := range names {
			a.Log.Info(approveCSRSays+": certificatesigningrequest.certificates.k8s.io/"+n+" approved", "csr", n)
		}
		for _, n := range labelled {
			a.Log.Info(approveCSRSays+": node/"+n+" labelled with the node-role labels its kubelet asked for "+
				"(OpenShift's kube-apiserver lets a kubelet set them itself; the upstream one of a rehearsal lab does not)", "node", n)
		}
		switch {
		case err != nil && err.Error() != lastErr:
			a.Log.Info(approveCSRSays+": no CSRs approved this round", "why", err)
			lastErr = err.Error()
		case err == nil:
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// round lists the CSRs through the loopback kubeconfig and approves the
// pending ones, then sets the node-role labels the kubelet stand-ins
// asked for, returning the CSRs approved and the nodes labelled.
func (a Service) round(ctx context.Context) (approved, labelled []string, err error) {
	cfg, err := kube.LoadKubeconfig(filepath.Join(a.Assets, "auth", "kubeconfig-loopback"))
	if err != nil {
		return nil, nil, err
	}
	c, err := kube.NewClient(cfg)
	if err != nil {
		return nil, nil, err
	}
	approved, err = approvePending(ctx, c)
	labelled, lerr := labelNodeRoles(ctx, c)
	return approved, labelled, errors.Join(err, lerr)
}

// labelNodeRoles sets, on every Node whose kubelet registered without its
// node-role labels (node.RoleLabelsAnnotation), the labels it asked for.
// It is the one duty the stand-in has that approve-csr.sh has not: on a
// real cluster the kubelet sets them itself (see the annotation).
func labelNodeRoles(ctx context.Context, c *kube.Client) ([]string, error) {
	var list corev1.NodeList
	if err := c.Do(ctx, "GET", "/api/v1/nodes", nil, &list); err != nil {
		return nil, err
	}
	var labelled []string
	var errs []error
	for _, n := range list.Items {
		missing := map[string]string{}
		for _, k := range strings.Split(n.Annotations[node.RoleLabelsAnnotation], ",") {
			if _, ok := n.Labels[k]; k != "" && !ok {
				missing[k] = ""
			}
		}
		if len(missing) == 0 {
			continue
		}
		patch := map[string]any{"metadata": map[string]any{"labels": missing}}
		if err := c.Patch(ctx, "/api/v1/nodes/"+n.Name, patch, nil); err != nil {
			errs = append(errs, fmt.Errorf("label node %s: %w", n.Name, err))
			continue
		}
		labelled = append(labelled, n.Name)
	}
	return labelled, errors.Join(errs...)
}

const csrPath = "/apis/certificates.k8s.io/v1/certificatesigningrequests"

// approvePending approves every CSR with neither an Approved nor a Denied
// condition, as `oc adm certificate approve` does.
func approvePending(ctx context.Context, c *kube.Client) ([]string, error) {
	var list certv1.CertificateSigningRequestList
	if err := c.Do(ctx, "GET", csrPath, nil, &list); err != nil {
		return nil, err
	}
	var approved []string
	var errs []error
	for _, csr := range list.Items {
		if !csrPending(csr) {
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{
			Type: certv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlApprove",
			Message:        "This CSR was approved by approve-csr.sh on the bootstrap (a bootlab stand-in in a rehearsal lab).",
			LastUpdateTime: metav1.Now(),
		})
		if err := c.Do(ctx, "PUT", csrPath+"/"+csr.Name+"/approval", &csr, nil); err != nil {
			errs = append(errs, fmt.Errorf("approve CSR %s: %w", csr.Name, err))
			continue
		}
		approved = append(approved, csr.Name)
	}
	return approved, errors.Join(errs...)
}

// csrPending says whether nobody approved or denied csr yet.
func csrPending(csr certv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certv1.CertificateApproved || c.Type == certv1.CertificateDenied || c.Type == certv1.CertificateFailed {
			return false
		}
	}
	return true
}
