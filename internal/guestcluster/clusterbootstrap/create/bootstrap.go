package create

import (
	"context"
	"fmt"
	"github.com/bootlab/bootlab/internal/kube"
	"io"
	"time"
)

// BootstrapOptions say what cluster-bootstrap's create works on.
type BootstrapOptions struct {
	// Kubeconfig authenticates: /opt/openshift/auth/kubeconfig-loopback.
	Kubeconfig string
	// ManifestDir is created: /opt/openshift/manifests.
	ManifestDir string
	// First are created before the directory, under their own heading:
	// bootlab's OpenShift CRDs (clusterbootstrap/openshiftcrds).
	First []Manifest
	// FirstTitle names them in the log.
	FirstTitle string
	// ReadyTimeout bounds the wait for /readyz (cluster-bootstrap: 20 min),
	// CreateTimeout the create (cluster-bootstrap: until its own deadlines).
	ReadyTimeout, CreateTimeout time.Duration
	// Poll is the /readyz interval (5 s by default, as cluster-bootstrap).
	Poll time.Duration
	// Log receives cluster-bootstrap's lines.
	Log io.Writer
}

// Bootstrap is cluster-bootstrap's create on the bootstrap node: load the
// directory (a bad file stops it before anything is created), wait for the
// API's /readyz, create First, then the directory, and print a summary of
// each. The Results are First's and the directory's.
func Bootstrap(ctx context.Context, o BootstrapOptions) (first, manifests *Result, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	ms, err := Load(o.ManifestDir)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := kube.LoadKubeconfig(o.Kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	c, err := kube.NewClient(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
	}
	fmt.Fprintf(o.Log, "Waiting up to %v for the Kubernetes API at %s\n", o.ReadyTimeout, c.Server())
	rctx, cancel := context.WithTimeout(ctx, o.ReadyTimeout)
	err = c.WaitReady(rctx, o.Poll)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintln(o.Log, "API is up")
	cctx, cancel := context.WithTimeout(ctx, o.CreateTimeout)
	defer cancel()
	if len(o.First) > 0 {
		fmt.Fprintf(o.Log, "Creating %s...\n", o.FirstTitle)
		first, err = Create(cctx, c, o.First, Options{Log: o.Log})
		fmt.Fprint(o.Log, first.Summary())
		if err != nil {
			return first, nil, err
		}
	}
	fmt.Fprintf(o.Log, "Creating self-hosted assets from %s...\n", o.ManifestDir)
	manifests, err = Create(cctx, c, ms, Options{Log: o.Log})
	fmt.Fprint(o.Log, manifests.Summary())
	return first, manifests, err
}
