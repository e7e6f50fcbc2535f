package openshift

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// prepareEnv is a lab spec wired to the openshift-install test double and
// a local mirror.
type prepareEnv struct {
	spec   *spec.Spec
	mirror *testMirror
	log    string
	cache  string
	status bytes.Buffer
}

func newPrepareEnv(t *testing.T, workers int) *prepareEnv {
	t.Helper()
	e := &prepareEnv{mirror: newTestMirror(t, "4.19.10"), cache: t.TempDir()}
	e.spec = testSpec(t, workers)
	fakeInst, _ := filepath.Abs(filepath.Join(testdata, "fake-openshift-install"))
	fakeOC, _ := filepath.Abs(filepath.Join(testdata, "fake-oc"))
	e.spec.OpenShift.InstallerPath = fakeInst
	e.spec.OpenShift.OCPath = fakeOC
	e.spec.OpenShift.Mirrors.RHCOS = e.mirror.URL
	e.spec.OpenShift.PullSecretFile = writeFile(t, t.TempDir(), "pull-secret.json", validPullSecret())
	require.NoError(t, os.MkdirAll(filepath.Dir(labdir.SSHKey(e.spec)), 0o700))
	require.NoError(t, os.WriteFile(labdir.SSHKey(e.spec)+".pub", []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILabKey bootlab-golden\n"), 0o644))
	e.log = filepath.Join(t.TempDir(), "installer.log")
	t.Setenv("FAKE_INSTALLER_LOG", e.log)
	t.Setenv("FAKE_STREAM_JSON", e.mirror.writeStream(t))
	return e
}

func (e *prepareEnv) prepare() (*PrepareResult, error) {
	return Prepare(context.Background(), e.spec, PrepareOptions{
		Status: status.New(&e.status, false), CacheDir: e.cache, LookPath: noPath,
	})
}

func (e *prepareEnv) calls(t *testing.T) []string {
	data, err := os.ReadFile(e.log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func mode(t *testing.T, p string) os.FileMode {
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

func TestPrepareOrderModesAndIgnition(t *testing.T) {
	// Not parallel: newPrepareEnv points the fake installer at this test's files with t.Setenv.
	e := newPrepareEnv(t, 2)
	e.spec.OpenShift.ManualBootstrap = true
	res, err := e.prepare()
	require.NoError(t, err, e.status.String())
	dir := labdir.Assets(e.spec)

	assert.Equal(t, []string{
		"version",
		"coreos print-stream-json",
		"create manifests --dir " + dir,
		"create ignition-configs --dir " + dir,
		// What create ignition-configs found: the installer wrote true
		// (compute replicas 0), bootlab set false for 2 workers in between.
		"mastersSchedulable: false",
	}, e.calls(t))

	// RHCOS came from the local mirror, decompressed, into the cache.
	assert.Equal(t, filepath.Join(e.cache, "rhcos", "rhcos-9.6.20250402-0-qemu.x86_64.qcow2"), res.BaseImage)
	assert.Empty(t, e.spec.Image.Path, "Prepare leaves the spec as given")
	img, err := os.ReadFile(res.BaseImage)
	require.NoError(t, err)
	assert.Equal(t, e.mirror.image, img)

	// Kept copy of install-config, 0600, with the pull secret.
	ic, err := os.ReadFile(labdir.InstallConfigCopy(e.spec))
	require.NoError(t, err)
	assert.Contains(t, string(ic), "quay.io")
	assert.Contains(t, string(ic), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILabKey")
	assert.Equal(t, os.FileMode(0o600), mode(t, labdir.InstallConfigCopy(e.spec)))

	// Every asset is 0600: the fake writes Ignition and kubeconfig 0644.
	for _, f := range []string{"bootstrap.ign", "master.ign", "worker.ign", "auth/kubeconfig", "auth/kubeadmin-password", "metadata.json", ".openshift_install_state.json"} {
		assert.Equal(t, os.FileMode(0o600), mode(t, filepath.Join(dir, f)), f)
	}
	assert.Equal(t, os.FileMode(0o700), mode(t, dir))

	// One Ignition per node, 0600, valid (upstream tool), by role.
	require.Len(t, res.Assets.Ignition, len(e.spec.Nodes))
	for _, n := range e.spec.Nodes {
		p := labdir.Ignition(e.spec, n)
		assert.Equal(t, p, res.Assets.Ignition[n.Name])
		assert.Equal(t, os.FileMode(0o600), mode(t, p), n.Name)
		testutil.IgnitionValidate(t, p)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		switch n.Role {
		case spec.RoleBootstrap:
			manual, err := ignition.IsManualBootstrap(data)
			require.NoError(t, err)
			assert.True(t, manual, "manual bootstrap mode masks bootkube.service")
		case spec.RoleMaster:
			assert.Contains(t, string(data), "https://api-int.ocp.lab.local:22623/config/master")
		case spec.RoleWorker:
			assert.Contains(t, string(data), "https://api-int.ocp.lab.local:22623/config/worker")
		}
	}
	// The installer's own bootstrap.ign stays as it made it.
	orig, err := os.ReadFile(filepath.Join(dir, "bootstrap.ign"))
	require.NoError(t, err)
	manual, err := ignition.IsManualBootstrap(orig)
	require.NoError(t, err)
	assert.False(t, manual)

	// Running again converges: assets and image reused, nothing re-run.
	before := len(e.calls(t))
	e.spec.Image.Path = ""
	res, err = e.prepare()
	require.NoError(t, err)
	assert.True(t, res.Assets.Reused)
	assert.True(t, res.Image.Cached)
	assert.Equal(t, []string{"version", "coreos print-stream-json"}, e.calls(t)[before:])
}

func TestPrepareCompactClusterMakesMastersSchedulable(t *testing.T) {
	// Not parallel: newPrepareEnv points the fake installer at this test's files with t.Setenv.
	e := newPrepareEnv(t, 0)
	_, err := e.prepare()
	require.NoError(t, err, e.status.String())
	assert.Contains(t, e.calls(t), "mastersSchedulable: true")
	data, err := os.ReadFile(labdir.Ignition(e.spec, e.spec.Nodes[0]))
	require.NoError(t, err)
	manual, err := ignition.IsManualBootstrap(data)
	require.NoError(t, err)
	assert.False(t, manual, "bootkube.service runs by itself unless openshift.manualBootstrap")
}

func TestPrepareRejectsMalformedPullSecretBeforeAnythingRuns(t *testing.T) {
	// Not parallel: newPrepareEnv points the fake installer at this test's files with t.Setenv.
	e := newPrepareEnv(t, 2)
	require.NoError(t, os.WriteFile(e.spec.OpenShift.PullSecretFile, []byte(`{"auths": {"quay.io": {"auth": "bm9jb2xvbg=="}}}`), 0o600))
	_, err := e.prepare()
	require.Error(t, err)
	var pe *PullSecretError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), e.spec.OpenShift.PullSecretFile)
	assert.Nil(t, e.calls(t), "openshift-install never ran")
	assert.Empty(t, e.mirror.requests(), "nothing was downloaded")
	assert.NoDirExists(t, labdir.Assets(e.spec))
	assert.NoDirExists(t, filepath.Join(e.spec.LabDir, "ignition"))
}

func TestPrepareInstallerFailureWritesNoIgnition(t *testing.T) {
	// Not parallel: t.Setenv (FAKE_FAIL) changes the whole process's environment.
	e := newPrepareEnv(t, 2)
	t.Setenv("FAKE_FAIL", "create manifests")
	_, err := e.prepare()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "`openshift-install create manifests --dir")
	assert.Contains(t, err.Error(), "test double told to fail", "the installer's last lines are in the error")
	assert.NotContains(t, e.calls(t), "create ignition-configs --dir "+labdir.Assets(e.spec))
	assert.NoDirExists(t, filepath.Join(e.spec.LabDir, "ignition"))

	// Fixed, the next run starts the half-made asset directory over.
	t.Setenv("FAKE_FAIL", "")
	_, err = e.prepare()
	require.NoError(t, err, e.status.String())
	assert.FileExists(t, labdir.Ignition(e.spec, e.spec.Nodes[0]))
}

func TestPrepareMissingSSHKey(t *testing.T) {
	// Not parallel: newPrepareEnv points the fake installer at this test's files with t.Setenv.
	e := newPrepareEnv(t, 1)
	require.NoError(t, os.Remove(labdir.SSHKey(e.spec)+".pub"))
	_, err := e.prepare()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "openshift.sshPublicKeyFile")
	assert.Nil(t, e.calls(t))
}

func TestPrepareKeepsLabDirTraversable(t *testing.T) {
	// Not parallel: newPrepareEnv points the fake installer at this test's files with t.Setenv.
	e := newPrepareEnv(t, 1)
	e.spec.LabDir = filepath.Join(t.TempDir(), "fresh-lab")
	require.NoError(t, os.MkdirAll(filepath.Dir(labdir.SSHKey(e.spec)), 0o700))
	require.NoError(t, os.Chmod(filepath.Dir(labdir.SSHKey(e.spec)), 0o700))
	require.NoError(t, os.Chmod(e.spec.LabDir, 0o755))
	require.NoError(t, os.WriteFile(labdir.SSHKey(e.spec)+".pub", []byte("ssh-ed25519 AAAAC3Nza lab\n"), 0o644))
	_, err := e.prepare()
	require.NoError(t, err, e.status.String())
	assert.Equal(t, os.FileMode(0o755), mode(t, e.spec.LabDir))
	assert.Equal(t, os.FileMode(0o755), mode(t, filepath.Dir(labdir.Ignition(e.spec, e.spec.Nodes[0]))), "qemu must reach the Ignition files")
}

// A user key in openshift.sshPublicKeyFile joins the lab key in
// install-config sshKey: bootlab's own SSH (lab ssh, wait, stage, gather)
// logs in with the lab key, so the nodes must still accept it.
func TestPrepareUserSSHKeyKeepsLabKey(t *testing.T) {
	// Not parallel: newPrepareEnv points the fake installer at this test's files with t.Setenv.
	e := newPrepareEnv(t, 1)
	e.spec.OpenShift.SSHPublicKeyFile = writeFile(t, t.TempDir(), "me.pub", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIUserKey me@laptop\n")
	_, err := e.prepare()
	require.NoError(t, err, e.status.String())
	data, err := os.ReadFile(labdir.InstallConfigCopy(e.spec))
	require.NoError(t, err)
	var ic InstallConfig
	require.NoError(t, yaml.Unmarshal(data, &ic))
	assert.Equal(t, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIUserKey me@laptop\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILabKey bootlab-golden", ic.SSHKey)

	// The same key twice is listed once.
	e.spec.OpenShift.SSHPublicKeyFile = labdir.SSHKey(e.spec) + ".pub"
	keys, err := InstallSSHKeys(e.spec)
	require.NoError(t, err)
	assert.Equal(t, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILabKey bootlab-golden", keys)
}

func TestCheckInputs(t *testing.T) {
	// Not parallel: newPrepareEnv points the fake installer at this test's files with t.Setenv.
	e := newPrepareEnv(t, 1)
	_, err := CheckInputs(e.spec)
	require.NoError(t, err)

	e.spec.OpenShift.SSHPublicKeyFile = writeFile(t, t.TempDir(), "id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
	_, err = CheckInputs(e.spec)
	assert.ErrorContains(t, err, "is not an OpenSSH public key")
	e.spec.OpenShift.SSHPublicKeyFile = ""

	// image.path does not make the pull secret optional: install-config needs it.
	e.spec.Image.Path = writeFile(t, t.TempDir(), "rhcos.qcow2", "QFI")
	e.spec.OpenShift.PullSecretFile = ""
	_, err = CheckInputs(e.spec)
	var pe *PullSecretError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "openshift.pullSecretFile")
	assert.Contains(t, err.Error(), "even when image.path")
	assert.Nil(t, e.calls(t), "openshift-install never ran")
}

// Assets made from another install-config are not reused silently: they
// carry the old cluster's names, network and pull secret.
func TestPrepareRefusesAssetsOfAnotherInstallConfig(t *testing.T) {
	// Not parallel: newPrepareEnv points the fake installer at this test's files with t.Setenv.
	e := newPrepareEnv(t, 1)
	_, err := e.prepare()
	require.NoError(t, err, e.status.String())
	before := len(e.calls(t))

	e.spec.Cluster.Name = "other"
	e.spec.Network.CIDR = "192.168.140.0/24"
	e.spec.OpenShift.PullSecretFile = writeFile(t, t.TempDir(), "ps.json", `{"auths":{"quay.io":{"auth":"bmV3OlNFQ1JFVA=="}}}`)
	_, err = e.prepare()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "changed: metadata.name, networking.machineNetwork, pullSecret)")
	assert.Contains(t, err.Error(), labdir.Assets(e.spec))
	assert.Contains(t, err.Error(), "bootlab lab down")
	assert.NotContains(t, err.Error(), "bmV3OlNFQ1JFVA", "never the pull secret")
	assert.NotContains(t, e.calls(t)[before:], "create manifests --dir "+labdir.Assets(e.spec), "the installer made no new assets")
}
