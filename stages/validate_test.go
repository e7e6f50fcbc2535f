package stages_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil/cptest"
	"github.com/bootlab/bootlab/stages"
	"github.com/bootlab/bootlab/stages/stagestest"
)

var validateNow = time.Now()

// pemCert makes a self-signed certificate valid from notBefore to notAfter.
func pemCert(t *testing.T, cn string, notBefore, notAfter time.Time) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// fixtureNode copies testdata/stages/fixtures/<stage> into a temp root,
// fills in fresh certificates and keys, gives secrets mode 0600, and
// answers the live checks as healthy services do.
func fixtureNode(t *testing.T, s *stages.Stage) *stagestest.Node {
	t.Helper()
	src := filepath.Join("..", "testdata", "stages", "fixtures", strings.TrimSuffix(s.DocFile(), ".md"))
	root := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if d.Name() == ".gitkeep" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		switch strings.TrimSpace(string(data)) {
		case "@CERT@":
			data = pemCert(t, d.Name(), validateNow.Add(-time.Hour), validateNow.Add(24*time.Hour))
		case "@KEY@":
			data = pemKey(t)
		}
		if strings.HasSuffix(d.Name(), ".key") || strings.HasPrefix(d.Name(), "kubeconfig") {
			mode = 0o600
		}
		if err := os.WriteFile(dst, data, mode); err != nil {
			return err
		}
		return os.Chmod(dst, mode)
	})
	require.NoError(t, err, "fixture for %s", s.Label())
	writeControlPlaneSecrets(t, root)
	n := stagestest.New(root)
	n.Replies["https://localhost:2379/health"] = stagestest.Reply{Stdout: `{"health":"true","reason":""}` + "\n200"}
	n.Replies["https://localhost:2379/version"] = stagestest.Reply{Stdout: `{"etcdserver":"3.5.21","etcdcluster":"3.5.0"}` + "\n200"}
	n.Replies["https://localhost:22623/healthz"] = stagestest.Reply{Stdout: "\n200"}
	n.Replies[":6443/readyz"] = stagestest.Reply{Stdout: "ok\n200"}
	// The real API through kubectl with the admin kubeconfig.
	n.Replies["kubectl --kubeconfig=/opt/openshift/auth/kubeconfig --request-timeout=10s get --raw /readyz"] = stagestest.Reply{Stdout: "ok"}
	n.Replies["get event -n kube-system bootstrap-success"] = stagestest.Reply{Stdout: "Required control plane pods have been created"}
	n.Replies["get nodes -l node-role.kubernetes.io/master"] = stagestest.Reply{Stdout: "master-0=True master-1=True master-2=True "}
	n.Replies["get pods -n openshift-kube-apiserver "] = stagestest.Reply{Stdout: "installer-1-master-0=False kube-apiserver-master-0=True "}
	n.Replies["get pods -n openshift-kube-controller-manager "] = stagestest.Reply{Stdout: "kube-controller-manager-master-0=True "}
	n.Replies["get pods -n openshift-kube-scheduler "] = stagestest.Reply{Stdout: "openshift-kube-scheduler-master-0=True "}
	return n
}

// writeControlPlaneSecrets gives a fixture with a bootstrap control-plane
// pod the files it names, as a lab's bootstrap has them after stage 07:
// tls/ from the lab CA (lab/probe's ControlPlaneTLS, an etcd signer's
// client pair) and auth/kubeconfig.
func writeControlPlaneSecrets(t *testing.T, root string) {
	t.Helper()
	pods, _ := filepath.Glob(filepath.Join(root, "opt/openshift/bootstrap-manifests/kube-*-pod.yaml"))
	if len(pods) > 0 {
		cptest.Write(t, root)
	}
}

func failures(results []check.Result) []string {
	var out []string
	for _, r := range check.Failed(results) {
		out = append(out, r.Name+": "+r.Detail)
	}
	for _, r := range results {
		if !r.Passed() && !r.Failed() {
			out = append(out, r.Name+": neither passed nor failed")
		}
	}
	return out
}

func TestValidatePassesOnFixtures(t *testing.T) {
	t.Parallel()
	for _, s := range stages.Default() {
		t.Run(s.Label(), func(t *testing.T) {
			t.Parallel()
			n := fixtureNode(t, s)
			results := stages.Validate(context.Background(), n, s, testVars("4.19"), stages.ValidateOptions{Now: validateNow})
			require.Len(t, results, len(s.Checks))
			assert.Empty(t, failures(results))
			for _, r := range results {
				assert.Equal(t, s.Label(), r.Group, "a check is grouped under its stage")
			}
		})
	}
}

// Before 4.19 there is no auth-api-bootstrap, so no AUTH_OPERATOR_IMAGE.
// Stage 08's check of the rendered kube-apiserver refuses a serving
// certificate the lab CA did not sign, and a pod OpenShift would run but
// upstream's binary would not (--openshift-config).
func TestValidateControlPlanePodFailsUsefully(t *testing.T) {
	s, err := stages.Default().Lookup("08")
	require.NoError(t, err)
	n := fixtureNode(t, s)
	tls := filepath.Join(n.Root, "opt/openshift/tls")
	other, err := pki.NewCA("someone-else")
	require.NoError(t, err)
	leaf, err := pki.NewServing(other, "api", []string{"api.ocp.lab.local"})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tls, controlplane.LBServerCert), leaf.CertPEM, 0o644))
	results := stages.Validate(context.Background(), n, s, testVars("4.19"), stages.ValidateOptions{Now: validateNow})
	assert.Contains(t, strings.Join(failures(results), "\n"), "kube-apiserver-lb-server.crt: not signed by its CA")

	n = fixtureNode(t, s)
	pod := filepath.Join(n.Root, "opt/openshift/bootstrap-manifests/kube-apiserver-pod.yaml")
	require.NoError(t, os.WriteFile(pod, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: bootstrap-kube-apiserver, namespace: openshift-kube-apiserver}\nspec:\n  hostNetwork: true\n  containers:\n  - name: kube-apiserver\n    command: [hyperkube, kube-apiserver]\n    args: [--openshift-config=/etc/kubernetes/config/kube-apiserver-config.yaml]\n  volumes:\n  - {name: secrets, hostPath: {path: /etc/kubernetes/bootstrap-secrets}}\n  - {name: config, hostPath: {path: /etc/kubernetes/bootstrap-configs}}\n"), 0o644))
	results = stages.Validate(context.Background(), n, s, testVars("4.19"), stages.ValidateOptions{Now: validateNow})
	assert.Contains(t, strings.Join(failures(results), "\n"), `runs "hyperkube kube-apiserver --openshift-config`)
}

func TestValidateImagesBefore419(t *testing.T) {
	t.Parallel()
	s, err := stages.Default().Lookup("02")
	require.NoError(t, err)
	n := fixtureNode(t, s)
	edit("opt/openshift/bootlab-images.env", "AUTH_OPERATOR_IMAGE=", "#")(t, n.Root, n)
	assert.Empty(t, failures(stages.Validate(context.Background(), n, s, testVars("4.18"), stages.ValidateOptions{Now: validateNow})))
}

// Before 4.18 bootkube resolves no KUBERNETES_VERSION (installer
// 58a7d55b2e), and stage 02's script leaves it empty: found by booting a
// 4.16 rehearsal lab, whose stage 02 passed and whose validate failed.
func TestValidateImagesBefore418(t *testing.T) {
	t.Parallel()
	s, err := stages.Default().Lookup("02")
	require.NoError(t, err)
	n := fixtureNode(t, s)
	edit("opt/openshift/bootlab-images.env", "AUTH_OPERATOR_IMAGE=", "#")(t, n.Root, n)
	edit("opt/openshift/bootlab-images.env", "KUBERNETES_VERSION=", "KUBERNETES_VERSION=''\n#")(t, n.Root, n)
	for _, v := range []string{"4.16", "4.17"} {
		assert.Empty(t, failures(stages.Validate(context.Background(), n, s, testVars(v), stages.ValidateOptions{Now: validateNow})), v)
	}
	assert.Contains(t, strings.Join(failures(stages.Validate(context.Background(), n, s, testVars("4.18"), stages.ValidateOptions{Now: validateNow})), "\n"),
		"does not set KUBERNETES_VERSION", "4.18 resolves it")
}

func TestValidateSkipLive(t *testing.T) {
	t.Parallel()
	s, err := stages.Default().Lookup("07")
	require.NoError(t, err)
	n := fixtureNode(t, s)
	delete(n.Replies, "https://localhost:2379/health")
	results := stages.Validate(context.Background(), n, s, testVars("4.19"), stages.ValidateOptions{Now: validateNow, SkipLive: true})
	assert.Empty(t, failures(results))
	assert.Empty(t, n.CallsWith("curl"), "no live check ran")
}

type breaker struct {
	name   string
	stage  string
	break_ func(t *testing.T, root string, n *stagestest.Node)
	want   string
}

func rm(p string) func(*testing.T, string, *stagestest.Node) {
	return func(t *testing.T, root string, _ *stagestest.Node) {
		require.NoError(t, os.RemoveAll(filepath.Join(root, p)))
	}
}

func edit(p, old, new string) func(*testing.T, string, *stagestest.Node) {
	return func(t *testing.T, root string, _ *stagestest.Node) {
		f := filepath.Join(root, p)
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.Contains(t, string(data), old, "fixture %s", p)
		require.NoError(t, os.WriteFile(f, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
	}
}

func chmod(p string, mode fs.FileMode) func(*testing.T, string, *stagestest.Node) {
	return func(t *testing.T, root string, _ *stagestest.Node) {
		require.NoError(t, os.Chmod(filepath.Join(root, p), mode))
	}
}

func expire(p string) func(*testing.T, string, *stagestest.Node) {
	return func(t *testing.T, root string, _ *stagestest.Node) {
		data := pemCert(t, "etcd-signer", validateNow.Add(-48*time.Hour), validateNow.Add(-24*time.Hour))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), data, 0o644))
	}
}

func reply(key string, r stagestest.Reply) func(*testing.T, string, *stagestest.Node) {
	return func(_ *testing.T, _ string, n *stagestest.Node) { n.Replies[key] = r }
}

func TestValidateFailsUsefully(t *testing.T) {
	t.Parallel()
	for _, b := range []breaker{
		{"missing marker", "01", rm("opt/openshift/openshift-manifests.done"), "/opt/openshift/openshift-manifests.done is missing: the stage has not finished"},
		{"wrong kind", "01", edit("opt/openshift/manifests/cluster-infrastructure-02-config.yml", "kind: Infrastructure", "kind: Network"), `cluster-infrastructure-02-config.yml is a "Network", want kind Infrastructure`},
		{"loopback kubeconfig readable", "01", chmod("opt/openshift/auth/kubeconfig-loopback", 0o644), "/opt/openshift/auth/kubeconfig-loopback has mode 0644, want 0600"},
		{"unparsable manifest", "01", edit("opt/openshift/manifests/cluster-network-02-config.yml", "kind: Network", "kind: [Network"), "does not parse as a Kubernetes manifest"},
		{"missing image", "02", edit("opt/openshift/bootlab-images.env", "VERSION=4.19.10\n", ""), "does not set VERSION: rerun stage 02"},
		{"no auth operator image on 4.19", "02", edit("opt/openshift/bootlab-images.env", "AUTH_OPERATOR_IMAGE=", "#"), "does not set AUTH_OPERATOR_IMAGE: rerun stage 02"},
		{"gates not resolved", "03", edit("opt/openshift/manifests/99_feature-gate.yaml", "status:", "statusx:"), "has no status.featureGates"},
		{"no CRD", "04", edit("opt/openshift/auth-api-bootstrap/manifests/0000_03_authorization-openshift_01_rolebindingrestriction.crd.yaml", "name: rolebindingrestrictions", "name: other"), "no CustomResourceDefinition rolebindingrestrictions.authorization.openshift.io in /opt/openshift/auth-api-bootstrap/manifests"},
		{"no render directory", "04", rm("opt/openshift/auth-api-bootstrap"), "/opt/openshift/auth-api-bootstrap/manifests is missing"},
		{"missing config", "05", rm("opt/openshift/config-bootstrap/config"), "/opt/openshift/config-bootstrap/config is missing"},
		{"kubeconfig mode", "06", chmod("etc/kubernetes/kubeconfig", 0o644), "/etc/kubernetes/kubeconfig has mode 0644, want 0600"},
		{"no CVO pod", "06", rm("opt/openshift/bootstrap-manifests/bootstrap-pod.yaml"), "no pod openshift-cluster-version/bootstrap-cluster-version-operator in /opt/openshift/bootstrap-manifests"},
		{"expired cert", "07", expire("opt/openshift/tls/etcd-ca-bundle.crt"), `etcd-ca-bundle.crt: certificate "etcd-signer" expired at`},
		{"not hostNetwork", "07", edit("etc/kubernetes/manifests/etcd-member-pod.yaml", "hostNetwork: true", "hostNetwork: false"), "does not use hostNetwork"},
		{"missing container", "07", edit("etc/kubernetes/manifests/etcd-member-pod.yaml", "  - name: etcd\n", "  - name: etcd-member\n"), `want "etcd" among them`},
		{"missing data dir", "07", edit("etc/kubernetes/manifests/etcd-member-pod.yaml", "path: /var/lib/etcd", "path: /tmp/etcd"), "want /var/lib/etcd among them"},
		{"MCS without certs", "12", edit("etc/kubernetes/manifests/machineconfigoperator-bootstrap-pod.yaml", "path: /etc/ssl/mcs", "path: /tmp"), "want /etc/ssl/mcs among them"},
		{"wrong kind pod", "07", edit("etc/kubernetes/manifests/etcd-member-pod.yaml", "kind: Pod", "kind: Deployment"), `is a "Deployment", want a Pod`},
		{"key mode", "07", chmod("opt/openshift/tls/etcd-client.key", 0o640), "etcd-client.key has mode 0640, want 0600"},
		{"etcd down", "07", reply("https://localhost:2379/health", stagestest.Reply{Stdout: "\n000", Code: 7}), "GET https://localhost:2379/health from fake-node: curl exited 7"},
		{"Debian's etcd 3.4", "07", reply("https://localhost:2379/version", stagestest.Reply{Stdout: `{"etcdserver":"3.4.23","etcdcluster":"3.4.0"}` + "\n200"}), `want "\"etcdserver\":\"3.5."`},
		{"etcd unhealthy", "07", reply("https://localhost:2379/health", stagestest.Reply{Stdout: `{"health":"false"}` + "\n200"}), `want "\"health\":\"true\""`},
		{"wrong config kind", "08", edit("etc/kubernetes/bootstrap-configs/kube-apiserver-config.yaml", "kind: KubeAPIServerConfig", "kind: KubeControllerManagerConfig"), "want kind KubeAPIServerConfig"},
		{"missing volume", "08", edit("opt/openshift/bootstrap-manifests/kube-apiserver-pod.yaml", "path: /etc/kubernetes/bootstrap-secrets", "path: /tmp"), "want /etc/kubernetes/bootstrap-secrets among them"},
		{"another service network", "08", func(t *testing.T, root string, _ *stagestest.Node) {
			// The spec's openshift.serviceNetwork reached the Network config,
			// not the pod the render wrote before it.
			p := filepath.Join(root, "opt/openshift", controlplane.NetworkManifest)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte("apiVersion: config.openshift.io/v1\nkind: Network\nmetadata: {name: cluster}\nspec: {serviceNetwork: [172.31.0.0/16]}\n"), 0o644))
		}, `--service-cluster-ip-range is "172.30.0.0/16", want "172.31.0.0/16"`},
		{"no policy controller", "09", edit("opt/openshift/bootstrap-manifests/kube-controller-manager-pod.yaml", "name: cluster-policy-controller", "name: other"), `want "cluster-policy-controller" among them`},
		{"no scheduler pod", "10", rm("opt/openshift/bootstrap-manifests/kube-scheduler-pod.yaml"), "no pod kube-system/bootstrap-kube-scheduler"},
		{"CRD not copied", "11", rm("opt/openshift/manifests/cluster-ingress-00-custom-resource-definition.yaml"), "no CustomResourceDefinition ingresscontrollers.operator.openshift.io in /opt/openshift/manifests"},
		{"MCS down", "12", reply("https://localhost:22623/healthz", stagestest.Reply{Stdout: "\n503"}), "answered HTTP 503, want 200"},
		{"MCS cert expired", "12", expire("etc/ssl/mcs/tls.crt"), "/etc/ssl/mcs/tls.crt: certificate"},
		{"no master pool", "12", rm("etc/mcc/bootstrap/master.machineconfigpool.yaml"), "no MachineConfigPool master in /etc/mcc/bootstrap"},
		{"no teardown", "13", func(t *testing.T, root string, _ *stagestest.Node) {
			require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/kubernetes/bootstrap-secrets"), 0o700))
		}, "/etc/kubernetes/bootstrap-secrets still exists: cluster-bootstrap removes it"},
		{"api-int down", "13", reply(":6443/readyz", stagestest.Reply{Stdout: "\n000", Code: 7}), "https://api-int.ocp.lab.local:6443/readyz"},
		{"API not ready", "13", reply("get --raw /readyz", stagestest.Reply{Stdout: "[-]etcd failed"}), `/readyz answered "[-]etcd failed", want ok`},
		{"API refuses", "13", reply("get --raw /readyz", stagestest.Reply{Code: 1}), "kubectl get --raw /readyz on fake-node"},
		{"no bootstrap-success event", "13", reply("get event -n kube-system bootstrap-success", stagestest.Reply{Code: 1}), "(cluster-bootstrap sends it once the required pods run)"},
		{"no scheduler", "13", reply("get pods -n openshift-kube-scheduler ", stagestest.Reply{Stdout: "openshift-kube-scheduler-master-0=False "}), "no Ready pod for openshift-kube-scheduler/openshift-kube-scheduler"},
		{"a master not Ready", "14", reply("get nodes -l node-role", stagestest.Reply{Stdout: "master-0=True master-1=False "}), "not Ready: master-1"},
		{"no master registered", "14", reply("get nodes -l node-role", stagestest.Reply{Stdout: ""}), "no master registered as a Node"},
		{"MCS still there", "14", func(t *testing.T, root string, _ *stagestest.Node) {
			require.NoError(t, os.WriteFile(filepath.Join(root, "etc/kubernetes/manifests/machineconfigoperator-bootstrap-pod.yaml"), []byte("kind: Pod\n"), 0o644))
		}, "machineconfigoperator-bootstrap-pod.yaml still exists"},
		{"not done", "15", rm("opt/openshift/.bootkube.done"), "/opt/openshift/.bootkube.done is missing"},
		{"api not ready", "15", reply(":6443/readyz", stagestest.Reply{Stdout: "[-]etcd failed\n500"}), "https://api.ocp.lab.local:6443/readyz answered HTTP 500"},
	} {
		t.Run(b.stage+" "+b.name, func(t *testing.T) {
			t.Parallel()
			s, err := stages.Default().Lookup(b.stage)
			require.NoError(t, err)
			n := fixtureNode(t, s)
			b.break_(t, n.Root, n)
			fails := failures(stages.Validate(context.Background(), n, s, testVars("4.19"), stages.ValidateOptions{Now: validateNow}))
			require.NotEmpty(t, fails, "the broken fixture must fail")
			assert.Contains(t, strings.Join(fails, "\n"), b.want)
		})
	}
}

// kubectl retries a GET on a closed connection ten times a second apart,
// per request: the kubectl checks of a pass ask first, with one curl,
// whether anything answers https on the API's name, and are not run when
// nothing does. A later pass asks again, and runs them once it answers.
func TestValidateAsksKubectlOnlyOfAnAPIThatAnswers(t *testing.T) {
	t.Parallel()
	s, err := stages.Default().Lookup("13")
	require.NoError(t, err)
	n := fixtureNode(t, s)
	const gate = "--output /dev/null 'https://api.ocp.lab.local:6443/readyz'"
	n.Replies[gate] = stagestest.Reply{Code: 35} // haproxy, no server up: it closes the handshake
	kubectl := func() int { return len(n.CallsWith(`sudo -n env "PATH=$PATH" kubectl`)) }
	gates := func() int {
		c := 0
		for _, call := range n.CallsWith("curl ") {
			if strings.Contains(call, gate) {
				c++
			}
		}
		return c
	}

	results := stages.Validate(context.Background(), n, s, testVars("4.19"), stages.ValidateOptions{Now: validateNow})
	fails := failures(results)
	assert.Len(t, fails, 3, "the three kubectl checks: %q", fails)
	for _, f := range fails {
		assert.Contains(t, f, "not asked: GET https://api.ocp.lab.local:6443/readyz from fake-node: the TLS handshake was cut (as a load balancer does while no server is up)")
	}
	assert.Zero(t, kubectl(), "kubectl is not run against an API that does not answer")
	assert.Equal(t, 1, gates(), "one curl for the pass")

	passes := 0
	results = stages.Validate(context.Background(), n, s, testVars("4.19"), stages.ValidateOptions{Now: validateNow, Wait: time.Minute, Interval: time.Millisecond,
		Waiting: func([]string, time.Duration) {
			if passes++; passes == 2 {
				n.Replies[gate] = stagestest.Reply{Stdout: "\n503"} // it answers, even if not ready: kubectl decides
			}
		}})
	assert.Empty(t, failures(results))
	assert.Equal(t, 1+3, gates(), "asked again on each pass")
	assert.Equal(t, 5, kubectl(), "then kubectl: readyz, the bootstrap-success event, three namespaces' pods")

	// A node without curl: kubectl decides, as before.
	n.Replies[gate] = stagestest.Reply{Code: 127}
	assert.Empty(t, failures(stages.Validate(context.Background(), n, s, testVars("4.19"), stages.ValidateOptions{Now: validateNow})))
}

// What stage 07 starts answers a moment after its script returns: with a
// wait, validate asks the live checks again until they pass, and only them.
func TestValidateWaitsForWhatTheStageStarted(t *testing.T) {
	t.Parallel()
	s, err := stages.Default().Lookup("07")
	require.NoError(t, err)
	n := fixtureNode(t, s)
	const health = "https://localhost:2379/health"
	healthy := n.Replies[health]
	delete(n.Replies, health) // not listening yet
	var waited [][]string
	upAfter := 3 // etcd answers after this many waits
	opts := stages.ValidateOptions{Now: validateNow, Wait: time.Minute, Interval: time.Millisecond,
		Waiting: func(names []string, left time.Duration) {
			waited = append(waited, names)
			assert.Positive(t, left)
			if len(waited) == upAfter {
				n.Replies[health] = healthy
			}
		}}
	asked := func(what string) int {
		c := 0
		for _, call := range append(n.CallsWith("curl"), n.CallsWith("read ")...) {
			if strings.Contains(call, what) {
				c++
			}
		}
		return c
	}
	results := stages.Validate(context.Background(), n, s, testVars("4.19"), opts)
	assert.Empty(t, failures(results), "etcd answered on the fourth ask")
	require.Len(t, waited, 3)
	for _, names := range waited {
		require.Len(t, names, 1, "only the failing live check is asked again")
		assert.Contains(t, names[0], "etcd answers healthy")
	}
	assert.Equal(t, 4, asked("/health"), "health asked once and again after each wait")
	assert.Equal(t, 1, asked("/version"), "what passed is not asked again")
	assert.Equal(t, 1, n.Reads("/opt/openshift/tls/etcd-client.crt"), "the files are not read again")
	upAfter = -1

	// Once is once: the same node, etcd down, no wait.
	delete(n.Replies, health)
	waited = nil
	opts.Wait = 0
	results = stages.Validate(context.Background(), n, s, testVars("4.19"), opts)
	assert.Len(t, failures(results), 1)
	assert.Empty(t, waited)

	// A stage whose own files are missing has not run: nothing to wait for.
	opts.Wait = time.Minute
	require.NoError(t, os.Remove(filepath.Join(n.Root, "opt/openshift/etcd-bootstrap.done")))
	results = stages.Validate(context.Background(), n, s, testVars("4.19"), opts)
	assert.Len(t, failures(results), 2, "the marker and etcd's health")
	assert.Empty(t, waited, "no wait when the stage's files are not there")

	// A wait ends: etcd never answers, the failure is reported.
	require.NoError(t, os.WriteFile(filepath.Join(n.Root, "opt/openshift/etcd-bootstrap.done"), nil, 0o644))
	opts.Wait = 20 * time.Millisecond
	results = stages.Validate(context.Background(), n, s, testVars("4.19"), opts)
	require.Len(t, failures(results), 1)
	assert.Contains(t, failures(results)[0], "etcd answers healthy")
	assert.NotEmpty(t, waited)
}
