package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/images"
	"github.com/bootlab/bootlab/lab/internal/logbundle"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/openshift"
	"github.com/bootlab/bootlab/lab/spec"
)

// GatherOptions say where Gather writes and reports.
type GatherOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// Dir is where bootlab's bundle goes ("": the lab directory).
	Dir string
	// Limits cap bootlab's bundle (zero: logbundle.DefaultLimits).
	Limits logbundle.Limits
	// Sources are where bootlab's bundle comes from (probe and rehearsal labs).
	Sources GatherSources
}

// Gather is `lab gather`: of an OpenShift lab, openshift-install's gather
// bootstrap against its bootstrap node and masters, with the lab's install
// assets and key; of a probe or rehearsal lab, bootlab's own bundle in the
// installer's layout (gatherBundle). It returns the bundle's path. A lab
// whose bootstrap was pivoted out has nothing to gather.
func Gather(ctx context.Context, s *spec.Spec, st *labdir.State, o GatherOptions) (string, error) {
	if s.Profile != spec.ProfileOpenShift {
		if st.BootstrapRemoved {
			return "", fmt.Errorf("the bootstrap of lab %s was removed by `bootlab lab pivot`: there is nothing left to gather from it", s.Name)
		}
		return gatherBundle(ctx, s, st, o)
	}
	if st.BootstrapRemoved {
		return "", fmt.Errorf("the bootstrap of lab %s was removed by `bootlab lab pivot`: there is nothing left to gather from it; use `oc adm must-gather` on the cluster", s.Name)
	}
	boots := s.NodesByRole(spec.RoleBootstrap)
	if len(boots) == 0 {
		return "", fmt.Errorf("lab %s has no bootstrap node", s.Name)
	}
	var masters []string
	for _, m := range s.NodesByRole(spec.RoleMaster) {
		masters = append(masters, m.IP)
	}
	if _, err := os.Stat(filepath.Join(labdir.Assets(s), "metadata.json")); err != nil {
		return "", fmt.Errorf("no install assets in %s: `bootlab lab up` with a pull secret makes them; gather needs them", labdir.Assets(s))
	}
	bin, err := openshift.FindInstaller(ctx, s.OpenShift.Version, s.OpenShift.InstallerPath, images.DefaultCacheDir(), nil)
	if err != nil {
		return "", err
	}
	o.Status.Start("openshift-install gather bootstrap (bootstrap %s, %d masters)", boots[0].IP, len(masters))
	bundle, err := openshift.GatherBootstrap(ctx, &openshift.Installer{Path: bin, Log: o.Log}, labdir.Assets(s), boots[0].IP, masters, labdir.SSHKey(s))
	if err != nil {
		return "", err
	}
	o.Status.End(true)
	return bundle, nil
}
