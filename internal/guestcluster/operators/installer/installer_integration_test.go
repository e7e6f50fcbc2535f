//go:build integration

package installer

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
	"github.com/bootlab/bootlab/lab/probe"
)

// A master's kube-apiserver as upstream gets it, on loopback with the
// release's real binaries: the bootstrap API (kubetest's) holds the
// openshift-kube-apiserver secrets and configmaps stage 13 creates, with
// the bootstrap's service-account keys; the installer stand-in copies them
// into static-pod-resources and writes the pod; the real kubelet stand-in
// starts kube-apiserver from it (its container paths mapped to the host's
// as the stand-in does on a node). The master's API then serves the
// bootstrap's data (one etcd), a service-account token the bootstrap
// issued stays valid on it, and its serving certificate is the lab's.
func TestInstallerStartsARealMasterAPI(t *testing.T) {
	// The bootstrap's etcd prefix, OpenShift's, as stage 08's pod has it.
	cp, _ := realControlPlane(t, "--etcd-prefix=kubernetes.io")
	dir := t.TempDir()
	files := masterLabFiles(t, cp, dir)
	kc := func(args ...string) string {
		out, err := cp.Kubectl(args...)
		require.NoError(t, err, "%v: %s", args, out)
		return strings.TrimSpace(out)
	}
	kc("create", "namespace", controlplane.MasterNamespace)
	createMasterObjects(t, kc, files)
	kc("create", "configmap", "made-at-13", "-n", "kube-system", "--from-literal=by=bootstrap")
	kc("create", "serviceaccount", "learner", "-n", "default")
	token := kc("create", "token", "learner", "-n", "default")

	src, err := NewAPISource(cp.EmbeddedKubeconfig(t, dir), nil)
	require.NoError(t, err)
	port, err := strconv.Atoi(kubetest.FreePort(t))
	require.NoError(t, err)
	// The advertised address is not loopback: the API refuses that in the
	// kubernetes service's endpoints.
	in := controlplane.MasterInput{AdvertiseAddress: "192.0.2.3", BindAddress: "127.0.0.1", APIPort: port,
		ResourcesDir: filepath.Join(dir, "static-pod-resources"), EtcdServers: []string{"http://127.0.0.1:" + cp.EtcdPort}}
	manifests := filepath.Join(dir, "manifests")
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	etcdFiles := MasterEtcdFiles(files[controlplane.EtcdCABundle], files[controlplane.EtcdClientCert], files[controlplane.EtcdClientKey])
	inst := &Installer{Log: log, Operand: controlplane.KubeAPIServerOperand, Source: Sources{etcdFiles, src}, StaticPodDir: manifests, Input: in}
	require.NoError(t, inst.Install(context.Background()))
	for _, r := range controlplane.MasterResources() {
		fi, err := os.Stat(filepath.Join(in.HostDir(r.Dir), r.Rel()))
		require.NoError(t, err)
		want := os.FileMode(0o644)
		if r.Secret() {
			want = 0o600
		}
		assert.Equal(t, want, fi.Mode().Perm(), r.Rel())
	}

	t.Setenv("PATH", cp.Bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	state := filepath.Join(dir, "kubelet.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go kubelet.New(log, manifests, nil).WithPaths(state, filepath.Join(dir, "pods")).Run(ctx)

	// An empty kubeconfig: the flags say everything.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "none"), nil, 0o600))
	master := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(cp.Bin, "kubectl"), append([]string{"--server=https://localhost:" + strconv.Itoa(port),
			"--certificate-authority=" + files["lab-ca.crt"], "--kubeconfig=" + filepath.Join(dir, "none")}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	asAdmin := []string{"--client-certificate=" + cp.Files["admin.crt"], "--client-key=" + cp.Files["admin.key"]}
	start := time.Now()
	kubetest.WaitFor(t, 2*time.Minute, "the master kube-apiserver's /readyz", &kubetest.Server{Name: "master kube-apiserver", Exited: make(chan struct{})}, func() (string, bool) {
		out, err := master(append(asAdmin, "get", "--raw", "/readyz")...)
		return out + " " + podLog(dir), err == nil && out == "ok"
	})
	t.Logf("BENCH master kube-apiserver: ready %s after its pod landed; RSS %s", time.Since(start).Round(time.Second), kubetest.RSS(runningPID(t, state)))

	out, err := master(append(asAdmin, "get", "configmap", "made-at-13", "-n", "kube-system", "-o", "jsonpath={.data.by}")...)
	require.NoError(t, err, out)
	assert.Equal(t, "bootstrap", out, "the master serves what the bootstrap API created")
	out, err = master("--token="+token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	require.NoError(t, err, out)
	assert.Equal(t, "system:serviceaccount:default:learner", out, "the bootstrap's token is valid on the master")

	require.NoError(t, os.Remove(filepath.Join(manifests, "kube-apiserver-pod.yaml")))
	require.Eventually(t, func() bool {
		pods, err := kubelet.LoadState(state)
		return err == nil && len(pods) == 0
	}, 30*time.Second, 500*time.Millisecond, "the kubelet stand-in stops the pod whose manifest went")
}

// masterLabFiles writes the bootstrap's files the master's objects carry:
// the lab's serving pairs and kubelet client (lab/probe's), the bootstrap
// API's service-account keys and client CA (kubetest's, so its tokens and
// admin stay valid), and an etcd client pair (unused over kubetest's
// plain-HTTP etcd). It returns their paths by the bootstrap's names.
func masterLabFiles(t *testing.T, cp *kubetest.ControlPlane, dir string) map[string]string {
	t.Helper()
	ca, err := pki.NewCA("bootlab-test-root")
	require.NoError(t, err)
	data := map[string][]byte{"lab-ca.crt": ca.CertPEM, controlplane.EtcdCABundle: ca.CertPEM}
	tls, err := probe.ControlPlaneTLS(ca, "ocp.lab.local", controlplane.DefaultServiceCIDR)
	require.NoError(t, err)
	for _, f := range tls {
		data[f.Name] = f.Data
	}
	client, err := pki.NewClient(ca, "etcd", nil)
	require.NoError(t, err)
	data[controlplane.EtcdClientCert], data[controlplane.EtcdClientKey] = client.CertPEM, client.KeyPEM
	for name, from := range map[string]string{controlplane.ServiceAccountKey: "sa.key", controlplane.ServiceAccountPub: "sa.pub", controlplane.ClientCABundle: "ca.crt"} {
		data[name], err = os.ReadFile(cp.Files[from])
		require.NoError(t, err)
	}
	paths := map[string]string{}
	src := filepath.Join(dir, "bootstrap-secrets")
	require.NoError(t, os.MkdirAll(src, 0o700))
	for name, b := range data {
		paths[name] = filepath.Join(src, name)
		require.NoError(t, os.WriteFile(paths[name], b, 0o600))
	}
	return paths
}

// createMasterObjects creates the master's secrets and configmaps in the
// bootstrap API from the bootstrap's files, as stage 13 creates them; the
// etcd ones the master has as files.
func createMasterObjects(t *testing.T, kc func(...string) string, files map[string]string) {
	t.Helper()
	keys := map[string][]string{}
	var order []string
	for _, r := range controlplane.MasterResources() {
		if r.NodeFile {
			continue
		}
		id := r.Kind + " " + r.Name
		if _, ok := keys[id]; !ok {
			order = append(order, id)
		}
		keys[id] = append(keys[id], "--from-file="+r.Key+"="+files[r.Bootstrap])
	}
	for _, id := range order {
		kind, name, _ := strings.Cut(id, " ")
		args := []string{"create", "configmap", name}
		if kind == "secrets" {
			args = []string{"create", "secret", "generic", name}
		}
		kc(append(append(args, "-n", controlplane.MasterNamespace), keys[id]...)...)
	}
}

// podLog is the end of the master kube-apiserver's log, for a failure.
func podLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "pods", controlplane.MasterNamespace+"_kube-apiserver", "kube-apiserver.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// runningPID is the pid of the stand-in's one running pod.
func runningPID(t *testing.T, state string) int {
	t.Helper()
	pods, err := kubelet.LoadState(state)
	require.NoError(t, err)
	for _, p := range pods {
		if p.Running {
			return p.PID
		}
	}
	require.FailNow(t, "no running pod in "+state)
	return 0
}

// realControlPlane starts the default release's etcd and kube-apiserver
// on loopback (built once into the run's shared cache) and returns them
// with the etcd binary.
func realControlPlane(t *testing.T, apiArgs ...string) (*kubetest.ControlPlane, string) {
	t.Helper()
	rel := kuberelease.Build(t, kuberelease.DefaultMinor)
	return kubetest.StartControlPlane(t, rel.Etcd, rel.Programs, apiArgs...), rel.Etcd
}
