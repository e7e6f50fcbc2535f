//go:build integration

package stages_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil/cptest"
	"github.com/bootlab/bootlab/scripts"
	"github.com/bootlab/bootlab/stages"
)

// sandbox is a bootstrap node made of this machine: each command runs in a
// fresh mount namespace where /etc, /opt, /var/log and /run are overlays
// whose upper layers live in root/, so /opt/openshift, /etc/kubernetes and
// the rest persist from stage to stage without touching the host. podman,
// oc, dig and curl are fakes (testdata/sandbox) that play the operator
// renders from the stage fixtures; bash, jq, cp and the stage scripts are real.
type sandbox struct {
	root, calls, fail string
	env               []string
}

// /usr/local holds the node's bootkube.sh and its helpers (bootkube fixtures).
var overlays = []string{"/etc", "/opt", "/var/log", "/run", "/usr/local"}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	require.Equal(t, 0, os.Geteuid(), "the sandbox test mounts overlays in a mount namespace: run it as root")
	for _, tool := range []string{"jq", "bash"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s is needed: apt-get install -y jq bash", tool)
	}
	root := t.TempDir()
	s := &sandbox{root: root, calls: filepath.Join(root, ".calls"), fail: filepath.Join(root, ".fail")}
	// An overlay's options name its directories with commas between.
	require.False(t, strings.ContainsAny(root, ",:"), "sandbox root %q has a comma or a colon", root)
	for _, o := range overlays {
		require.NoError(t, os.MkdirAll(filepath.Join(root, o), 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(root, ".work", o), 0o755))
	}
	bin, err := filepath.Abs(filepath.Join("testdata", "sandbox"))
	require.NoError(t, err)
	fixtures, err := filepath.Abs(filepath.Join("..", "testdata", "stages", "fixtures"))
	require.NoError(t, err)
	cert, key := filepath.Join(root, ".cert.pem"), filepath.Join(root, ".key.pem")
	// A self-signed pair whose key is its certificate's: the stand-ins copy
	// it where the renders' certificates go (stage 07's etcd client pair
	// too, which stage 08's check verifies against its CA bundle).
	pair, err := pki.NewCA("sandbox")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cert, pair.CertPEM, 0o644))
	require.NoError(t, os.WriteFile(key, pair.KeyPEM, 0o600))
	s.env = []string{
		"PATH=" + bin + ":/usr/sbin:/usr/bin:/sbin:/bin",
		"SANDBOX_FIXTURES=" + fixtures, "SANDBOX_CALLS=" + s.calls, "SANDBOX_FAIL=" + s.fail,
		"SANDBOX_CERT=" + cert, "SANDBOX_KEY=" + key,
	}
	s.installerAssets(t, fixtures, cert, key)
	return s
}

// installerAssets lays down what bootstrap.ign puts in /opt/openshift.
func (s *sandbox) installerAssets(t *testing.T, fixtures, cert, key string) {
	t.Helper()
	oo := filepath.Join(s.root, "opt", "openshift")
	copyFile := func(src, dst string, mode os.FileMode) {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, data, mode))
	}
	f01 := filepath.Join(fixtures, "01-openshift-manifests", "opt", "openshift", "manifests")
	for _, m := range []string{"cluster-config.yaml", "cluster-infrastructure-02-config.yml", "cluster-network-02-config.yml"} {
		copyFile(filepath.Join(f01, m), filepath.Join(oo, "manifests", m), 0o644)
	}
	copyFile(filepath.Join(f01, "99_feature-gate.yaml"), filepath.Join(oo, "openshift", "99_feature-gate.yaml"), 0o644)
	write := func(p, text string, mode os.FileMode) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), mode))
	}
	write(filepath.Join(oo, "openshift", "99_openshift-machineconfig_99-master-ssh.yaml"), "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 99-master-ssh\n", 0o644)
	write(filepath.Join(oo, "manifests", "cluster-authentication-02-config.yaml"), "apiVersion: config.openshift.io/v1\nkind: Authentication\nmetadata:\n  name: cluster\n", 0o644)
	write(filepath.Join(oo, "manifests", "openshift-config-secret-pull-secret.yaml"), "apiVersion: v1\nkind: Secret\nmetadata:\n  name: pull-secret\n  namespace: openshift-config\n", 0o644)
	kc := "apiVersion: v1\nkind: Config\nclusters: []\n"
	for _, k := range []string{"kubeconfig", "kubeconfig-loopback", "kubeconfig-kubelet"} {
		write(filepath.Join(oo, "auth", k), kc, 0o600)
	}
	for _, c := range []string{"root-ca.crt", "kube-apiserver-complete-client-ca-bundle.crt", "machine-config-server.crt"} {
		copyFile(cert, filepath.Join(oo, "tls", c), 0o644)
	}
	copyFile(key, filepath.Join(oo, "tls", "machine-config-server.key"), 0o600)
	write(filepath.Join(oo, "original_cvo_overrides.patch"), `{"spec":{"overrides":null}}`, 0o600)
	// The control plane's serving pairs, service-account keys and an admin
	// kubeconfig, as lab/probe writes them (stages 08-10's checks read them).
	cptest.Write(t, s.root)
}

func (s *sandbox) run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	type ran struct {
		code int
		err  error
	}
	done := make(chan ran, 1)
	// The command starts from an OS thread of its own, in a mount namespace
	// of its own where the overlays are mounted by this process: one
	// program (bash) per command. It was unshare, a bash, five mount
	// programs and a bash (80 ms of CPU before the command did anything on
	// this host, where process starts are most of the package's CPU), then
	// bash, mount -a and bash (32 ms).
	go func() {
		// Never unlocked: the thread, and its namespace, end with this
		// goroutine; the child keeps the namespace until it exits.
		runtime.LockOSThread()
		if err := s.enterNamespace(); err != nil {
			done <- ran{-1, err}
			return
		}
		c := exec.CommandContext(ctx, "bash", "-c", cmd)
		c.Env = s.env
		c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
		err := c.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			done <- ran{ee.ExitCode(), nil}
		} else if err != nil {
			done <- ran{-1, err}
		} else {
			done <- ran{0, nil}
		}
	}()
	r := <-done
	return r.code, r.err
}

// enterNamespace gives the calling (locked) thread a mount namespace of
// its own, private from the host's, with the sandbox's overlays.
func (s *sandbox) enterNamespace() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare the mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	for _, o := range overlays {
		opts := fmt.Sprintf("lowerdir=%[1]s,upperdir=%[2]s%[1]s,workdir=%[2]s/.work%[1]s", o, s.root)
		if err := unix.Mount("overlay", o, "overlay", 0, opts); err != nil {
			return fmt.Errorf("mount the overlay on %s (%s): %w", o, opts, err)
		}
	}
	return nil
}

func (s *sandbox) node() node.Node { return node.Command("sandbox", s.run) }

// validateRightAfter validates stage s on n, which it has just run: every
// check passes, and what the checks read came in one command (when they
// read more than one path), none of it asked of the node on its own.
func validateRightAfter(t *testing.T, ctx context.Context, n node.Node, s *stages.Stage, vars stages.Vars) {
	t.Helper()
	asked := &askedNode{Node: n}
	results := stages.Validate(ctx, asked, s, vars, stages.ValidateOptions{})
	assert.Empty(t, failures(results), "validate %s right after it ran", s.Label())
	var reads []string
	for _, c := range s.Checks {
		for _, p := range c.Reads {
			if !slices.Contains(reads, p) {
				reads = append(reads, p)
			}
		}
	}
	if len(reads) < 2 {
		return
	}
	for _, p := range reads {
		assert.NotContains(t, asked.paths, p, "validate %s: %s was read in the prefetch", s.Label(), p)
	}
}

// askedNode records the paths read or stat'ed on its node one at a time.
type askedNode struct {
	node.Node
	paths []string
}

func (a *askedNode) ReadFile(ctx context.Context, p string) ([]byte, error) {
	a.paths = append(a.paths, p)
	return a.Node.ReadFile(ctx, p)
}

func (a *askedNode) Stat(ctx context.Context, p string) (node.FileInfo, error) {
	a.paths = append(a.paths, p)
	return a.Node.Stat(ctx, p)
}

// serviceRecords reads /var/log/openshift/bootkube.json as the scripts wrote it.
func (s *sandbox) serviceRecords(t *testing.T) []map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.root, "var", "log", "openshift", "bootkube.json"))
	require.NoError(t, err)
	var recs []map[string]string
	require.NoError(t, json.Unmarshal(data, &recs), "bootkube.json is a JSON array")
	return recs
}

func TestSandboxRunsEveryStageThenValidates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := newSandbox(t)
	node := sb.node()
	var out bytes.Buffer
	vars := testVars("4.19")
	vars.ReleaseImage = "quay.io/example/release:4.19.10"
	r := &stages.Runner{Catalog: stages.Default(), Scripts: scripts.FS, Node: node, Vars: vars, Output: &out}

	for _, s := range r.Catalog {
		outcomes, err := r.Run(ctx, []*stages.Stage{s}, stages.Options{})
		require.NoError(t, err, "stage %s:\n%s", s.Label(), out.String())
		require.Equal(t, stages.ResultSuccess, outcomes[0].Result, s.Label())
		validateRightAfter(t, ctx, node, s, vars)
		// bootkube.json says "service end: success" only once bootkube is finished.
		recs := sb.serviceRecords(t)
		last := recs[len(recs)-1]
		assert.Equal(t, "service end", last["phase"], s.Label())
		if s.Number < 15 {
			assert.Equal(t, "stopped", last["result"], "%s leaves bootkube half done", s.Label())
			assert.Contains(t, last["errorMessage"], fmt.Sprintf("stage %s done; bootkube is not finished (no .bootkube.done); not run yet: %02d ", s.ID(), s.Number+1), s.Label())
		} else {
			assert.Equal(t, "success", last["result"], s.Label())
		}
	}
	log := out.String()
	for _, line := range []string{
		"[01 openshift-manifests] Moving OpenShift manifests in with the rest of them\n",
		"[02 release-image] VERSION=4.19.10\n",
		"[02 release-image] CLUSTER_ETCD_OPERATOR_IMAGE=quay.io/example/art@sha256:cluster-etcd-operator\n",
		"[07 etcd-bootstrap] Rendering CEO Manifests...\n",
		"[12 mco-bootstrap] Successfully resolved API_INT_URL api-int.ocp.lab.local\n",
		"[13 cb-bootstrap] https://localhost:2379 is healthy: successfully committed proposal: took = 2.1ms\n",
		"[13 cb-bootstrap] Starting cluster-bootstrap...\n",
		"[14 cvo-overrides] Waiting for CEO to finish...\n",
		"[15 check-api-url] Checking if api-int.ocp.lab.local of type API_INT_URL reachable\n",
		"[15 check-api-url] Success while trying to reach API_URL's https endpoint at https://api.ocp.lab.local:6443/readyz\n",
		"[15 check-api-url] bootkube.service complete\n",
	} {
		assert.Contains(t, log, line)
	}

	// Every bootkube marker is where bootkube would have put it.
	for _, s := range r.Catalog {
		for _, m := range s.MarkersFor(vars.Version) {
			_, err := os.Stat(filepath.Join(sb.root, "opt", "openshift", m))
			assert.NoError(t, err, "marker %s of stage %s", m, s.Label())
		}
	}
	// Nothing leaked onto the host.
	_, err := os.Stat("/opt/openshift")
	assert.True(t, os.IsNotExist(err), "the host has no /opt/openshift")

	// The service records have bootkube's shape and every named step.
	recs := sb.serviceRecords(t)
	var ended []string
	for _, rec := range recs {
		require.NotEmpty(t, rec["timestamp"])
		if rec["phase"] == "stage end" {
			assert.Equal(t, "success", rec["result"], rec["stage"])
			ended = append(ended, rec["stage"])
		}
	}
	assert.Equal(t, bootkubeSteps("4.19"), ended, "bootkube.json ends every bootkube stage, in order")
	assert.Equal(t, "service start", recs[0]["phase"])
	assert.Equal(t, "service end", recs[len(recs)-1]["phase"])

	// A second run skips everything that has a marker.
	before := len(sb.serviceRecords(t))
	outcomes, err := r.Run(ctx, r.Catalog, stages.Options{})
	require.NoError(t, err)
	for _, o := range outcomes {
		if o.Number == 2 {
			assert.Equal(t, stages.ResultSuccess, o.Result, "02 has no marker and runs again")
			continue
		}
		assert.Equal(t, stages.ResultSkipped, o.Result, "%02d", o.Number)
	}
	assert.Len(t, sb.serviceRecords(t), before+2, "only stage 02 ran (service start, service end)")

	// --force of 07 now would give etcd new certificates under everything
	// that used the old ones: refused, and nothing runs.
	out.Reset()
	before = len(sb.serviceRecords(t))
	etcd, err := r.Catalog.Lookup("07")
	require.NoError(t, err)
	_, err = r.Run(ctx, []*stages.Stage{etcd}, stages.Options{Force: true})
	var re *stages.RefusedError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, err.Error(), "--force 07 (etcd-bootstrap) refused: stage 08 (kube-apiserver-bootstrap) has run since")
	assert.Empty(t, out.String(), "no script ran")
	assert.Len(t, sb.serviceRecords(t), before, "nothing recorded")
}

// --force of the last stage that ran reruns it and its steps, from a
// clean render directory: a certificate of an earlier render must not
// survive (bootkube removes etcd-bootstrap/ too).
func TestSandboxForceRerunsTheLastStage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := newSandbox(t)
	var out bytes.Buffer
	vars := testVars("4.19")
	vars.ReleaseImage = "quay.io/example/release:4.19.10"
	r := &stages.Runner{Catalog: stages.Default(), Scripts: scripts.FS, Node: sb.node(), Vars: vars, Output: &out}
	sel, err := r.Catalog.Select(stages.Selection{To: "07"})
	require.NoError(t, err)
	_, err = r.Run(ctx, sel, stages.Options{})
	require.NoError(t, err, out.String())

	out.Reset()
	stale := filepath.Join(sb.root, "opt", "openshift", "etcd-bootstrap", "etc-kubernetes", "static-pod-resources", "etcd-member", "old-host.crt")
	require.NoError(t, os.WriteFile(stale, []byte("stale"), 0o600))
	_, err = r.Run(ctx, sel[len(sel)-1:], stages.Options{Force: true})
	require.NoError(t, err, out.String())
	assert.Contains(t, out.String(), "[07 etcd-bootstrap] Rendering CEO Manifests...\n")
	_, err = os.Stat(stale)
	assert.True(t, os.IsNotExist(err), "the forced rerun started from an empty etcd-bootstrap/")
}

func TestSandboxFailureIsRecordedLikeBootkube(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := newSandbox(t)
	require.NoError(t, os.WriteFile(sb.fail, []byte("cluster-etcd-operator"), 0o644))
	var out bytes.Buffer
	vars := testVars("4.19")
	vars.ReleaseImage = "quay.io/example/release:4.19.10"
	r := &stages.Runner{Catalog: stages.Default(), Scripts: scripts.FS, Node: sb.node(), Vars: vars, Output: &out}
	sel, err := r.Catalog.Select(stages.Selection{To: "08"})
	require.NoError(t, err)

	_, err = r.Run(ctx, sel, stages.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stage 07 (etcd-bootstrap): 07-etcd-bootstrap.sh exited 1")
	assert.Contains(t, err.Error(), "cluster-etcd-operator render failed (injected by the test)")
	_, err = os.Stat(filepath.Join(sb.root, "opt", "openshift", "etcd-bootstrap.done"))
	assert.True(t, os.IsNotExist(err), "no marker for a failed step")

	recs := sb.serviceRecords(t)
	last := recs[len(recs)-1]
	assert.Equal(t, "service end", last["phase"])
	assert.Equal(t, "failure", last["result"])
	stageEnd := recs[len(recs)-2]
	assert.Equal(t, "stage end", stageEnd["phase"])
	assert.Equal(t, "etcd-bootstrap", stageEnd["stage"])
	assert.Equal(t, "failure", stageEnd["result"])
	assert.NotEmpty(t, stageEnd["errorLine"])
}

// A failing image_for must stop stage 02, not leave empty image variables.
func TestSandboxImageForFailureStopsStage02(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.finishBefore(t, 2)
	require.NoError(t, os.WriteFile(sb.fail, []byte("release"), 0o644))
	var out bytes.Buffer
	vars := testVars("4.19")
	vars.ReleaseImage = "quay.io/example/release:4.19.10"
	r := &stages.Runner{Catalog: stages.Default(), Scripts: scripts.FS, Node: sb.node(), Vars: vars, Output: &out}
	s, err := r.Catalog.Lookup("02")
	require.NoError(t, err)
	_, err = r.Run(context.Background(), []*stages.Stage{s}, stages.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stage 02 (release-image): 02-release-image.sh exited 1")
	_, err = os.Stat(filepath.Join(sb.root, "opt", "openshift", "bootlab-images.env"))
	assert.True(t, os.IsNotExist(err), "no half-written images file")
}

// konnectivityAssets lays down the inputs the 4.22 installer writes into
// /opt/openshift when it enables konnectivity (our own minimal manifests).
func (s *sandbox) konnectivityAssets(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"openssl", "envsubst"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s is needed by the 4.22 konnectivity steps: apt-get install -y openssl gettext-base (scripts/host/setup.sh --test)", tool)
	}
	oo := filepath.Join(s.root, "opt", "openshift")
	for name, text := range map[string]string{
		"konnectivity-server-pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: konnectivity-server\n  namespace: kube-system\nspec:\n  hostNetwork: true\n  containers:\n  - name: konnectivity-server\n    image: ${KONNECTIVITY_IMAGE}\n    args: [--bind-address=${BOOTSTRAP_NODE_IP}]\n",
		"konnectivity-namespace.yaml":  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: openshift-bootstrap-konnectivity\n",
		"konnectivity-agent-certs-secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: konnectivity-agent-certs\n  namespace: openshift-bootstrap-konnectivity\n" +
			"data:\n  tls.crt: ${KONNECTIVITY_AGENT_CERT_BASE64}\n  tls.key: ${KONNECTIVITY_AGENT_KEY_BASE64}\n  ca.crt: ${KONNECTIVITY_CA_CERT_BASE64}\n",
		"konnectivity-agent-daemonset.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: konnectivity-agent\n  namespace: openshift-bootstrap-konnectivity\n" +
			"spec:\n  template:\n    spec:\n      containers:\n      - name: konnectivity-agent\n        image: ${KONNECTIVITY_IMAGE}\n        args: [--proxy-server-host=${BOOTSTRAP_NODE_IP}]\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(oo, name), []byte(text), 0o600))
	}
	s.env = append(s.env, "BOOTSTRAP_NODE_IP=192.168.126.10")
}

// callLine is the first recorded podman/oc call that contains every part.
func callLine(calls string, parts ...string) string {
	for _, l := range strings.Split(calls, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return l
		}
	}
	return ""
}

// The flags and steps a release lacks are left out when the scripts really
// run, release by release, through the MCO stage.
func TestSandboxVersionGating(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version                          string
		featureGates, kubeVersion, auth  bool
		logDriver, imageRefs, cvManifest bool
		konnectivity                     bool
		platformPods                     []string
	}{
		{version: "4.16"},
		{version: "4.17", featureGates: true},
		{version: "4.18", featureGates: true, kubeVersion: true},
		{version: "4.19", featureGates: true, kubeVersion: true, auth: true, platformPods: []string{"aws"}},
		{version: "4.20", featureGates: true, kubeVersion: true, auth: true, platformPods: []string{"aws"}},
		{version: "4.21", featureGates: true, kubeVersion: true, auth: true, logDriver: true, imageRefs: true,
			platformPods: []string{"aws", "azure"}},
		{version: "4.22", featureGates: true, kubeVersion: true, auth: true, logDriver: true, imageRefs: true,
			cvManifest: true, konnectivity: true, platformPods: []string{"aws", "azure"}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t)
			sb.env = append(sb.env, "SANDBOX_MCO_PLATFORMS=aws azure", "SANDBOX_VERSION="+tc.version+".3")
			// The konnectivity inputs are there for every release: only 4.22 uses them.
			sb.konnectivityAssets(t)
			// Upstream's guard tests manifests/openshift-lbconfig-custom-dns.yaml
			// and passes manifests/openshift-lb-config.yaml; the installer writes
			// only openshift/openshift-lb-config.yaml. 4.16 runs without the
			// guard file, as every installer-made tree does.
			assets := filepath.Join(sb.root, "opt", "openshift")
			lbConfig := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lbconfig\n")
			require.NoError(t, os.WriteFile(filepath.Join(assets, "openshift", "openshift-lb-config.yaml"), lbConfig, 0o644))
			lbGuard := tc.version != "4.16"
			if lbGuard {
				require.NoError(t, os.WriteFile(filepath.Join(assets, "manifests", "openshift-lbconfig-custom-dns.yaml"), lbConfig, 0o644))
			}
			var out bytes.Buffer
			vars := testVars(tc.version)
			vars.ReleaseImage = "quay.io/example/release:" + tc.version + ".3"
			r := &stages.Runner{Catalog: stages.Default(), Scripts: scripts.FS, Node: sb.node(), Vars: vars, Output: &out}
			sel, err := r.Catalog.Select(stages.Selection{To: "12"})
			require.NoError(t, err)
			outcomes, err := r.Run(context.Background(), sel, stages.Options{})
			require.NoError(t, err, out.String())
			data, err := os.ReadFile(sb.calls)
			require.NoError(t, err)
			calls := string(data)

			cvo := callLine(calls, "--name cvo-render")
			kas := callLine(calls, "--name kube-apiserver-render")
			mco := callLine(calls, "--name mco-render")
			require.NotEmpty(t, cvo, "the CVO render ran")
			require.NotEmpty(t, kas, "the KAS render ran")
			require.NotEmpty(t, mco, "the MCO render ran")
			assert.Equal(t, tc.featureGates, strings.Contains(cvo, "--feature-gate-manifest-path=/assets/manifests/99_feature-gate.yaml"), cvo)
			assert.Equal(t, tc.cvManifest, strings.Contains(cvo, "--cluster-version-manifest-path=/assets/manifests/cvo-overrides.yaml"), cvo)
			assert.Equal(t, tc.kubeVersion, strings.Contains(kas, "--operand-kubernetes-version=1.32.7"), kas)
			assert.Equal(t, tc.kubeVersion, strings.Contains(calls, "jsonpath={.displayVersions.kubernetes.Version}"), "oc asked for the Kubernetes version")
			assert.Equal(t, tc.kubeVersion, strings.Contains(out.String(), "KUBERNETES_VERSION="), "stage 02 prints KUBERNETES_VERSION")
			assert.Equal(t, tc.auth, strings.Contains(calls, "image cluster-authentication-operator"), "image_for of the auth operator")
			assert.Equal(t, tc.auth, strings.Contains(calls, "--name auth-api-render"), "the auth-api render")
			assert.Equal(t, tc.logDriver, strings.Contains(kas, "--log-driver=k8s-file"), kas)
			assert.Equal(t, tc.logDriver, strings.Contains(callLine(calls, "--name etcdctl"), "--log-driver=k8s-file") ||
				strings.Contains(callLine(calls, "--name node-tuning-render"), "--log-driver=k8s-file"), "every bootkube container")
			assert.NotEmpty(t, callLine(calls, "--name node-tuning-render"), "the node tuning render has upstream's container name")
			assert.Equal(t, lbGuard, strings.Contains(mco, "--cloud-lb-config-file=/assets/manifests/openshift-lb-config.yaml"), mco)
			assert.NotContains(t, mco, "--cloud-lb-config-file=/assets/manifests/openshift-lbconfig-custom-dns.yaml", "upstream never passes the guard's name")

			etc := filepath.Join(sb.root, "etc")
			_, err = os.Stat(filepath.Join(etc, "mcc", "bootstrap", "image-references"))
			assert.Equal(t, tc.imageRefs, err == nil, "image-references in /etc/mcc/bootstrap")
			for _, p := range []string{"aws", "azure"} {
				_, err = os.Stat(filepath.Join(etc, "kubernetes", "manifests", "coredns-"+p+".yaml"))
				assert.Equal(t, slices.Contains(tc.platformPods, p), err == nil, "%s static pod copied", p)
			}
			_, err = os.Stat(filepath.Join(etc, "kubernetes", "manifests", "konnectivity-server-pod.yaml"))
			assert.Equal(t, tc.konnectivity, err == nil, "konnectivity server static pod")
			_, err = os.Stat(filepath.Join(sb.root, "opt", "openshift", "konnectivity-certs.done"))
			assert.Equal(t, tc.konnectivity, err == nil, "konnectivity-certs.done")

			if tc.auth {
				assert.Equal(t, stages.ResultSuccess, outcomes[3].Result)
			} else {
				assert.Equal(t, stages.ResultSkipped, outcomes[3].Result)
				assert.Contains(t, outcomes[3].Reason, "auth-api-bootstrap arrived in 4.19")
			}

			// The scripts record this release's steps, in its order, through cco-bootstrap.
			var ended []string
			for _, rec := range sb.serviceRecords(t) {
				if rec["phase"] == "stage end" {
					ended = append(ended, rec["stage"])
				}
			}
			want := bootkubeSteps(tc.version)
			want = want[:slices.Index(want, "cco-bootstrap")+1]
			assert.Equal(t, want, ended, "bootkube.json of stages 01-12")
		})
	}
}

// 4.22 with konnectivity on: every stage runs, the konnectivity steps are
// recorded and marked where bootkube has them, the server pod starts in 08
// and is gone after 14, and the agents' manifests reach manifests/.
func TestSandboxNewestReleaseWithKonnectivity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := newSandbox(t)
	sb.konnectivityAssets(t)
	sb.env = append(sb.env, "SANDBOX_ETCD=3.6.5") // 4.22's etcd
	sb.env = append(sb.env, "SANDBOX_VERSION=4.22.1")
	node := sb.node()
	var out bytes.Buffer
	vars := testVars("4.22")
	vars.ReleaseImage = "quay.io/example/release:4.22.1"
	r := &stages.Runner{Catalog: stages.Default(), Scripts: scripts.FS, Node: node, Vars: vars, Output: &out}
	oo := filepath.Join(sb.root, "opt", "openshift")
	serverPod := filepath.Join(sb.root, "etc", "kubernetes", "manifests", "konnectivity-server-pod.yaml")
	for _, s := range r.Catalog {
		outcomes, err := r.Run(ctx, []*stages.Stage{s}, stages.Options{})
		require.NoError(t, err, "stage %s:\n%s", s.Label(), out.String())
		require.Equal(t, stages.ResultSuccess, outcomes[0].Result, s.Label())
		validateRightAfter(t, ctx, node, s, vars)
		if s.Number == 8 {
			pod, err := os.ReadFile(serverPod)
			require.NoError(t, err, "stage 08 starts the konnectivity server")
			assert.Contains(t, string(pod), "image: quay.io/example/art@sha256:apiserver-network-proxy")
			assert.Contains(t, string(pod), "--bind-address=192.168.126.10")
		}
	}
	for _, line := range []string{
		"[08 kube-apiserver-bootstrap] Konnectivity agents will dial 192.168.126.10\n",
		"[08 kube-apiserver-bootstrap] Creating Konnectivity server static pod manifest...\n",
		"[08 kube-apiserver-bootstrap] Creating Konnectivity agent manifests...\n",
		"[14 cvo-overrides] Cleaning up bootstrap konnectivity resources...\n",
		"[14 cvo-overrides] namespace \"openshift-bootstrap-konnectivity\" deleted\n",
	} {
		assert.Contains(t, out.String(), line)
	}
	_, err := os.Stat(serverPod)
	assert.True(t, os.IsNotExist(err), "konnectivity-cleanup removed the server pod")

	// The agents' secret carries the certificates stage 08 made, signed by its CA.
	secret, err := os.ReadFile(filepath.Join(oo, "manifests", "konnectivity-agent-certs.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(secret), "${", "every variable substituted")
	ca, err := os.ReadFile(filepath.Join(oo, "tls", "konnectivity", "ca.crt"))
	require.NoError(t, err)
	assert.Contains(t, string(secret), "ca.crt: "+base64.StdEncoding.EncodeToString(ca))
	server := readCert(t, filepath.Join(oo, "tls", "konnectivity", "server.crt"))
	require.Len(t, server.IPAddresses, 1)
	assert.Equal(t, "192.168.126.10", server.IPAddresses[0].String())
	key, err := os.Stat(filepath.Join(oo, "tls", "konnectivity", "agent.key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), key.Mode().Perm(), "keys are 0600")
	_, err = os.Stat(filepath.Join(oo, "manifests", "konnectivity-agent-daemonset.yaml"))
	assert.NoError(t, err)

	for _, s := range r.Catalog {
		for _, m := range s.MarkersFor(vars.Version) {
			_, err := os.Stat(filepath.Join(oo, m))
			assert.NoError(t, err, "marker %s of stage %s", m, s.Label())
		}
	}
	var ended []string
	for _, rec := range sb.serviceRecords(t) {
		if rec["phase"] == "stage end" {
			assert.Equal(t, "success", rec["result"], rec["stage"])
			ended = append(ended, rec["stage"])
		}
	}
	assert.Equal(t, bootkubeSteps("4.22"), ended, "bootkube.json ends every 4.22 step, in order")
}

// On 4.22 without the installer's konnectivity inputs the steps are left
// out and stage 08 says why.
func TestSandboxKonnectivityOff(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.env = append(sb.env, "SANDBOX_VERSION=4.22.1")
	var out bytes.Buffer
	vars := testVars("4.22")
	vars.ReleaseImage = "quay.io/example/release:4.22.1"
	r := &stages.Runner{Catalog: stages.Default(), Scripts: scripts.FS, Node: sb.node(), Vars: vars, Output: &out}
	sel, err := r.Catalog.Select(stages.Selection{To: "08"})
	require.NoError(t, err)
	_, err = r.Run(context.Background(), sel, stages.Options{})
	require.NoError(t, err, out.String())
	assert.Contains(t, out.String(), "[08 kube-apiserver-bootstrap] konnectivity is off for this cluster (no /opt/openshift/konnectivity-server-pod.yaml from the installer): skipping its steps\n")
	_, err = os.Stat(filepath.Join(sb.root, "opt", "openshift", "konnectivity-certs.done"))
	assert.True(t, os.IsNotExist(err), "no konnectivity marker")
}

// Run by hand on a release without the step, script 04 says so and exits 0
// instead of failing on an unset AUTH_OPERATOR_IMAGE.
func TestSandboxScript04ByHandBefore419(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.env = append(sb.env, "SANDBOX_VERSION=4.18.3")
	s, err := stages.Default().Lookup("04")
	require.NoError(t, err)
	vars := testVars("4.18")
	vars.ReleaseImage = "quay.io/example/release:4.18.3"
	script, err := stages.RenderScript(scripts.FS, s, vars)
	require.NoError(t, err)
	var out bytes.Buffer
	code, err := sb.run(context.Background(), "bash -s", bytes.NewReader(script), &out, &out)
	require.NoError(t, err)
	assert.Equal(t, 0, code, out.String())
	assert.Contains(t, out.String(), "OpenShift 4.18 has no auth-api-bootstrap step (it arrived in 4.19): skipping")
	_, err = os.Stat(filepath.Join(sb.root, "opt", "openshift", "auth-api-bootstrap.done"))
	assert.True(t, os.IsNotExist(err), "no marker for a step that does not exist")
}

// readCert parses the first PEM certificate of file.
func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	block, _ := pem.Decode(data)
	require.NotNil(t, block, "%s holds a PEM block", file)
	c, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return c
}
