package create

import (
	"context"
	"fmt"
	"io"

	"github.com/bootlab/bootlab/internal/kube"
)

// BootstrapOptions say what cluster-bootstrap's create works on.
type BootstrapOptions struct {
	// Kubeconfig authenticates: /opt/openshift/auth/kubeconfig-loopback.
	Kubeconfig string
	// ManifestDir is created: /opt/openshift/manifests.
	ManifestDir string
	// Extra are created with the directory, sorted among its files by
	// their SortPath: bootlab's OpenShift CRDs (clusterbootstrap/
	// openshiftcrds), which on a real bootstrap are files of manifests/.
	Extra []Manifest
	// Log receives cluster-bootstrap's lines.
	Log io.Writer
}

// Bootstrap is cluster-bootstrap's create on the bootstrap node (library-go
// EnsureManifestsCreated, as cluster-bootstrap release-4.16 to 4.19 runs it
// in the background of its required-pods wait): load the directory (a bad
// file stops it before anything is created), then create it and Extra in
// one lexical order, in rounds every 200 ms until all exist or ctx ends,
// and print a summary. It does not wait for the API to be ready: a round
// the API cannot answer (discovery failing) is retried, as upstream's.
func Bootstrap(ctx context.Context, o BootstrapOptions) (*Result, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	ms, err := Load(o.ManifestDir)
	if err != nil {
		return nil, err
	}
	ms = append(ms, o.Extra...)
	Order(ms)
	cfg, err := kube.LoadKubeconfig(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := kube.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
	}
	fmt.Fprintf(o.Log, "Creating self-hosted assets from %s (%d manifests) at %s...\n", o.ManifestDir, len(ms), c.Server())
	res, err := Create(ctx, c, ms, Options{Log: o.Log})
	fmt.Fprint(o.Log, res.Summary())
	return res, err
}
