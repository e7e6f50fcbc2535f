package docs

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/stages"
)

// demoTopology is the README's demo lab (make demo): a probe lab of one
// bootstrap, three masters and two workers, drawn from its spec.
func demoTopology(t *testing.T) *spec.Spec {
	t.Helper()
	s := &spec.Spec{Name: "demo", Profile: spec.ProfileProbe, LabDir: filepath.Join(t.TempDir(), "demo"),
		Topology: spec.Topology{Masters: 3, Workers: 2}}
	s.Defaults()
	require.NoError(t, s.Validate())
	return s
}

// The pictures under docs/pictures are what the code draws today: the
// demo lab's topology (lab graph), the bootstrap timeline and the etcd
// membership (the stage catalog), the troubleshooting tree (lab diagnose),
// the guest cluster's module (its import graph). A change to the lab, the load balancer
// or the catalog that changes a picture fails here until `make
// docs-pictures` redraws it, so the docs cannot drift.
func TestPictures(t *testing.T) {
	t.Parallel()
	// The demo lab is never built: Graph draws it from its spec alone.
	l, err := lab.Open(context.Background(), demoTopology(t), lab.Options{})
	require.NoError(t, err)
	topo, err := l.Graph(context.Background(), lab.GraphOptions{})
	require.NoError(t, err)
	c := stages.Default()
	pictures := map[string][]byte{
		"topology.svg":             topo.SVG(),
		"topology.mmd":             topo.Mermaid(),
		"bootstrap-timeline.svg":   c.Timeline().SVG(),
		"bootstrap-timeline.mmd":   c.Timeline().Mermaid(),
		"etcd-membership.svg":      c.EtcdMembership(3).SVG(),
		"etcd-membership.mmd":      c.EtcdMembership(3).Mermaid(),
		"troubleshooting-tree.svg": lab.DiagnosisTree().SVG(),
		"troubleshooting-tree.mmd": lab.DiagnosisTree().Mermaid(),
		"guest-cluster.svg":        guestClusterMap(t).SVG(),
		"guest-cluster.mmd":        guestClusterMap(t).Mermaid(),
	}
	for name, got := range pictures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if filepath.Ext(name) == ".svg" {
				d := xml.NewDecoder(bytes.NewReader(got))
				for {
					_, err := d.Token()
					if errors.Is(err, io.EOF) {
						break
					}
					require.NoError(t, err, "%s is not well-formed XML", name)
				}
			}
			// The command Golden names is what `make docs-pictures` runs.
			testutil.Golden(t, filepath.Join("pictures", name), got)
		})
	}
}
