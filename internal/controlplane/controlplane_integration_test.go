//go:build integration

package controlplane_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil/cptest"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/gobuild"
	"github.com/bootlab/bootlab/lab/release"
)

// buildTimeout covers a cold build of Kubernetes on a 2-core machine
// (about 8 minutes, docs/cache.md), once per cache.
const buildTimeout = 25 * time.Minute

// binaries returns the release's hyperkube and etcd, from the cache lab/gobuild's
// tests share in this run (BOOTLAB_GOBUILD_TEST_CACHE) or else bootlab's cache,
// where `lab up` of a rehearsal lab would build them anyway.
func binaries(t *testing.T) (kube, etcd *gobuild.Binary) {
	t.Helper()
	dir := os.Getenv(kubetest.SharedCacheEnv)
	if dir == "" {
		dir = cache.Dir()
	}
	r, err := release.For(testRelease())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	kc, err := gobuild.Kubernetes(r.Kubernetes)
	require.NoError(t, err)
	kube, err = gobuild.Ensure(ctx, dir, kc, nil)
	require.NoError(t, err)
	ec, err := gobuild.Etcd(r.Etcd.Module)
	require.NoError(t, err)
	etcd, err = gobuild.Ensure(ctx, dir, ec, nil)
	require.NoError(t, err)
	return kube, etcd
}

// programs links each Kubernetes program to hyperkube, as the Kubernetes
// volume has them on a node's PATH.
func programs(t *testing.T, kube *gobuild.Binary) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range kube.Component.Programs {
		require.NoError(t, os.Symlink(kube.Path, filepath.Join(dir, p)))
	}
	return dir
}

// The rendered pods' command lines run the release's real binaries: etcd
// serves TLS with client-certificate auth as stage 07's member does; the
// kube-apiserver started from its pod's command and flags (only the
// directory, addresses and ports moved to run on loopback) answers
// /readyz through kubectl; the controller manager and the scheduler,
// started from theirs, answer /healthz and take their leases through it.
// The files are the lab's: lab/probe's ControlPlaneTLS and an etcd pair
// signed by an etcd-signer, checked by CheckSecrets first.
func TestRenderedPodsRunTheRealControlPlane(t *testing.T) {
	t.Parallel()
	kube, etcdBin := binaries(t)
	bin := programs(t, kube)
	dir := t.TempDir()
	secrets := filepath.Join(dir, "bootstrap-secrets")
	require.NoError(t, os.MkdirAll(secrets, 0o700))
	files, ca := cptest.Secrets(t)
	etcdServer := writeEtcdAndKubeconfig(t, files, ca, secrets)
	for c := range files {
		require.NoError(t, os.WriteFile(filepath.Join(secrets, c), files[c], 0o600))
	}
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(secrets, name)) }
	for _, c := range controlplane.Components() {
		require.NoError(t, controlplane.CheckSecrets(c, read), c)
	}

	clientPort, peerPort := kubetest.FreePort(t), kubetest.FreePort(t)
	etcd := kubetest.Start(t, filepath.Join(dir, "etcd.log"), etcdBin.Path,
		"--name=etcd-bootstrap", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls=https://127.0.0.1:"+clientPort, "--advertise-client-urls=https://127.0.0.1:"+clientPort,
		"--cert-file="+etcdServer[0], "--key-file="+etcdServer[1],
		"--client-cert-auth", "--trusted-ca-file="+filepath.Join(secrets, controlplane.EtcdCABundle),
		"--listen-peer-urls=http://127.0.0.1:"+peerPort, "--initial-advertise-peer-urls=http://127.0.0.1:"+peerPort,
		"--initial-cluster=etcd-bootstrap=http://127.0.0.1:"+peerPort)

	// The release's rendered FeatureGate, as stage 05 writes it: the
	// binaries take the gates the lab passes them.
	in := controlplane.Input{AdvertiseAddress: "127.0.0.1", BindAddress: "127.0.0.1", SecretsDir: secrets,
		EtcdServers: "https://127.0.0.1:" + clientPort, APIPort: port(t), ControllerManagerPort: port(t), SchedulerPort: port(t),
		OpenShift: testRelease(), FeatureGates: controlplane.FeatureGates{Enabled: []string{"GatewayAPI", "OpenShiftPodSecurityAdmission"},
			Disabled: []string{"DynamicResourceAllocation"}}}
	require.NotEmpty(t, controlplane.KubernetesFeatureGates(in.FeatureGates, in.OpenShift), "the pods pass a feature gate")
	rewriteKubeconfig(t, secrets, in.APIPort)
	procs := map[controlplane.Component]*kubetest.Server{}
	startPod := func(c controlplane.Component) {
		p := controlplane.BootstrapPod(c, in, "")
		doc, err := yaml.Marshal(p.Pod)
		require.NoError(t, err)
		require.NoError(t, controlplane.CheckPod(c, in, doc), c)
		cmd := controlplane.CommandLine(p.Pod.Spec.Containers[0])
		procs[c] = kubetest.Start(t, filepath.Join(dir, string(c)+".log"), filepath.Join(bin, cmd[0]), cmd[1:]...)
	}
	startPod(controlplane.KubeAPIServer)

	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", filepath.Join(secrets, controlplane.Kubeconfig)}, args...)...).CombinedOutput()
		return string(out), err
	}
	start := time.Now()
	kubetest.WaitFor(t, 4*time.Minute, "kube-apiserver's /readyz through kubectl", procs[controlplane.KubeAPIServer], func() (string, bool) {
		out, err := kubectl("get", "--raw", "/readyz")
		return out, err == nil && out == "ok"
	})
	t.Logf("kube-apiserver ready %s after start", time.Since(start).Round(time.Second))
	// The others start once it is ready: a first lease request it refuses
	// (its RBAC roles not yet bootstrapped) is retried only a retry period
	// later.
	for _, c := range controlplane.Components() {
		if c != controlplane.KubeAPIServer {
			startPod(c)
		}
	}
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for c, p := range map[controlplane.Component]int{controlplane.KubeControllerManager: in.ControllerManagerPort, controlplane.KubeScheduler: in.SchedulerPort} {
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", p)
		kubetest.WaitFor(t, 3*time.Minute, string(c)+" /healthz", procs[c], func() (string, bool) {
			resp, err := insecure.Get(url)
			if err != nil {
				return err.Error(), false
			}
			defer resp.Body.Close()
			return resp.Status, resp.StatusCode == http.StatusOK
		})
		t.Logf("%s healthy %s after start", c, time.Since(start).Round(time.Second))
		lease := string(c)
		kubetest.WaitFor(t, 3*time.Minute, string(c)+" holds its lease", procs[c], func() (string, bool) {
			out, err := kubectl("get", "lease", lease, "-n", "kube-system", "-o", "jsonpath={.spec.holderIdentity}")
			return out, err == nil && out != ""
		})
		t.Logf("%s holds its lease %s after start", c, time.Since(start).Round(time.Second))
	}
	for _, c := range controlplane.Components() {
		t.Logf("BENCH control plane: %s RSS %s", c, kubetest.RSS(procs[c].Cmd.Process.Pid))
	}
	t.Logf("BENCH control plane: etcd RSS %s", kubetest.RSS(etcd.Cmd.Process.Pid))
	out, err := kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}")
	require.NoError(t, err, out)
	assert.Contains(t, out, "system:masters", "the kubeconfig's client certificate is the lab's admin")

	for _, c := range []controlplane.Component{controlplane.KubeScheduler, controlplane.KubeControllerManager} {
		kubetest.Stop(t, procs[c])
	}
	stopLikeTheKubeletStandIn(t, procs[controlplane.KubeAPIServer], kubectl)
	kubetest.Stop(t, etcd)
}

// releaseEnv names another release whose binaries the tests run
// (BOOTLAB_CONTROLPLANE_TEST_RELEASE=4.16 go test -tags integration
// ./internal/controlplane/), built into the cache first if they are not
// there; by default the lab's default release, 4.19.
const releaseEnv = "BOOTLAB_CONTROLPLANE_TEST_RELEASE"

// testRelease is the release whose binaries and flags the tests run.
func testRelease() string {
	if r := os.Getenv(releaseEnv); r != "" {
		return r
	}
	return "4.19"
}

// stopLikeTheKubeletStandIn stops the kube-apiserver as the kubelet
// stand-in stops a pod: SIGTERM, SIGKILL 10 s later. With OpenShift's
// --shutdown-delay-duration it says at once it is not ready (what takes
// it out of a load balancer) and still serves until killed.
func stopLikeTheKubeletStandIn(t *testing.T, s *kubetest.Server, kubectl func(...string) (string, error)) {
	t.Helper()
	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
	start := time.Now()
	kubetest.WaitFor(t, 10*time.Second, "kube-apiserver's /readyz failing after SIGTERM", s, func() (string, bool) {
		out, err := kubectl("get", "--raw", "/readyz")
		return out, err != nil
	})
	out, err := kubectl("get", "--raw", "/livez")
	assert.NoError(t, err, "kube-apiserver still serves during its shutdown delay: %s", out)
	t.Logf("BENCH control plane: kube-apiserver not ready %.1fs after SIGTERM, still serving (--shutdown-delay-duration=%s)",
		time.Since(start).Seconds(), controlplane.ShutdownDelay)
	time.Sleep(time.Until(start.Add(10 * time.Second)))
	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGKILL))
	<-s.Exited
}

// The release's kube-apiserver knows each Kubernetes gate the lab may pass
// (controlplane's table) from the minor the table says, and lists it as
// settable where the table says it is not locked.
func TestKubernetesGatesAreTheBinarysOwn(t *testing.T) {
	t.Parallel()
	kube, _ := binaries(t)
	bin := programs(t, kube)
	out, err := exec.Command(filepath.Join(bin, "kube-apiserver"), "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, g := range []string{"DynamicResourceAllocation", "MutatingAdmissionPolicy", "VolumeAttributesClass"} {
		on := controlplane.FeatureGates{Enabled: []string{g}}
		off := controlplane.FeatureGates{Disabled: []string{g}}
		passed := len(controlplane.KubernetesFeatureGates(on, testRelease()))+len(controlplane.KubernetesFeatureGates(off, testRelease())) == 2
		assert.Equal(t, passed, strings.Contains(string(out), g+"=true|false"),
			"Kubernetes %d.%d's kube-apiserver --help lists %s as settable exactly when the lab passes it either way", 1, controlplane.KubernetesMinor(testRelease()), g)
	}
}

func port(t *testing.T) int {
	p, err := strconv.Atoi(kubetest.FreePort(t))
	require.NoError(t, err)
	return p
}

// writeEtcdAndKubeconfig writes etcd's serving pair (signed by the etcd
// CA bundle's signer, for 127.0.0.1 and localhost) and returns its paths;
// the kubeconfig is rewritten once the API's port is known.
func writeEtcdAndKubeconfig(t *testing.T, files map[string][]byte, ca pki.Pair, dir string) [2]string {
	t.Helper()
	signer, err := pki.NewIntermediate(ca, "etcd-signer")
	require.NoError(t, err)
	serving, err := pki.NewLeaf(signer, "etcd-bootstrap", nil, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	client, err := pki.NewClient(signer, "etcd", nil)
	require.NoError(t, err)
	files[controlplane.EtcdCABundle] = append(append([]byte{}, signer.CertPEM...), ca.CertPEM...)
	files[controlplane.EtcdClientCert], files[controlplane.EtcdClientKey] = client.CertPEM, client.KeyPEM
	out := [2]string{filepath.Join(dir, "etcd-serving.crt"), filepath.Join(dir, "etcd-serving.key")}
	require.NoError(t, os.WriteFile(out[0], serving.CertPEM, 0o600))
	require.NoError(t, os.WriteFile(out[1], serving.KeyPEM, 0o600))
	admin, err := pki.NewClient(ca, "system:admin", []string{"system:masters"})
	require.NoError(t, err)
	files["admin.crt"], files["admin.key"] = admin.CertPEM, admin.KeyPEM
	return out
}

// rewriteKubeconfig writes the kubeconfig the pods read, as the
// installer's kubeconfig-loopback is: https://localhost:<port>, the lab CA
// and the admin's client certificate, embedded.
func rewriteKubeconfig(t *testing.T, dir string, apiPort int) {
	t.Helper()
	read := func(n string) string {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		return base64.StdEncoding.EncodeToString(b)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: ocp
  cluster: {server: "https://localhost:%d", certificate-authority-data: %s}
users:
- name: admin
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: admin
  context: {cluster: ocp, user: admin}
current-context: admin
`, apiPort, read(controlplane.RootCA), read("admin.crt"), read("admin.key"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, controlplane.Kubeconfig), []byte(kc), 0o600))
}
