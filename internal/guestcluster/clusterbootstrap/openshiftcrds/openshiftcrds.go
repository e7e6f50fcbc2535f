// Package openshiftcrds holds the CustomResourceDefinitions of OpenShift's
// API groups (config.openshift.io, operator.openshift.io,
// machineconfiguration.openshift.io) for the kinds the installer's
// manifests, bootkube's renders and the stand-in operators create on the
// bootstrap. On a real cluster they come from the release payload's
// images; a rehearsal lab pulls none, and the Go module proxy does not
// serve openshift/api, so bootlab writes them: each a reduced structural
// schema of upstream's (crds/*.yaml say which fields are typed and what is
// kept as given). Stage 13 creates them with /opt/openshift/manifests, each
// sorted by its upstream file name, as a payload render's copy in
// manifests/ would be.
package openshiftcrds

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/create"
)

//go:embed crds/*.yaml
var crds embed.FS

// Prefix is put before each CRD's file name, so a learner reads, in the
// create's lines, which CRDs bootlab wrote.
const Prefix = "bootlab-crds/"

// Manifests are the CRDs, as cluster-bootstrap's create creates them, each named
// Prefix + the file name (upstream's, from openshift/api) and sorted by
// that file name.
func Manifests() ([]create.Manifest, error) {
	names, err := fs.Glob(crds, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []create.Manifest
	for _, n := range names {
		data, err := crds.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms, err := create.Parse(Prefix+path.Base(n), data)
		if err != nil {
			return nil, fmt.Errorf("bootlab's CRD %s: %w", n, err)
		}
		for i := range ms {
			ms[i].SortPath = path.Base(n)
		}
		out = append(out, ms...)
	}
	create.Order(out)
	return out, nil
}
