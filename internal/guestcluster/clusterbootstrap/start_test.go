package clusterbootstrap

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/probe"
)

// The number of masters a rehearsal bootstrap waits for is the
// install-config's controlPlane.replicas, read from the cluster-config.yaml
// the installer's assets put in manifests/; 0 when that is missing.
func TestInstallConfigMasters(t *testing.T) {
	t.Parallel()
	ca, err := pki.NewCA("test")
	require.NoError(t, err)
	mcs, err := pki.NewServing(ca, "api-int.ocp.lab.local", []string{"api-int.ocp.lab.local"})
	require.NoError(t, err)
	for _, masters := range []int{1, 3} {
		files, err := probe.RehearsalAssets(probe.Input{ClusterDomain: "ocp.lab.local", PKI: pki.Lab{CA: ca, MCS: mcs}},
			probe.AssetInput{ClusterName: "ocp", BaseDomain: "lab.local", MachineCIDR: "192.168.126.0/24", Masters: masters,
				Release: probe.ReleaseFor("4.19.10")})
		require.NoError(t, err)
		assets := t.TempDir()
		for _, f := range files {
			if f.Path == wire.AssetDir+"/manifests/cluster-config.yaml" {
				require.NoError(t, os.MkdirAll(filepath.Join(assets, "manifests"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(assets, "manifests", "cluster-config.yaml"), f.Data, 0o644))
			}
		}
		assert.Equal(t, masters, installConfigMasters(assets), "the installer's assets for %d masters", masters)
	}

	assets := t.TempDir()
	assert.Zero(t, installConfigMasters(assets), "no cluster-config.yaml")
	require.NoError(t, os.MkdirAll(filepath.Join(assets, "manifests"), 0o755))
	for _, bad := range []string{"{", "data: {install-config: '{'}", "data: {install-config: 'controlPlane: {replicas: -1}'}", "kind: ConfigMap"} {
		require.NoError(t, os.WriteFile(filepath.Join(assets, "manifests", "cluster-config.yaml"), []byte(bad), 0o644))
		assert.Zero(t, installConfigMasters(assets), "%q", bad)
	}
}

// A rehearsal bootstrap learns its masters from its etcd's members as they
// join: the list is asked again each round until as many as the cluster
// has joined, then no more; an unstarted member (no name yet) and the
// bootstrap's own are not masters; a failed listing keeps what was known.
func TestJoinedMastersAsksUntilAllJoined(t *testing.T) {
	t.Parallel()
	// members is the bootstrap member's list as etcd answers it (nil: the
	// listing fails), asked counts the asks.
	var members []etcd.Member
	asked := 0
	fake := func(context.Context) ([]etcd.Member, error) {
		asked++
		if members == nil {
			return nil, errors.New("etcdserver: leader changed")
		}
		return members, nil
	}
	write := func(ms ...etcd.Member) { members = ms }
	boot := etcd.Member{ID: 171, Name: "etcd-bootstrap", PeerURLs: []string{"https://10.0.0.10:2380"}, ClientURLs: []string{"https://10.0.0.10:2379"}}
	m := func(name, ip string) etcd.Member {
		return etcd.Member{ID: 1, Name: name, PeerURLs: []string{"https://" + ip + ":2380"}, ClientURLs: []string{"https://" + ip + ":2379"}}
	}
	unstarted := etcd.Member{ID: 2, PeerURLs: []string{"https://10.0.0.13:2380"}, IsLearner: true}
	ctx := context.Background()
	list := joinedMasters(fake, 3)

	write(boot)
	got, want := list(ctx)
	assert.Empty(t, got, "only the bootstrap's member")
	assert.Equal(t, 3, want)

	write(boot, m("master-0", "10.0.0.11"), unstarted)
	got, want = list(ctx)
	assert.Equal(t, map[string]string{"master-0": "https://10.0.0.11:6443/readyz"}, got)
	assert.Equal(t, 3, want)

	members = nil
	got, _ = list(ctx)
	assert.Len(t, got, 1, "a failed listing keeps what was known")

	write(boot, m("master-0", "10.0.0.11"), m("master-1", "10.0.0.12"), m("master-2", "10.0.0.13"))
	got, want = list(ctx)
	assert.Len(t, got, 3)
	assert.Equal(t, 3, want)
	before := asked
	got, _ = list(ctx)
	assert.Len(t, got, 3)
	assert.Equal(t, before, asked, "all three joined: the members are not asked again")

	// With the cluster's size unknown, the members seen are all there are.
	write(boot, m("master-0", "10.0.0.11"))
	got, want = joinedMasters(fake, 0)(ctx)
	assert.Len(t, got, 1)
	assert.Equal(t, 1, want)
}

// cluster-bootstrap start lands tls/ and the loopback admin kubeconfig as
// bootstrap-secrets/kubeconfig (upstream's assetPathAdminKubeConfig): the
// bootstrap's controller manager and scheduler reach the kube-apiserver
// beside them, never api.<domain> through the load balancer.
func TestLandBootstrapControlPlaneUsesTheLoopbackKubeconfig(t *testing.T) {
	t.Parallel()
	assets, kube := t.TempDir(), t.TempDir()
	write := func(rel, data string, mode os.FileMode) {
		p := filepath.Join(assets, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), mode))
	}
	write("tls/kube-apiserver-lb-server.crt", "cert", 0o644)
	write("tls/service-account.key", "key", 0o600)
	write("auth/kubeconfig", "server: https://api.ocp.lab.local:6443\n", 0o600)
	write("auth/kubeconfig-loopback", "server: https://localhost:6443\n", 0o600)
	write("bootstrap-manifests/kube-controller-manager-pod.yaml", "kind: Pod\n", 0o644)
	require.NoError(t, os.MkdirAll(filepath.Join(kube, "manifests"), 0o755))

	secrets, started, err := landBootstrapControlPlane(assets, kube)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(kube, "bootstrap-secrets"), secrets)
	got, err := os.ReadFile(filepath.Join(secrets, "kubeconfig"))
	require.NoError(t, err)
	assert.Equal(t, "server: https://localhost:6443\n", string(got), "the control plane's kubeconfig is the loopback one")
	fi, err := os.Stat(filepath.Join(secrets, "kubeconfig"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a kubeconfig is a secret")
	entries, err := os.ReadDir(secrets)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"kube-apiserver-lb-server.crt", "service-account.key", "kubeconfig"}, names)
	assert.Equal(t, []string{filepath.Join(kube, "manifests", "kube-controller-manager-pod.yaml")}, started)
}

// The bootstrap finds its masters' API servers from the etcd members that
// joined it: every named member but its own, at the member's host.
func TestReadyzOfMembers(t *testing.T) {
	t.Parallel()
	got := readyzOfMembers([]etcd.Member{
		{Name: etcd.BootstrapMemberName, ClientURLs: []string{"https://192.168.126.10:2379"}},
		{Name: "master-0", ClientURLs: []string{"https://192.168.126.11:2379"}},
		{Name: "master-1", ClientURLs: []string{"https://192.168.126.12:2379"}, IsLearner: true},
		{Name: "", PeerURLs: []string{"https://192.168.126.13:2380"}}, // added, not started: no name yet
		{Name: "broken", ClientURLs: []string{"::not a url"}},
	})
	assert.Equal(t, map[string]string{
		"master-0": "https://192.168.126.11:6443/readyz",
		"master-1": "https://192.168.126.12:6443/readyz",
	}, got)
}
