// Package kubetest runs the release's real etcd and kube-apiserver on
// loopback for integration tests: lab/gobuild's proof that the built
// binaries serve, and cluster-bootstrap's create's proof that manifests are
// created through a real API. Test code only.
package kubetest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil/freeport"
	"github.com/bootlab/bootlab/lab/cache"
)

// SharedCacheEnv names the cache directory every test takes the release's
// etcd and Kubernetes from, so each binary is built once however many
// tests and packages use it. Unset, it is the machine's bootlab cache
// (cache.Dir(), /var/cache/bootlab for root): make test fills it first
// (make test-binaries: bootlab cache build kubernetes and etcd), the labs
// take the same binaries from there, so the cold build (about 9 minutes
// on 2 cores) happens once per machine and never inside a test run.
// lab/gobuild's TestEnsureBuildsEtcdOnceAndTravels still proves the build,
// into a cache of its own.
const SharedCacheEnv = "BOOTLAB_GOBUILD_TEST_CACHE"

// RunWithSharedCache runs the tests (TestMain) with SharedCacheEnv set: to
// the bootlab cache unless it is set already.
func RunWithSharedCache(m *testing.M) int {
	if os.Getenv(SharedCacheEnv) == "" {
		if err := os.Setenv(SharedCacheEnv, cache.Dir()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// Links makes a directory where each program name is a symlink to the
// multi-call binary at path, as the nodes have them.
func Links(t testing.TB, path string, programs []string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range programs {
		require.NoError(t, os.Symlink(path, filepath.Join(dir, p)))
	}
	return dir
}

// ControlPlane is a running etcd and kube-apiserver on 127.0.0.1.
type ControlPlane struct {
	Etcd, API *Server
	// Bin holds kube-apiserver and kubectl (links to hyperkube).
	Bin string
	// Files are the paths of ca.crt, admin.crt, admin.key, sa.key, sa.pub
	// and kubeconfig (the admin's, in system:masters).
	Files map[string]string
	// APIPort and EtcdPort are where they listen.
	APIPort, EtcdPort string
}

// StartControlPlane starts etcd (the binary at etcdPath) and kube-apiserver
// (from bin, a Links directory) with RBAC (unless apiArgs set
// --authorization-mode), a client CA and a service-account
// key pair (and apiArgs), and waits until kubectl reads /readyz as ok.
// Cleanup kills both if the test did not Stop them.
func StartControlPlane(t testing.TB, etcdPath, bin string, apiArgs ...string) *ControlPlane {
	t.Helper()
	dir := t.TempDir()
	cp := &ControlPlane{Bin: bin, EtcdPort: FreePort(t), APIPort: FreePort(t)}
	peerPort := FreePort(t)
	cp.Etcd = Start(t, filepath.Join(dir, "etcd.log"), etcdPath,
		"--name=test", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:"+cp.EtcdPort, "--advertise-client-urls=http://127.0.0.1:"+cp.EtcdPort,
		"--listen-peer-urls=http://127.0.0.1:"+peerPort, "--initial-advertise-peer-urls=http://127.0.0.1:"+peerPort,
		"--initial-cluster=test=http://127.0.0.1:"+peerPort)
	cp.Files = WriteAPIServerFiles(t, dir, cp.APIPort)
	args := append([]string{
		"--bind-address=127.0.0.1", "--secure-port=" + cp.APIPort, "--cert-dir=" + filepath.Join(dir, "serving"),
		"--etcd-servers=http://127.0.0.1:" + cp.EtcdPort,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + cp.Files["sa.pub"], "--service-account-signing-key-file=" + cp.Files["sa.key"],
		"--service-cluster-ip-range=172.30.0.0/16", "--client-ca-file=" + cp.Files["ca.crt"],
	}, apiArgs...)
	if !slices.ContainsFunc(apiArgs, func(a string) bool { return strings.HasPrefix(a, "--authorization-mode=") }) {
		// A list flag: a second one would add to it, not replace it.
		args = append(args, "--authorization-mode=RBAC")
	}
	cp.API = Start(t, filepath.Join(dir, "kube-apiserver.log"), filepath.Join(bin, "kube-apiserver"), args...)
	ready := time.Now()
	// /readyz is asked in-process, as the admin: each kubectl is a start of
	// the multi-call Kubernetes binary, about 0.2 CPU s of package
	// initializers here, and the tests' own kubectl calls come after.
	waitEvery(t, 4*time.Minute, 250*time.Millisecond, "kube-apiserver's /readyz as the admin", cp.API, func() (string, bool) {
		out, err := cp.readyz()
		return out, err == nil && out == "ok"
	})
	t.Logf("kube-apiserver ready %s after etcd; RSS %s", time.Since(ready).Round(time.Second), RSS(cp.API.Cmd.Process.Pid))
	return cp
}

// readyz reads /readyz with the admin's certificate, trusting the serving
// certificate kube-apiserver wrote (not there yet: an error).
func (cp *ControlPlane) readyz() (string, error) {
	serving, err := os.ReadFile(filepath.Join(filepath.Dir(cp.Files["kubeconfig"]), "serving", "apiserver.crt"))
	if err != nil {
		return "", err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(serving) {
		return "", fmt.Errorf("no certificate in the serving certificate file")
	}
	admin, err := tls.LoadX509KeyPair(cp.Files["admin.crt"], cp.Files["admin.key"])
	if err != nil {
		return "", err
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}, MinVersion: tls.VersionTLS12},
	}}
	defer c.CloseIdleConnections()
	resp, err := c.Get("https://127.0.0.1:" + cp.APIPort + "/readyz")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("/readyz: %s", resp.Status)
	}
	return string(body), nil
}

// EmbeddedKubeconfig writes into dir a kubeconfig of the admin with the
// CA (the API's self-signed serving certificate) and the client pair
// embedded, as the installer's are, and returns its path.
func (cp *ControlPlane) EmbeddedKubeconfig(t testing.TB, dir string) string {
	t.Helper()
	enc := func(p string) string {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return base64.StdEncoding.EncodeToString(b)
	}
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q, certificate-authority-data: %s}\nusers:\n- name: u\n  user: {client-certificate-data: %s, client-key-data: %s}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
		"https://127.0.0.1:"+cp.APIPort, enc(filepath.Join(filepath.Dir(cp.Files["admin.crt"]), "serving", "apiserver.crt")), enc(cp.Files["admin.crt"]), enc(cp.Files["admin.key"]))
	p := filepath.Join(dir, "embedded.kubeconfig")
	require.NoError(t, os.WriteFile(p, []byte(kc), 0o600))
	return p
}

// Kubectl runs the release's kubectl with the admin kubeconfig.
func (cp *ControlPlane) Kubectl(args ...string) (string, error) {
	out, err := exec.Command(filepath.Join(cp.Bin, "kubectl"), append([]string{"--kubeconfig", cp.Files["kubeconfig"]}, args...)...).CombinedOutput()
	return string(out), err
}

// Stop stops kube-apiserver, then etcd, each with SIGTERM, and checks
// nothing listens on their ports after.
func (cp *ControlPlane) Stop(t testing.TB) {
	t.Helper()
	for _, s := range []*Server{cp.API, cp.Etcd} {
		Stop(t, s)
	}
	for _, port := range []string{cp.APIPort, cp.EtcdPort} {
		_, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		assert.Error(t, err, "nothing listens on %s after both stopped", port)
	}
}

// StartControllerManager runs the release's kube-controller-manager
// against cp with the admin kubeconfig, no serving port and no leader
// election, and the client CA (ca.crt, ca.key) as the cluster signer, so
// the certificates it signs are the API's clients; args (--controllers=)
// choose what runs.
func (cp *ControlPlane) StartControllerManager(t testing.TB, args ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	return Start(t, filepath.Join(dir, "kube-controller-manager.log"), filepath.Join(cp.Bin, "kube-controller-manager"), append([]string{
		"--kubeconfig=" + cp.Files["kubeconfig"], "--secure-port=0", "--leader-elect=false",
		"--cluster-signing-cert-file=" + cp.Files["ca.crt"], "--cluster-signing-key-file=" + cp.Files["ca.key"],
	}, args...)...)
}

// WriteAPIServerFiles writes the client CA (and its key), the admin's certificate, the
// service-account key pair and a kubeconfig, returning their paths. The
// kubeconfig trusts the serving certificate kube-apiserver writes into
// dir/serving (--cert-dir), which the caller waits for.
func WriteAPIServerFiles(t testing.TB, dir, apiPort string) map[string]string {
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
		"ca.crt": ca.CertPEM, "ca.key": ca.KeyPEM, "admin.crt": admin.CertPEM, "admin.key": admin.KeyPEM,
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

// FreePort is a TCP port on 127.0.0.1 that no other test process holds
// and nothing listens on now, below the kernel's ephemeral range
// (freeport): it stays this test binary's until the binary ends.
func FreePort(t testing.TB) string {
	t.Helper()
	return freeport.Loopback(t)
}

// Server is a started process; Exited is closed once it has exited.
type Server struct {
	Name    string
	LogPath string
	Cmd     *exec.Cmd
	Exited  chan struct{}
	Err     error
}

// Start runs a server with its output in logPath, shown if the test fails;
// cleanup kills it if the test did not stop it.
func Start(t testing.TB, logPath, path string, args ...string) *Server {
	t.Helper()
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	s := &Server{Name: filepath.Base(path), LogPath: logPath, Cmd: exec.Command(path, args...), Exited: make(chan struct{})}
	s.Cmd.Stdout, s.Cmd.Stderr = logFile, logFile
	require.NoError(t, s.Cmd.Start())
	go func() { s.Err = s.Cmd.Wait(); close(s.Exited) }()
	t.Cleanup(func() {
		select {
		case <-s.Exited:
		default:
			_ = s.Cmd.Process.Kill()
			<-s.Exited
		}
		logFile.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("%s (last lines):\n%s", filepath.Base(logPath), tail(string(data), 30))
		}
	})
	return s
}

// WaitFor polls ok every second until it holds, failing with its last
// output after limit or as soon as s exits.
func WaitFor(t testing.TB, limit time.Duration, what string, s *Server, ok func() (string, bool)) {
	t.Helper()
	waitEvery(t, limit, time.Second, what, s, ok)
}

// waitEvery is WaitFor polling every interval.
func waitEvery(t testing.TB, limit, interval time.Duration, what string, s *Server, ok func() (string, bool)) {
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
		case <-s.Exited:
			log, _ := os.ReadFile(s.LogPath)
			require.FailNow(t, what, "%s exited (%v): %s\n%s's last lines:\n%s", s.Name, s.Err, last, s.Name, tail(string(log), 15))
		case <-time.After(interval):
		}
	}
	require.FailNow(t, what, "not done after %s: %s", limit, strings.TrimSpace(last))
}

// Stop sends SIGTERM and waits for a clean exit: status 0, or, as etcd
// does once it has closed (it re-raises the signal it handled), death by
// that SIGTERM. Any other status or signal fails.
func Stop(t testing.TB, s *Server) {
	t.Helper()
	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.Exited:
		if ws, ok := s.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return
		}
		assert.NoError(t, s.Err, "%s exits cleanly on SIGTERM", s.Name)
	case <-time.After(90 * time.Second):
		assert.Fail(t, "no exit", "%s still runs 90 s after SIGTERM", s.Name)
	}
}

// RSS is the resident memory of a process, from /proc.
func RSS(pid int) string {
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

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
