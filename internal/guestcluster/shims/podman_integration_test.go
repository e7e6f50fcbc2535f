//go:build integration

package shims

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/openshiftcrds"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/probe"
)

func TestMain(m *testing.M) {
	os.Exit(kubetest.RunWithSharedCache(m))
}

// rehearsalManifests lays out /opt/openshift as a rehearsal bootstrap has
// it before stage 13: the installer's assets, openshift/ copied into
// manifests/ (stage 01), and what the renders of stages 03 to 11 wrote,
// copied as the stage scripts copy it.
func rehearsalManifests(t *testing.T, tl *Tools, assets string, rel wire.RehearsalRelease, ca pki.Pair) {
	t.Helper()
	mcs, err := pki.NewServing(ca, "api-int.ocp.lab.local", []string{"api-int.ocp.lab.local", "api.ocp.lab.local"})
	require.NoError(t, err)
	files, err := probe.RehearsalAssets(probe.Input{ClusterDomain: "ocp.lab.local", PKI: pki.Lab{CA: ca, MCS: mcs},
		SSHAuthorizedKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm1dFvC5y2o9kS3B9lG4zS3VfN1nO0m6j3yWQf1m3Xh t"},
		probe.AssetInput{ClusterName: "ocp", BaseDomain: "lab.local", MachineCIDR: "192.168.126.0/24", Masters: 3, Release: rel})
	require.NoError(t, err)
	for _, f := range files {
		rel, ok := strings.CutPrefix(f.Path, wire.AssetDir+"/")
		if !ok {
			continue
		}
		p := filepath.Join(assets, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, f.Data, os.FileMode(f.Mode)))
	}
	copyAll := func(from string) {
		t.Helper()
		srcs, err := filepath.Glob(filepath.Join(assets, from, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, srcs, from)
		for _, src := range srcs {
			require.NoError(t, copyFile(src, filepath.Join(assets, "manifests", filepath.Base(src))))
		}
	}
	copyAll("openshift")
	run := func(comp string, args ...string) {
		t.Helper()
		image := rel.Image
		if comp != "" {
			image = rel.Components[comp]
		}
		var out, errb bytes.Buffer
		code := tl.podmanMain(append([]string{"run", "--quiet", "--net=host", "--rm", "--volume", assets + ":/assets:z", image}, args...), &out, &errb)
		require.Equal(t, 0, code, "%s: %s", comp, errb.String())
	}
	run("cluster-config-api", "/usr/bin/render", "--asset-output-dir=/assets/api-bootstrap", "--rendered-manifest-dir=/assets/manifests", "--payload-version="+rel.Version)
	copyAll("api-bootstrap/manifests")
	run("cluster-authentication-operator", "render", "--asset-output-dir=/assets/auth-api-bootstrap/manifests", "--rendered-manifest-dir=/assets/manifests")
	copyAll("auth-api-bootstrap/manifests")
	run("", "render", "--output-dir=/assets/cvo-bootstrap", "--release-image="+rel.Image)
	copyAll("cvo-bootstrap/manifests")
	run("cluster-etcd-operator", "/usr/bin/cluster-etcd-operator", "render", "--asset-output-dir=/assets/etcd-bootstrap",
		"--cluster-configmap-file=/assets/manifests/cluster-config.yaml", "--etcd-image="+rel.Components["etcd"])
	copyAll("etcd-bootstrap/manifests")
	for _, op := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		args := []string{"/usr/bin/cluster-" + op + "-operator", "render", "--manifest-image=hk",
			"--asset-output-dir=/assets/" + op + "-bootstrap", "--config-output-file=/assets/" + op + "-bootstrap/config"}
		switch op {
		case "kube-apiserver":
			// As stage 08 runs it: the masters' objects come from tls/.
			args = append(args, "--asset-input-dir=/assets/tls")
		case "kube-controller-manager":
			args = append(args, "--cpc-config-output-file=/assets/kube-controller-manager-bootstrap/cpc-config")
		}
		run("cluster-"+op+"-operator", args...)
		copyAll(op + "-bootstrap/manifests")
	}
	run("cluster-ingress-operator", "render", "--prefix=cluster-ingress-", "--output-dir=/assets/ingress-operator-manifests")
	copyAll("ingress-operator-manifests")
}

// realControlPlane starts the default release's etcd and kube-apiserver
// on loopback (built once into the run's shared cache) and returns them
// with the etcd binary.
func realControlPlane(t *testing.T, apiArgs ...string) (*kubetest.ControlPlane, string) {
	t.Helper()
	rel := kuberelease.Build(t, "4.19")
	return kubetest.StartControlPlane(t, rel.Etcd, rel.Programs, apiArgs...), rel.Etcd
}

// Stage 13's create, for real: every manifest a rehearsal bootstrap has in
// /opt/openshift/manifests (the installer's and the renders') is created
// through the release's real kube-apiserver, with bootlab's OpenShift CRDs
// among them in one lexical order, with cluster-bootstrap's loopback kubeconfig; kubectl reads back
// the installer's Infrastructure with the status it carries.
func TestCreateRehearsalManifestsThroughARealAPI(t *testing.T) {
	t.Parallel()
	tl, assets, rel, ca := standInNode(t)
	rehearsalManifests(t, tl, assets, rel, ca)

	cp, _ := realControlPlane(t)
	// The loopback kubeconfig, for this API (the lab CA did not sign it).
	kcfg, err := os.ReadFile(cp.Files["kubeconfig"])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(assets, "auth", "kubeconfig-loopback"), kcfg, 0o600))

	var out bytes.Buffer
	err = tl.ClusterBootstrap.CreateManifests(assets, 2*time.Minute, &out)
	require.NoError(t, err, out.String())
	t.Logf("stage 13's create:\n%s", out.String())
	ents, err := os.ReadDir(filepath.Join(assets, "manifests"))
	require.NoError(t, err)
	crds, err := openshiftcrds.Manifests()
	require.NoError(t, err)
	assert.Contains(t, out.String(), fmt.Sprintf("%d manifests: created ", len(ents)+len(crds)), "one object per file, bootlab's CRDs among them")
	assert.Contains(t, out.String(), "failed 0")
	assert.Contains(t, out.String(), `Created "bootlab-crds/0000_12_etcd_01_etcds.crd.yaml"`)
	for _, q := range []struct{ args, want string }{
		{"get infrastructure cluster -o jsonpath={.status.apiServerInternalURI}", "https://api-int.ocp.lab.local:6443"},
		{"get configmap -n kube-system cluster-config-v1 -o name", "configmap/cluster-config-v1\n"},
		{"get secret -n openshift-kube-apiserver bound-service-account-signing-key -o name", "secret/bound-service-account-signing-key\n"},
		{"get machineconfig 99-master-ssh -o jsonpath={.metadata.labels.machineconfiguration\\.openshift\\.io/role}", "master"},
		{"get clusterversion version -o jsonpath={.spec.clusterID}", "rehearsal"},
		{"get featuregate cluster -o jsonpath={.status.featureGates[0].version}", rel.Version},
	} {
		got, err := cp.Kubectl(strings.Fields(q.args)...)
		require.NoError(t, err, got)
		assert.Equal(t, q.want, got, q.args)
	}
}

// copyFile copies file src to dst with its mode (a directory is skipped),
// as the stage scripts' cp does.
func copyFile(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil || fi.IsDir() {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, fi.Mode().Perm())
}
