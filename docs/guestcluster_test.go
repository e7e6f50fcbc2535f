package docs

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/diagram"
)

const module = "github.com/bootlab/bootlab/"

// guestCluster is the guest cluster's module as docs/architecture.md draws
// it: each package (its directory under internal/), the upstream component
// it plays and the files that play a part of it. The arrows are the
// imports between them, read from the code; the tone is who runs it
// (amber the bootstrap, blue the masters, purple both).
var guestCluster = []diagram.Package{
	{Name: "agent", Plays: "the node: boot, DHCP, Ignition, DNS, the report; starts the parts below"},
	{Name: "guestcluster/shims", Plays: "podman, oc, crictl, journalctl, dig, sudo, systemctl: their arguments parsed",
		Files: []string{"podman.go", "oc.go", "crictl.go", "journalctl.go", "dig.go", "sudo.go", "systemctl.go"}, Tone: diagram.ToneBootstrap},
	{Name: "guestcluster/units", Plays: "systemd for approve-csr.service and progress.service: start, stop, status", Tone: diagram.ToneBootstrap},
	{Name: "guestcluster/approvecsr", Plays: "approve-csr.service", Tone: diagram.ToneBootstrap},
	{Name: "guestcluster/reportprogress", Plays: "progress.service (report-progress.sh)", Tone: diagram.ToneBootstrap},
	{Name: "guestcluster/clusterbootstrap", Plays: "cluster-bootstrap start (stage 13)",
		Files: []string{"start.go", "requiredpods.go", "behaviour.go"}, Tone: diagram.ToneBootstrap},
	{Name: "guestcluster/operators/renders", Plays: "the operators' render commands, machine-config-operator bootstrap",
		Files: []string{"renders.go", "controlplane.go"}, Tone: diagram.ToneBootstrap},
	{Name: "guestcluster/operators/installer", Plays: "the kube-apiserver, controller manager and scheduler operators' installer pods",
		Files: []string{"master.go", "installer.go"}, Tone: diagram.ToneMasters},
	{Name: "guestcluster/clusterbootstrap/openshiftcrds", Plays: "OpenShift's CRDs (a real payload's images carry them)", Tone: diagram.ToneBootstrap},
	{Name: "guestcluster/operators/etcd", Plays: "cluster-etcd-operator",
		Files: []string{"membercontroller.go", "teardown.go", "status.go", "waitforceo.go"}, Tone: diagram.ToneBoth},
	{Name: "guestcluster/clusterbootstrap/create", Plays: "cluster-bootstrap's create of manifests/", Tone: diagram.ToneBootstrap},
	{Name: "guestcluster/kubelet", Plays: "the kubelet: static pods, their CRI logs", Tone: diagram.ToneBoth},
	{Name: "guestcluster/journal", Plays: "journald: the units' journals", Tone: diagram.ToneBoth},
	{Name: "guestcluster/kubelet/node", Plays: "the kubelet's node join: CSR, Node, Lease, mirror pods", Tone: diagram.ToneMasters},
	{Name: "controlplane", Plays: "the control plane pods' flags (stage validate checks them too)"},
	{Name: "rhcos", Plays: "what RHCOS gives a node"},
	{Name: "kube", Plays: "the one API client and kubeconfig reader (host too)"},
}

// guestClusterMap draws guestCluster with the imports between its
// packages, and checks the table: every package under
// internal/guestcluster is in it, every file it names exists.
func guestClusterMap(t *testing.T) *diagram.Modules {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	known := map[string]bool{}
	for _, p := range guestCluster {
		known[p.Name] = true
		for _, f := range p.Files {
			_, err := os.Stat(filepath.Join(root, "internal", p.Name, f))
			require.NoError(t, err, "the guest cluster's map names %s in %s", f, p.Name)
		}
	}
	err = filepath.WalkDir(filepath.Join(root, "internal", "guestcluster"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() == "testdata" || d.Name() == "crds" {
			return err
		}
		if _, err := build.ImportDir(path, 0); err == nil {
			rel, _ := filepath.Rel(filepath.Join(root, "internal"), path)
			if rel = filepath.ToSlash(rel); rel != "guestcluster" && !known[rel] {
				t.Errorf("package internal/%s is not on the guest cluster's map: add it to guestCluster (docs/guestcluster_test.go)", rel)
			}
		}
		return nil
	})
	require.NoError(t, err)
	m := &diagram.Modules{Title: "The guest cluster: what plays each component, and its imports",
		Packages: guestCluster,
		Note:     "Packages under internal/; amber: the bootstrap runs it, blue: the masters, purple: both. An import another path implies is not drawn; internal/wire and other leaves are left out."}
	for _, p := range guestCluster {
		bp, err := build.ImportDir(filepath.Join(root, "internal", p.Name), 0)
		var noGo *build.NoGoError
		require.False(t, errors.As(err, &noGo), "internal/%s has no Go files", p.Name)
		require.NoError(t, err)
		for _, imp := range bp.Imports {
			if to, ok := strings.CutPrefix(imp, module+"internal/"); ok && known[to] {
				m.Imports = append(m.Imports, diagram.Import{From: p.Name, To: to})
			}
		}
	}
	return m
}
