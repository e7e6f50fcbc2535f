package lab

import (
	"context"
	"time"

	"github.com/bootlab/bootlab/lab/cluster"
)

// The waits' defaults: `lab wait`'s flags show them, the engine applies
// them to a zero WaitOptions.
const (
	DefaultAPITimeout       time.Duration = cluster.DefaultAPITimeout
	DefaultBootstrapTimeout time.Duration = cluster.DefaultBootstrapTimeout
	DefaultInstallTimeout   time.Duration = cluster.DefaultInstallTimeout
	DefaultPollInterval     time.Duration = cluster.DefaultPollInterval
)

// CSRReview is one certificate signing request as `lab approve-csrs`
// judged it: its kind, whether it was (or would be) approved, and why.
type CSRReview = cluster.CSRReview

// ExplainCSR says what a CSR of kind is for, in a few words.
func ExplainCSR(kind string) string { return cluster.Explain(kind) }

// CSRApprover reviews the lab's pending CSRs against its nodes and
// approves those its nodes sent: `lab approve-csrs`, one look per Review.
type CSRApprover struct {
	l     *Lab
	api   *cluster.Client
	nodes []cluster.LabNode
	hop   *Hop
}

// CSRApprover opens the lab's API for approving CSRs (a rehearsal lab's
// admin kubeconfig is on its bootstrap only), through the lab's hop.
// Close it.
func (l *Lab) CSRApprover(ctx context.Context) (*CSRApprover, error) {
	hop, err := l.Hop(ctx)
	if err != nil {
		return nil, err
	}
	var api *cluster.Client
	if l.spec.Rehearsal() {
		api, err = cluster.RehearsalClient(ctx, l.spec, hop.net())
	} else {
		api, err = cluster.LabClient(l.spec, hop.net())
	}
	if err != nil {
		_ = hop.Close()
		return nil, err
	}
	return &CSRApprover{l: l, api: api, nodes: cluster.LabNodes(l.spec), hop: hop}, nil
}

// Review lists the CSRs and approves the lab's nodes' pending ones
// (none with dryRun, which says what it would approve).
func (a *CSRApprover) Review(ctx context.Context, dryRun bool) ([]CSRReview, error) {
	return cluster.ReviewAndApprove(ctx, a.api, a.nodes, dryRun, a.l.o.Log)
}

// Close closes the connection to the hypervisor host, if there is one.
func (a *CSRApprover) Close() error { return a.hop.Close() }
