package clusterbootstrap

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/probe"
)

// The masters cluster-bootstrap gates on are the install-config's
// controlPlane.replicas, read from the cluster-config.yaml the installer's
// assets put in manifests/; a missing or bad one is an error naming the
// file, as upstream's getInstallConfig fails.
func TestInstallConfigReplicas(t *testing.T) {
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
		got, err := installConfigReplicas(assets)
		require.NoError(t, err)
		assert.Equal(t, masters, got, "the installer's assets for %d masters", masters)
	}

	assets := t.TempDir()
	_, err = installConfigReplicas(assets)
	assert.ErrorContains(t, err, filepath.Join(assets, "manifests", "cluster-config.yaml"))
	require.NoError(t, os.MkdirAll(filepath.Join(assets, "manifests"), 0o755))
	for bad, why := range map[string]string{
		"{":                           "not a ConfigMap",
		"kind: ConfigMap":             "no data.install-config",
		"data: {install-config: '{'}": "not YAML",
		"data: {install-config: 'controlPlane: {replicas: 0}'}":  "no controlPlane.replicas of 1 or more",
		"data: {install-config: 'controlPlane: {name: master}'}": "no controlPlane.replicas of 1 or more",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(assets, "manifests", "cluster-config.yaml"), []byte(bad), 0o644))
		_, err := installConfigReplicas(assets)
		assert.ErrorContains(t, err, why, "%q", bad)
	}
}

// Each release's cluster-bootstrap start, as its branch of
// openshift/cluster-bootstrap has it (pkg/start/start.go, status.go,
// ha_checker.go): the HA gate and the control-plane sizes it applies to,
// the load-balancer delay and the end order.
func TestBehaviourPerRelease(t *testing.T) {
	t.Parallel()
	type gates struct{ one, two, three string }
	for _, tc := range []struct {
		version  string
		branch   string
		gates    gates
		delay3   time.Duration
		finished bool
	}{
		// release-4.16 start.go: !isSingleNodeControlPlane -> waitUntilMastersJoined(2); no delay; teardown, then bootstrap-finished.
		{"4.16.3", "4.16", gates{"", GateMasterNodes, GateMasterNodes}, 0, false},
		// release-4.17: the same code as release-4.16.
		{"4.17.0", "4.17", gates{"", GateMasterNodes, GateMasterNodes}, 0, false},
		// release-4.18: ha_checker.go revisions on 2 nodes unless SNO; minimumTeardownDelay 30 s; bootstrap-finished, then teardown.
		{"4.18.1", "4.18", gates{"", GateRevisions, GateRevisions}, 30 * time.Second, true},
		// release-4.19: isHAControlPlane: replicas >= 3.
		{"4.19.10", "4.19", gates{"", "", GateRevisions}, 30 * time.Second, true},
		// Later and unknown releases keep 4.19's.
		{"4.21.2", "4.19", gates{"", "", GateRevisions}, 30 * time.Second, true},
		{"", "4.19", gates{"", "", GateRevisions}, 30 * time.Second, true},
	} {
		b := BehaviourFor(tc.version)
		assert.Equal(t, tc.branch, b.Branch, tc.version)
		assert.Equal(t, tc.gates, gates{b.HAGate(1), b.HAGate(2), b.HAGate(3)}, tc.version)
		assert.Equal(t, tc.delay3, b.TearDownDelay(3, 0), "%s: the delay on 3 masters", tc.version)
		assert.Zero(t, b.TearDownDelay(1, 0), "%s: no delay on one master", tc.version)
		assert.Equal(t, time.Minute, b.TearDownDelay(3, time.Minute), "%s: a longer --tear-down-delay is kept", tc.version)
		assert.Equal(t, tc.finished, b.FinishedBeforeTeardown, tc.version)
	}
}

// The temporary control plane lands as bootstrap.go's Start lands it: tls/
// and the loopback admin kubeconfig (upstream's assetPathAdminKubeConfig)
// as the bootstrap secrets, 0600, so the bootstrap's controller manager and
// scheduler reach the kube-apiserver beside them; each pod file created
// O_EXCL: one already in the kubelet's directory fails the start and is
// left alone, while the pods copied before it are owned and torn down.
func TestControlPlaneLandsExclusivelyAndTearsDown(t *testing.T) {
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
	write("bootstrap-manifests/kube-apiserver-pod.yaml", "kind: Pod\n", 0o644)
	write("bootstrap-manifests/kube-controller-manager-pod.yaml", "kind: Pod\n", 0o644)
	pods := filepath.Join(kube, "manifests")
	require.NoError(t, os.MkdirAll(pods, 0o755))
	var out bytes.Buffer
	say := func(f string, a ...any) { fmt.Fprintf(&out, f+"\n", a...) }

	b := &controlPlane{assets: assets, podDir: pods, secrets: filepath.Join(kube, "bootstrap-secrets")}
	require.NoError(t, b.start(say))
	got, err := os.ReadFile(filepath.Join(b.secrets, "kubeconfig"))
	require.NoError(t, err)
	assert.Equal(t, "server: https://localhost:6443\n", string(got), "the control plane's kubeconfig is the loopback one")
	for _, f := range []string{"kubeconfig", "service-account.key"} {
		fi, err := os.Stat(filepath.Join(b.secrets, f))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "%s is a secret", f)
	}
	assert.Equal(t, []string{filepath.Join(pods, "kube-apiserver-pod.yaml"), filepath.Join(pods, "kube-controller-manager-pod.yaml")}, b.owned)
	require.NoError(t, b.teardown(say))
	assert.NoDirExists(t, b.secrets)
	left, err := os.ReadDir(pods)
	require.NoError(t, err)
	assert.Empty(t, left, "teardown removes the pods it landed")

	// A pod file already there (someone else's) fails the start.
	require.NoError(t, os.WriteFile(filepath.Join(pods, "kube-controller-manager-pod.yaml"), []byte("theirs"), 0o644))
	b = &controlPlane{assets: assets, podDir: pods, secrets: filepath.Join(kube, "bootstrap-secrets")}
	err = b.start(say)
	assert.ErrorIs(t, err, os.ErrExist)
	assert.Equal(t, []string{filepath.Join(pods, "kube-apiserver-pod.yaml")}, b.owned, "what it copied before the failure is its own")
	require.NoError(t, b.teardown(say))
	theirs, err := os.ReadFile(filepath.Join(pods, "kube-controller-manager-pod.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "theirs", string(theirs), "a file it did not land is left alone")
	assert.NoFileExists(t, filepath.Join(pods, "kube-apiserver-pod.yaml"))
}
