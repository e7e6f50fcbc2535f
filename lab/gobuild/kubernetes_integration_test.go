//go:build integration

package gobuild

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"fmt"
	"net"
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

	"github.com/bootlab/bootlab/lab/pki"
	"github.com/bootlab/bootlab/lab/release"
)

// buildTimeout is generous: the cold build of Kubernetes on a fresh
// 2-core CI machine takes about ten minutes (docs/cache.md), once per
// test run.
const buildTimeout = 25 * time.Minute

// sharedCacheEnv names the cache directory every test of this run shares,
// so each component is built once however many tests use it.
const sharedCacheEnv = "BOOTLAB_GOBUILD_TEST_CACHE"

func TestMain(m *testing.M) {
	os.Exit(runWithSharedCache(m))
}

func runWithSharedCache(m *testing.M) int {
	if os.Getenv(sharedCacheEnv) == "" {
		dir, err := os.MkdirTemp("", "bootlab-gobuild-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		os.Setenv(sharedCacheEnv, dir)
	}
	return m.Run()
}

// ensureShared returns the default release's component from the run's
// shared cache, building it the first time.
func ensureShared(t *testing.T, c Component) *Binary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	b, err := Ensure(ctx, os.Getenv(sharedCacheEnv), c, nil)
	require.NoError(t, err)
	if b.Built {
		fi, err := os.Stat(b.Path)
		require.NoError(t, err)
		t.Logf("%s %s: built in %s, %d bytes", c.Name, c.Version, b.Took.Round(time.Second), fi.Size())
	}
	return b
}

func defaultKubernetes(t *testing.T) (release.Release, *Binary) {
	t.Helper()
	r, err := release.For("4.19")
	require.NoError(t, err)
	c, err := Kubernetes(r.Kubernetes)
	require.NoError(t, err)
	return r, ensureShared(t, c)
}

// links makes a directory where each of the binary's program names is a
// symlink to it, as the nodes will have them.
func links(t *testing.T, b *Binary) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range b.Component.Programs {
		require.NoError(t, os.Symlink(b.Path, filepath.Join(dir, p)))
	}
	return dir
}

// The multi-call binary is static and is each program by its name, and
// by its first argument when called hyperkube; every program reports the
// release's Kubernetes version.
func TestKubernetesBinaryAnswersByName(t *testing.T) {
	r, b := defaultKubernetes(t)
	f, err := elf.Open(b.Path)
	require.NoError(t, err)
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "hyperkube must be static")
	}
	f.Close()
	bin := links(t, b)
	want := "Kubernetes v" + r.Kubernetes + "\n"
	for _, args := range [][]string{
		{"kube-apiserver", "--version"}, {"kube-controller-manager", "--version"},
		{"kube-scheduler", "--version"}, {"hyperkube", "kube-apiserver", "--version"},
	} {
		out, err := exec.Command(filepath.Join(bin, args[0]), args[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
		assert.Equal(t, want, string(out), "%v", args)
	}
	for _, args := range [][]string{{"kubectl", "version", "--client"}, {"hyperkube", "kubectl", "version", "--client"}} {
		out, err := exec.Command(filepath.Join(bin, args[0]), args[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
		assert.Contains(t, string(out), "Client Version: v"+r.Kubernetes+"\n", "%v", args)
	}
	out, err := exec.Command(filepath.Join(bin, "hyperkube"), "kubelet").CombinedOutput()
	assert.Error(t, err, "hyperkube has no kubelet")
	assert.Contains(t, string(out), "hyperkube NAME [ARGS]")
}

// The release's kube-apiserver really serves: against a real etcd on
// loopback, with RBAC, a client CA and an admin certificate from lab/pki;
// kubectl (the same binary) reads /readyz and writes and reads back
// kube-system/bootstrap; both servers stop on SIGTERM.
func TestKubeAPIServerServesOnEtcd(t *testing.T) {
	r, kube := defaultKubernetes(t)
	ec, err := Etcd(r.Etcd.Module)
	require.NoError(t, err)
	etcd := ensureShared(t, ec)
	bin := links(t, kube)
	dir := t.TempDir()

	clientPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	etcdProc := start(t, filepath.Join(dir, "etcd.log"), etcd.Path,
		"--name=test", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:"+clientPort, "--advertise-client-urls=http://127.0.0.1:"+clientPort,
		"--listen-peer-urls=http://127.0.0.1:"+peerPort, "--initial-advertise-peer-urls=http://127.0.0.1:"+peerPort,
		"--initial-cluster=test=http://127.0.0.1:"+peerPort)

	files := writeAPIServerFiles(t, dir, apiPort)
	api := start(t, filepath.Join(dir, "kube-apiserver.log"), filepath.Join(bin, "kube-apiserver"),
		"--bind-address=127.0.0.1", "--secure-port="+apiPort, "--cert-dir="+filepath.Join(dir, "serving"),
		"--etcd-servers=http://127.0.0.1:"+clientPort,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+files["sa.pub"], "--service-account-signing-key-file="+files["sa.key"],
		"--service-cluster-ip-range=172.30.0.0/16", "--authorization-mode=RBAC",
		"--client-ca-file="+files["ca.crt"])

	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", files["kubeconfig"]}, args...)...).CombinedOutput()
		return string(out), err
	}
	ready := time.Now()
	waitFor(t, 4*time.Minute, "kube-apiserver's /readyz through kubectl", api, func() (string, bool) {
		out, err := kubectl("get", "--raw", "/readyz")
		return out, err == nil && out == "ok"
	})
	t.Logf("kube-apiserver ready %s after etcd; RSS %s", time.Since(ready).Round(time.Second), rss(api.cmd.Process.Pid))
	waitFor(t, 2*time.Minute, "kubectl create configmap kube-system/bootstrap", api, func() (string, bool) {
		out, err := kubectl("create", "configmap", "bootstrap", "-n", "kube-system", "--from-literal=status=complete")
		return out, err == nil // kube-system may not exist for a moment after readyz
	})
	out, err := kubectl("get", "configmap", "bootstrap", "-n", "kube-system", "-o", "jsonpath={.data.status}")
	require.NoError(t, err, out)
	assert.Equal(t, "complete", out)
	out, err = kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	require.NoError(t, err, out)
	assert.Equal(t, "admin", out, "kubectl authenticates with the admin certificate from lab/pki")

	for _, p := range []*server{api, etcdProc} {
		stop(t, p)
	}
	for _, port := range []string{apiPort, clientPort} {
		_, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		assert.Error(t, err, "nothing listens on %s after both stopped", port)
	}
}

// writeAPIServerFiles writes the client CA, the admin's certificate, the
// service-account key pair and a kubeconfig, returning their paths. The
// kubeconfig trusts the serving certificate kube-apiserver writes into
// --cert-dir, which the caller waits for through kubectl.
func writeAPIServerFiles(t *testing.T, dir, apiPort string) map[string]string {
	t.Helper()
	ca, err := pki.NewCA("bootlab-test-client-ca")
	require.NoError(t, err)
	admin, err := pki.NewClient(ca, "admin", []string{"system:masters"})
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	require.NoError(t, err)
	paths := map[string]string{}
	for name, data := range map[string][]byte{
		"ca.crt": ca.CertPEM, "admin.crt": admin.CertPEM, "admin.key": admin.KeyPEM,
		"sa.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv}),
		"sa.pub": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
	} {
		paths[name] = filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(paths[name], data, 0o600))
	}
	paths["kubeconfig"] = filepath.Join(dir, "kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:%s
    certificate-authority: %s
users:
- name: admin
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: admin
  context: {cluster: test, user: admin}
current-context: admin
`, apiPort, filepath.Join(dir, "serving", "apiserver.crt"), paths["admin.crt"], paths["admin.key"])
	require.NoError(t, os.WriteFile(paths["kubeconfig"], []byte(kubeconfig), 0o600))
	return paths
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// server is a started process; exited is closed once it has exited.
type server struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// start runs a server with its output in logPath, shown if the test
// fails; cleanup kills it if the test did not stop it.
func start(t *testing.T, logPath, path string, args ...string) *server {
	t.Helper()
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	s := &server{name: filepath.Base(path), cmd: exec.Command(path, args...), exited: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	require.NoError(t, s.cmd.Start())
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		logFile.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("%s (last lines):\n%s", filepath.Base(logPath), tail(string(data), 30))
		}
	})
	return s
}

// waitFor polls ok every second until it holds, failing with its last
// output after limit or as soon as s exits.
func waitFor(t *testing.T, limit time.Duration, what string, s *server, ok func() (string, bool)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		out, done := ok()
		if done {
			return
		}
		last = out
		select {
		case <-s.exited:
			require.FailNow(t, what, "%s exited (%v): %s", s.name, s.err, last)
		case <-time.After(time.Second):
		}
	}
	require.FailNow(t, what, "not done after %s: %s", limit, strings.TrimSpace(last))
}

// stop sends SIGTERM and waits for a clean exit: status 0, or, as etcd
// does once it has closed (it re-raises the signal it handled), death by
// that SIGTERM. Any other status or signal fails.
func stop(t *testing.T, s *server) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.exited:
		if ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return
		}
		assert.NoError(t, s.err, "%s exits cleanly on SIGTERM", s.name)
	case <-time.After(90 * time.Second):
		assert.Fail(t, "no exit", "%s still runs 90 s after SIGTERM", s.name)
	}
}

// rss is the resident memory of a process, from /proc.
func rss(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		if bytes.HasPrefix(l, []byte("VmRSS:")) {
			return strings.Join(strings.Fields(string(l[6:])), " ")
		}
	}
	return "unknown"
}
