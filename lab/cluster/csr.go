package cluster

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Signers and the requestor of node client CSRs.
const (
	SignerKubeletClient  = "kubernetes.io/kube-apiserver-client-kubelet"
	SignerKubeletServing = "kubernetes.io/kubelet-serving"
	NodeBootstrapper     = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
	nodeUserPrefix       = "system:node:"
	nodesGroup           = "system:nodes"
)

// CSR kinds, in the words `approve-csrs` prints.
const (
	KindClient  = "kubelet client"
	KindServing = "kubelet serving"
	KindOther   = "other"
)

// LabNode is one node CSRs may name: its node name may be the short name or
// the FQDN, depending on what DHCP or reverse DNS gave RHCOS as hostname.
type LabNode struct {
	Name, FQDN, IP string
}

// CSRReview is what bootlab makes of one CSR.
type CSRReview struct {
	Name      string    `json:"name"`
	Created   time.Time `json:"created"`
	Requestor string    `json:"requestor"`
	Signer    string    `json:"signer"`
	Kind      string    `json:"kind"`
	Subject   string    `json:"subject,omitempty"`
	DNSNames  []string  `json:"dnsNames,omitempty"`
	IPs       []string  `json:"ips,omitempty"`
	// State is Pending, Approved, Denied or Failed.
	State string `json:"state"`
	// Node is the lab node the CSR is for, when it names one.
	Node string `json:"node,omitempty"`
	// Approve is bootlab's decision for a pending CSR; Reason says why
	// (or why not), in a sentence.
	Approve  bool   `json:"approve"`
	Reason   string `json:"reason"`
	Approved bool   `json:"approvedNow,omitempty"`
}

// Explain says what a CSR of this kind is, for people.
func Explain(kind string) string {
	switch kind {
	case KindClient:
		return "a new node asking, through the node-bootstrapper service account, for its kubelet client certificate: its first step to join"
	case KindServing:
		return "a joined node asking for its kubelet serving certificate (logs, exec, metrics); comes after the client CSR"
	}
	return "not a kubelet CSR of this lab: bootlab leaves it alone"
}

func csrState(c certv1.CertificateSigningRequest) string {
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case certv1.CertificateApproved, certv1.CertificateDenied, certv1.CertificateFailed:
			if cond.Status == "" || cond.Status == corev1.ConditionTrue {
				return string(cond.Type)
			}
		}
	}
	return "Pending"
}

func (n LabNode) names() []string {
	out := []string{n.Name}
	if n.FQDN != "" && n.FQDN != n.Name {
		out = append(out, n.FQDN)
	}
	return out
}

func findNode(nodes []LabNode, name string) (LabNode, bool) {
	for _, n := range nodes {
		for _, nm := range n.names() {
			if strings.EqualFold(nm, name) {
				return n, true
			}
		}
	}
	return LabNode{}, false
}

// ReviewCSR decides about one CSR. It approves only a kubelet client CSR
// from the node-bootstrapper service account for system:node:<a lab node>,
// and a kubelet serving CSR from system:node:<a lab node> for that node
// with SANs of that node only. Anything else is refused, with the reason.
func ReviewCSR(c certv1.CertificateSigningRequest, nodes []LabNode) CSRReview {
	r := CSRReview{
		Name: c.Name, Created: c.CreationTimestamp.Time, Requestor: c.Spec.Username,
		Signer: c.Spec.SignerName, Kind: KindOther, State: csrState(c),
	}
	switch c.Spec.SignerName {
	case SignerKubeletClient:
		r.Kind = KindClient
	case SignerKubeletServing:
		r.Kind = KindServing
	}
	req, err := parseCSR(c.Spec.Request)
	if err != nil {
		r.Reason = "its request is not a readable PEM certificate request: " + err.Error()
		return r
	}
	r.Subject = req.Subject.CommonName
	r.DNSNames = req.DNSNames
	for _, ip := range req.IPAddresses {
		r.IPs = append(r.IPs, ip.String())
	}
	if r.State != "Pending" {
		r.Reason = "already " + strings.ToLower(r.State)
		return r
	}
	nodeName, isNodeCN := strings.CutPrefix(req.Subject.CommonName, nodeUserPrefix)
	node, known := findNode(nodes, nodeName)
	if known {
		r.Node = node.Name
	}
	in := csrInput{c: c, req: req, nodeName: nodeName, isNodeCN: isNodeCN, node: node, known: known, nodes: nodes,
		orgOK: len(req.Subject.Organization) == 1 && req.Subject.Organization[0] == nodesGroup}
	var why string
	switch r.Kind {
	case KindClient:
		if why = in.clientRefusal(); why == "" {
			r.Approve = true
			r.Reason = fmt.Sprintf("node %s joining through the node-bootstrapper (platform none has no machine-approver for it)", node.Name)
			return r
		}
	case KindServing:
		if why = in.servingRefusal(); why == "" {
			r.Approve = true
			r.Reason = fmt.Sprintf("node %s's serving certificate, with only its own names and address", node.Name)
			return r
		}
	default:
		why = fmt.Sprintf("signer %q is not a kubelet signer; approve it yourself (`oc adm certificate approve %s`) if you trust it", c.Spec.SignerName, c.Name)
	}
	r.Reason = "refused: " + why
	return r
}

// csrInput is what ReviewCSR read of one CSR: the object, its request, the
// node its subject names (known: a node of the lab) and whether its
// organization is [system:nodes].
type csrInput struct {
	c               certv1.CertificateSigningRequest
	req             *x509.CertificateRequest
	nodeName        string
	isNodeCN, known bool
	node            LabNode
	nodes           []LabNode
	orgOK           bool
}

func (in csrInput) hasUsage(u certv1.KeyUsage) bool {
	for _, x := range in.c.Spec.Usages {
		if x == u {
			return true
		}
	}
	return false
}

// clientRefusal says why a kubelet client CSR is refused, or "": it must
// come from the node-bootstrapper for system:node:<a lab node>, in
// system:nodes, with no SANs and client usages.
func (in csrInput) clientRefusal() string {
	c, req := in.c, in.req
	switch {
	case c.Spec.Username != NodeBootstrapper:
		return fmt.Sprintf("a kubelet client CSR must come from %s, this one comes from %q", NodeBootstrapper, c.Spec.Username)
	case !in.isNodeCN:
		return fmt.Sprintf("subject %q is not system:node:<name>", req.Subject.CommonName)
	case !in.known:
		return fmt.Sprintf("%q is not a node of this lab (masters and workers: %s)", in.nodeName, nodeList(in.nodes))
	case !in.orgOK:
		return fmt.Sprintf("organization %v is not [system:nodes]", req.Subject.Organization)
	case len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0:
		return "a client certificate request carries no SANs, this one does"
	case !in.hasUsage(certv1.UsageClientAuth) || in.hasUsage(certv1.UsageServerAuth):
		return fmt.Sprintf("usages %v are not those of a client certificate", c.Spec.Usages)
	}
	return ""
}

// servingRefusal says why a kubelet serving CSR is refused, or "": it must
// come from the node it names, in system:nodes, with serving usages and
// only that node's names and address.
func (in csrInput) servingRefusal() string {
	c, req, node := in.c, in.req, in.node
	requestorNode, fromNode := strings.CutPrefix(c.Spec.Username, nodeUserPrefix)
	switch {
	case !fromNode:
		return fmt.Sprintf("a kubelet serving CSR must come from the node itself (system:node:<name>), this one comes from %q", c.Spec.Username)
	case !in.isNodeCN || !strings.EqualFold(in.nodeName, requestorNode):
		return fmt.Sprintf("subject %q is not the requesting node %q", req.Subject.CommonName, c.Spec.Username)
	case !in.known:
		return fmt.Sprintf("%q is not a node of this lab (masters and workers: %s)", in.nodeName, nodeList(in.nodes))
	case !in.orgOK:
		return fmt.Sprintf("organization %v is not [system:nodes]", req.Subject.Organization)
	case len(req.EmailAddresses)+len(req.URIs) > 0:
		return "it asks for e-mail or URI SANs"
	case !in.hasUsage(certv1.UsageServerAuth) || in.hasUsage(certv1.UsageClientAuth):
		return fmt.Sprintf("usages %v are not those of a serving certificate", c.Spec.Usages)
	}
	for _, d := range req.DNSNames {
		if !containsFold(node.names(), d) {
			return fmt.Sprintf("DNS name %q is not node %s's (%s)", d, node.Name, strings.Join(node.names(), ", "))
		}
	}
	for _, ip := range req.IPAddresses {
		if node.IP == "" || !ip.Equal(net.ParseIP(node.IP)) {
			return fmt.Sprintf("IP address %s is not node %s's (%s)", ip, node.Name, node.IP)
		}
	}
	return ""
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func nodeList(nodes []LabNode) string {
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return strings.Join(names, ", ")
}

func parseCSR(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("no CERTIFICATE REQUEST PEM block")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// CSRPath is the API path of the CSR collection.
const CSRPath = "/apis/certificates.k8s.io/v1/certificatesigningrequests"

// ListCSRs returns every CSR, oldest first.
func ListCSRs(ctx context.Context, c *Client) ([]certv1.CertificateSigningRequest, error) {
	var list certv1.CertificateSigningRequestList
	if err := c.Get(ctx, CSRPath, &list); err != nil {
		return nil, err
	}
	items := list.Items
	sort.SliceStable(items, func(i, j int) bool {
		return items[i].CreationTimestamp.Before(&items[j].CreationTimestamp)
	})
	return items, nil
}

// ApproveCSR adds the Approved condition through the approval subresource.
func ApproveCSR(ctx context.Context, c *Client, csr certv1.CertificateSigningRequest, reason string) error {
	csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type:           certv1.CertificateApproved,
		Status:         corev1.ConditionTrue,
		Reason:         "BootlabApproved",
		Message:        "approved by `bootlab lab approve-csrs`: " + reason,
		LastUpdateTime: metav1.Now(),
	})
	return c.Put(ctx, CSRPath+"/"+csr.Name+"/approval", &csr, nil)
}

// ReviewAndApprove lists the CSRs, reviews each and approves the pending
// ones ReviewCSR allows (unless dryRun). It returns every review.
func ReviewAndApprove(ctx context.Context, c *Client, nodes []LabNode, dryRun bool, log *slog.Logger) ([]CSRReview, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	csrs, err := ListCSRs(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("list CSRs: %w", err)
	}
	var out []CSRReview
	for _, csr := range csrs {
		r := ReviewCSR(csr, nodes)
		if r.State == "Pending" && r.Approve && !dryRun {
			if err := ApproveCSR(ctx, c, csr, r.Reason); err != nil {
				return out, fmt.Errorf("approve CSR %s: %w", csr.Name, err)
			}
			r.Approved = true
			log.Info("approved CSR", "name", csr.Name, "node", r.Node, "kind", r.Kind)
		}
		out = append(out, r)
	}
	return out, nil
}
