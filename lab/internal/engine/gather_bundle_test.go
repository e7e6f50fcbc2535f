package engine

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/diagnose"
	"github.com/bootlab/bootlab/lab/internal/logbundle"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
	"github.com/bootlab/bootlab/stages"
)

// The fake lab's bootstrap started at t0 and completed; the gather runs at gatherNow.
var (
	gatherT0  = time.Date(2025, 5, 14, 10, 0, 0, 0, time.UTC)
	gatherNow = time.Date(2025, 5, 14, 10, 30, 0, 0, time.UTC)
)

func gat(m, s int) time.Time {
	return gatherT0.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
}

// Credentials the fake bootstrap holds: none may reach the bundle.
const (
	fakeKey        = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIFAKEKEYFAKEKEYFAKEKEY\n-----END EC PRIVATE KEY-----\n"
	fakePullSecret = `{"auths":{"quay.io":{"auth":"cHVsbHNlY3JldDpzM2NyM3Q="}}}`
	fakeToken      = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06YWRtaW4ifQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
)

// fakeNode answers a gather's commands from tables: outputs by command
// line, file trees by directory (read with tar), the commands it has.
type fakeNode struct {
	has   map[string]bool
	out   map[string]string
	trees map[string]map[string]string
	// tcp answers a live collection's connection tries (tries).
	tcp map[string]string
	// noTar is a node without tar (a rehearsal bootstrap): trees are read
	// with bash's cat.
	noTar bool
	ran   []string
}

func (f *fakeNode) Run(_ context.Context, cmd string, stdout io.Writer) (int, string, error) {
	f.ran = append(f.ran, cmd)
	if strings.Contains(cmd, "/dev/tcp/") {
		f.tries(cmd, stdout)
		return 0, "", nil
	}
	if name, ok := strings.CutPrefix(cmd, "command -v "); ok {
		if f.has[name] || name == "tar" && !f.noTar {
			return 0, "", nil
		}
		return 1, "", nil
	}
	if rest, ok := strings.CutPrefix(cmd, "sudo -n bash -c 'shopt -s globstar nullglob dotglob; cd "); ok && f.noTar {
		tree, ok := f.trees[strings.Fields(rest)[0]]
		if !ok {
			return 1, "bash: line 1: cd: No such file or directory", nil
		}
		crtOnly := strings.Contains(rest, "for f in **/*.crt;")
		for _, name := range sortedNames(tree) {
			if crtOnly && !strings.HasSuffix(name, ".crt") {
				continue
			}
			fmt.Fprintf(stdout, "\x00==> %s <==\n%s", name, tree[name])
		}
		return 0, "", nil
	}
	if rest, ok := strings.CutPrefix(cmd, "sudo -n tar -C "); ok && f.noTar {
		return 1, "sudo: tar: no such file or directory", nil
	} else if ok {
		dir := strings.TrimSuffix(rest, " -cf - .")
		tree, ok := f.trees[dir]
		if !ok {
			return 2, "tar: " + dir + ": Cannot open: No such file or directory", nil
		}
		_, _ = stdout.Write(tarOf(tree))
		return 0, "", nil
	}
	if out, ok := f.out[cmd]; ok {
		_, _ = io.WriteString(stdout, out)
		return 0, "", nil
	}
	return 127, "bash: " + strings.Fields(cmd)[0] + ": command not found", nil
}

func sortedNames(files map[string]string) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func tarOf(files map[string]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	_ = tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, n := range names {
		_ = tw.WriteHeader(&tar.Header{Name: "./" + n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n]))})
		_, _ = tw.Write([]byte(files[n]))
	}
	_ = tw.WriteHeader(&tar.Header{Name: "./link", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"})
	_ = tw.Close()
	return buf.Bytes()
}

// fakeAPI answers GETs from JSON by path.
type fakeAPI map[string]any

func (a fakeAPI) Get(_ context.Context, path string, out any) error {
	v, ok := a[path]
	if !ok {
		return fmt.Errorf("GET %s: HTTP 404", path)
	}
	data, _ := json.Marshal(v)
	return json.Unmarshal(data, out)
}

func gatherSpec(t *testing.T) *spec.Spec {
	t.Helper()
	dir := t.TempDir()
	s := &spec.Spec{Name: "gl", LabDir: filepath.Join(dir, "lab"), Profile: spec.ProfileProbe, Topology: spec.Topology{Masters: 3},
		Network: spec.Network{CIDR: "192.168.126.0/24"}, Storage: spec.Storage{PoolDir: filepath.Join(dir, "pool")}}
	s.OpenShift.ManualBootstrap = true
	s.Defaults()
	require.True(t, s.Rehearsal())
	require.NoError(t, os.MkdirAll(s.LabDir, 0o700))
	return s
}

// jline is a journal line in journalctl's short form.
func jline(t time.Time, host, ident, msg string) string {
	return fmt.Sprintf("%s %s %s[100]: %s", t.Format("Jan 02 15:04:05"), host, ident, msg)
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// healthyBootstrap is a rehearsal bootstrap after stage 15, as it will be
// once the node keeps journals, crictl logs and service records.
func healthyBootstrap(t *testing.T, s *spec.Spec, with bool) *fakeNode {
	b := s.NodesByRole(spec.RoleBootstrap)[0]
	dom := s.Cluster.Domain()
	n := &fakeNode{has: map[string]bool{}, out: map[string]string{
		"date +%s.%N":          fmt.Sprintf("%d.%09d\n", gatherNow.Unix(), 1000),
		"hostname":             b.Name + "\n",
		"ip addr":              fmt.Sprintf("2: ens3: <UP>\n    inet %s/24 brd 192.168.126.255 scope global ens3\n", b.IP),
		"ip route":             "default via 192.168.126.1 dev ens3\n",
		"cat /etc/resolv.conf": "nameserver 192.168.126.1\n",
	}, trees: map[string]map[string]string{
		"/opt/openshift": certTree(t, dom),
		"/etc/kubernetes/manifests": {
			"etcd-member-pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd-bootstrap-member\n",
		},
	}}
	if !with {
		return n
	}
	n.has = map[string]bool{"journalctl": true, "crictl": true}
	j := func(unit, text string) {
		n.out["journalctl --boot --no-pager --output=short --unit="+unit+".service"] = text
	}
	j("release-image", lines(jline(gat(0, 5), b.Name, "release-image-download.sh", "Pulling quay.io/openshift-release-dev/ocp-release@sha256:abc...")))
	j("bootkube", lines(
		jline(gat(1, 0), b.Name, "bootkube.sh", "Starting stage openshift-manifests"),
		jline(gat(8, 0), b.Name, "bootkube.sh", "Successfully resolved API_URL api."+dom),
		jline(gat(8, 1), b.Name, "bootkube.sh", "Successfully resolved API_INT_URL api-int."+dom),
		jline(gat(9, 10), b.Name, "bootkube.sh", "https://localhost:2379 is healthy: successfully committed proposal: took = 10.48ms"),
		jline(gat(9, 16), b.Name, "bootkube.sh", "Waiting up to 20m0s for the Kubernetes API"),
		jline(gat(10, 30), b.Name, "bootkube.sh", "API is up"),
		jline(gat(20, 30), b.Name, "bootkube.sh", "All self-hosted control plane components successfully started"),
		jline(gat(27, 0), b.Name, "bootkube.sh", "Success while trying to reach API_URL's https endpoint at https://api."+dom+":6443/version"),
		jline(gat(27, 1), b.Name, "bootkube.sh", "Success while trying to reach API_INT_URL's https endpoint at https://api-int."+dom+":6443/version"),
		jline(gat(27, 2), b.Name, "bootkube.sh", "admin token "+fakeToken),
		jline(gat(28, 0), b.Name, "bootkube.sh", "bootkube.service complete")))
	j("kubelet", lines(jline(gat(29, 50), b.Name, "kubelet", "I0514 kubelet.go:2400] SyncLoop")))
	j("crio", lines(jline(gat(29, 45), b.Name, "crio", "level=info msg=\"Checking image status\"")))
	j("approve-csr", lines(jline(gat(14, 0), b.Name, "approve-csr.sh", "certificatesigningrequest.certificates.k8s.io/csr-m0a approved")))
	for _, u := range []string{"crio-configure", "progress"} {
		j(u, "-- No entries --\n")
	}
	containers(n, map[string]string{
		"etcd": lines(`{"level":"info","ts":"2025-05-14T10:07:05.000000Z","msg":"serving client traffic securely"}`,
			`{"level":"info","ts":"2025-05-14T10:29:30.000000Z","msg":"compacted"}`),
		"kube-apiserver":        lines("I0514 10:10:29.000000       1 secure_serving.go:213] Serving securely on [::]:6443"),
		"machine-config-server": lines("I0514 10:05:10.000000       1 api.go:66] Launching server on :22623"),
	})
	rec := func(es ...string) string { return "[" + strings.Join(es, ",\n") + "]\n" }
	e := func(t time.Time, phase, stage, result string) string {
		x := fmt.Sprintf(`{"timestamp":%q,"phase":%q`, t.Format(time.RFC3339), phase)
		if stage != "" {
			x += fmt.Sprintf(`,"stage":%q`, stage)
		}
		if result != "" {
			x += fmt.Sprintf(`,"result":%q`, result)
		}
		return x + "}"
	}
	n.trees["/var/log/openshift"] = map[string]string{
		"release-image.json": rec(e(gat(0, 5), "service start", "", ""), e(gat(0, 5), "stage start", "pull-release-image", ""),
			e(gat(0, 40), "stage end", "pull-release-image", "success"), e(gat(0, 41), "service end", "", "success")),
		"bootkube.json": rec(e(gat(1, 0), "service start", "", ""), e(gat(1, 0), "stage start", "etcd-bootstrap", ""),
			e(gat(2, 0), "stage end", "etcd-bootstrap", "success"), e(gat(28, 0), "service end", "", "success")),
		"progress.json": rec(e(gat(1, 0), "service start", "", ""), e(gat(29, 10), "service end", "", "success")),
	}
	return n
}

// containers gives node n crictl's containers with logs.
func containers(n *fakeNode, logs map[string]string) {
	var ps []map[string]any
	i := 0
	for name, log := range logs {
		i++
		id := strings.Repeat(fmt.Sprintf("%x", i), 64)
		ps = append(ps, map[string]any{"id": id, "metadata": map[string]string{"name": name}})
		n.out["sudo -n crictl logs "+id+" 2>&1"] = log
		n.out["sudo -n crictl inspect "+id] = `{"status":{"id":"` + id + `"},"info":{"runtimeSpec":{"process":{"env":["TOKEN=` + fakeToken + `"]}}}}`
	}
	data, _ := json.Marshal(map[string]any{"containers": ps})
	n.out["sudo -n crictl ps -a -o json"] = string(data)
}

// healthyMaster is master i after joining.
func healthyMaster(s *spec.Spec, m spec.Node, with bool) *fakeNode {
	n := &fakeNode{has: map[string]bool{}, out: map[string]string{
		"date +%s.%N": fmt.Sprintf("%d.5\n", gatherNow.Unix()),
		"hostname":    m.Name + "\n",
		"ip addr":     fmt.Sprintf("2: ens3: <UP>\n    inet %s/24 brd 192.168.126.255 scope global ens3\n", m.IP),
	}, trees: map[string]map[string]string{}}
	if !with {
		return n
	}
	n.has = map[string]bool{"journalctl": true, "crictl": true}
	n.out["journalctl --boot --no-pager --output=short --unit=kubelet.service"] = lines(
		jline(gat(12, 1), m.Name, "kubenswrapper", `I0514 kubelet_node_status.go:78] "Successfully registered node" node="`+m.Name+`"`),
		jline(gat(29, 55), m.Name, "kubenswrapper", `I0514 kubelet.go:2400] "SyncLoop"`))
	containers(n, map[string]string{"etcd": lines(`{"level":"info","ts":"2025-05-14T10:13:05.000000Z","msg":"promoted learner"}`,
		`{"level":"info","ts":"2025-05-14T10:29:40.000000Z","msg":"compacted"}`)})
	return n
}

// certTree is the bootstrap's /opt/openshift: certificates, manifests,
// and credentials that must never reach a bundle.
func certTree(t *testing.T, dom string) map[string]string {
	root, rootKey := gatherCert(t, "root-ca", 1, nil, nil, true)
	kas, _ := gatherCert(t, "api-int."+dom, 2, root, rootKey, false)
	b64 := func(s string) string { return strings.TrimSpace(string(mustB64(s))) }
	return map[string]string{
		"tls/root-ca.crt":                      pemCert(root),
		"tls/kube-apiserver-lb-server.crt":     pemCert(kas),
		"tls/kube-apiserver-lb-server.key":     fakeKey,
		"tls/odd-name.pem":                     fakeKey,
		"auth/kubeconfig":                      "users:\n- user:\n    token: " + fakeToken + "\n",
		"auth/kubeadmin-password":              "s3cr3t-kubeadmin",
		"pull.json":                            fakePullSecret,
		"manifests/cluster-infrastructure.yml": "apiVersion: config.openshift.io/v1\nkind: Infrastructure\n",
		"manifests/openshift-config-pull.yaml": "apiVersion: v1\nkind: Secret\ndata:\n  .dockerconfigjson: " + b64(fakePullSecret) + "\n",
		"manifests/etcd-client.yaml":           "apiVersion: v1\nkind: ConfigMap\ndata:\n  key: " + b64(fakeKey) + "\n",
		"bootstrap-configs/kcm.yaml":           "users:\n- name: kcm\n  user:\n    client-key-data: " + b64(fakeKey) + "\n",
	}
}

func mustB64(s string) []byte {
	var buf bytes.Buffer
	enc := base64Encoder(&buf)
	_, _ = enc.Write([]byte(s))
	_ = enc.Close()
	return buf.Bytes()
}

func gatherCert(t *testing.T, cn string, serial int64, parent *x509.Certificate, parentKey ed25519.PrivateKey, ca bool) (*x509.Certificate, ed25519.PrivateKey) {
	t.Helper()
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(serial)}, ed25519.SeedSize))
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: gatherT0.Add(-time.Hour), NotAfter: gatherT0.Add(24 * time.Hour), IsCA: ca, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(nil, tmpl, parent, key.Public(), parentKey)
	require.NoError(t, err)
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return c, key
}

func pemCert(c *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
}

// healthyAPI is the API of a bootstrap whose masters joined.
func healthyAPI(s *spec.Spec) fakeAPI {
	type obj = map[string]any
	var nodes, csrs []obj
	members := obj{}
	for i, m := range s.NodesByRole(spec.RoleMaster) {
		nodes = append(nodes, obj{"metadata": obj{"name": m.Name, "labels": obj{"node-role.kubernetes.io/master": ""}},
			"status": obj{"conditions": []obj{{"type": "Ready", "status": "True"}}, "addresses": []obj{{"type": "InternalIP", "address": m.IP}}}})
		csrs = append(csrs, obj{"metadata": obj{"name": fmt.Sprintf("csr-m%d", i), "creationTimestamp": gat(12, 0).Format(time.RFC3339)},
			"spec":   obj{"username": "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper", "signerName": "kubernetes.io/kube-apiserver-client-kubelet"},
			"status": obj{"conditions": []obj{{"type": "Approved", "status": "True"}}}})
		members[fmt.Sprintf("%016x", i+1)] = m.IP
	}
	boot := s.NodesByRole(spec.RoleBootstrap)[0]
	return fakeAPI{
		"/api/v1/nodes": obj{"kind": "List", "items": nodes},
		"/apis/certificates.k8s.io/v1/certificatesigningrequests": obj{"kind": "List", "items": csrs},
		"/api/v1/namespaces/openshift-etcd/configmaps": obj{"kind": "List", "items": []obj{
			{"metadata": obj{"name": "etcd-endpoints", "namespace": "openshift-etcd", "annotations": obj{"alpha.installer.openshift.io/etcd-bootstrap": boot.IP}}, "data": members}}},
		"/apis/config.openshift.io/v1/clusteroperators": obj{"kind": "List", "items": []obj{
			{"metadata": obj{"name": "etcd"}, "status": obj{"conditions": []obj{{"type": "Degraded", "status": "False"}, {"type": "Available", "status": "True"}}}}}},
		"/api/v1/pods":   obj{"kind": "List", "items": []obj{}},
		"/api/v1/events": obj{"kind": "List", "items": []obj{}},
	}
}

func healthyLB(s *spec.Spec) *loadbalancer.Status {
	lb := &loadbalancer.Status{Running: true}
	for _, fe := range []struct {
		name string
		port int
	}{{"api", 6443}, {"machine-config", 22623}} {
		for _, n := range append(s.NodesByRole(spec.RoleBootstrap), s.NodesByRole(spec.RoleMaster)...) {
			lb.Backends = append(lb.Backends, loadbalancer.BackendStatus{Frontend: fe.name, Server: n.Name, Address: fmt.Sprintf("%s:%d", n.IP, fe.port), Status: "UP", LastCheck: "L7OK 200"})
		}
	}
	return lb
}

// fakeSources are a lab's sources from its fake nodes.
func fakeSources(s *spec.Spec, nodes map[string]*fakeNode, api fakeAPI) GatherSources {
	return GatherSources{
		Dial: func(_ context.Context, n spec.Node) (GatherNode, func(), error) {
			if f := nodes[n.Name]; f != nil {
				return f, func() {}, nil
			}
			return nil, nil, errors.New("ssh: connect: no route to host")
		},
		API: func(context.Context) (GatherAPI, error) {
			if api == nil {
				return nil, errors.New("dial tcp 192.168.126.1:6443: connect: connection refused")
			}
			return api, nil
		},
		LoadBalancer: func(context.Context) (*loadbalancer.Status, error) { return healthyLB(s), nil },
		Verify:       &labdir.VerifyRecord{Time: gatherNow.Add(-time.Minute), OK: true, Total: 40, Passed: 40, Failed: []labdir.VerifyFailure{}},
		Console: func(_ context.Context, n spec.Node, w io.Writer) error {
			_, err := io.WriteString(w, `{"node":"`+n.Name+`","ok":true}`+"\n")
			return err
		},
		Now: func() time.Time { return gatherNow },
	}
}

// unpack is the bundle's entries by name below its top directory.
func unpack(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(h.Name, "log-bundle-20250514103000/"), h.Name)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[strings.TrimPrefix(h.Name, "log-bundle-20250514103000/")] = string(data)
	}
}

func healthyNodes(t *testing.T, s *spec.Spec, with bool) map[string]*fakeNode {
	nodes := map[string]*fakeNode{s.NodesByRole(spec.RoleBootstrap)[0].Name: healthyBootstrap(t, s, with)}
	for _, m := range s.NodesByRole(spec.RoleMaster) {
		nodes[m.Name] = healthyMaster(s, m, with)
	}
	return nodes
}

// A healthy rehearsal lab, its nodes keeping journals, crictl logs and
// service records: the bundle is in the installer's layout with bootlab's
// files, holds no credential, and lab diagnose reads it as healthy.
func TestGatherHealthyRehearsalDiagnosesHealthy(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	var errOut bytes.Buffer
	o := GatherOptions{Status: status.New(&errOut, false), Sources: fakeSources(s, healthyNodes(t, s, true), healthyAPI(s))}
	bundle, err := Gather(context.Background(), s, &labdir.State{Name: s.Name, Spec: s}, o)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(labdir.Gather(s), "log-bundle-20250514103000.tar.gz"), bundle)
	assert.Contains(t, labdir.Entries(), filepath.Base(filepath.Dir(bundle)), "the bundle lies in a directory lab down removes")
	for _, n := range append(s.NodesByRole(spec.RoleBootstrap), s.NodesByRole(spec.RoleMaster)...) {
		assert.Contains(t, errOut.String(), "gathered "+n.Name+" ("+n.IP+")", "a progress line per node")
	}

	files := unpack(t, bundle)
	m0 := s.NodesByRole(spec.RoleMaster)[0]
	for _, want := range []string{"bootstrap/journals/bootkube.log", "bootstrap/journals/kubelet.log", "bootstrap/services/bootkube.json",
		"bootstrap/network/ip-addr.txt", "rendered-assets/openshift/tls/root-ca.crt", "bootstrap/static-pods/etcd-member-pod.yaml",
		"control-plane/" + m0.IP + "/journals/kubelet.log", "control-plane/" + m0.IP + "/network/hostname.txt",
		"resources/nodes.json", "resources/csr.json", "resources/configmaps.json", "resources/clusteroperators.json",
		"bootlab/lab.json", "bootlab/loadbalancer.json", "bootlab/clocks.json", "bootlab/verify.json", "bootlab/missing.json",
		"bootlab/console/" + m0.Name + ".log"} {
		assert.Contains(t, files, want)
	}
	assert.Regexp(t, `^etcd-[0-9a-f]{64}\.log$`, containerNames(files, "bootstrap/containers/"))
	assertNoCredentials(t, files)

	b, err := diagnose.ReadBundle(context.Background(), bundle)
	require.NoError(t, err)
	r := diagnose.Diagnose(b, diagnose.Options{})
	var text bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	assert.True(t, r.Healthy, text.String())
	assert.Equal(t, "bootlab", r.Layout)
}

// containerNames is the first container log under dir, by base name.
func containerNames(files map[string]string, dir string) string {
	var names []string
	for f := range files {
		if strings.HasPrefix(f, dir) && strings.HasSuffix(f, ".log") && strings.HasPrefix(f[len(dir):], "etcd-") {
			names = append(names, f[len(dir):])
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// assertNoCredentials: no file of the bundle holds a credential the fake
// nodes had, and the credential files are listed as left out.
func assertNoCredentials(t *testing.T, files map[string]string) {
	t.Helper()
	for name, data := range files {
		for _, secret := range []string{"FAKEKEYFAKEKEY", "PRIVATE KEY", fakeToken, "cHVsbHNlY3JldDpzM2NyM3Q", "s3cr3t-kubeadmin", strings.TrimSpace(string(mustB64(fakeKey)))[:40]} {
			assert.NotContains(t, data, secret, "%s holds a credential", name)
		}
		assert.NotContains(t, name, "auth/", name)
		assert.False(t, strings.HasSuffix(name, ".key"), name)
		assert.NotEqual(t, "link", filepath.Base(name), "links are never followed")
	}
	var m struct{ Missing []logbundle.Missing }
	require.NoError(t, json.Unmarshal([]byte(files["bootlab/missing.json"]), &m))
	left := map[string]bool{}
	for _, e := range m.Missing {
		left[e.File] = true
	}
	for _, f := range []string{"auth/kubeconfig", "auth/kubeadmin-password", "tls/kube-apiserver-lb-server.key", "tls/odd-name.pem",
		"pull.json", "manifests/openshift-config-pull.yaml", "manifests/etcd-client.yaml", "bootstrap-configs/kcm.yaml"} {
		assert.True(t, left["rendered-assets/openshift/"+f], "%s is listed as left out", f)
	}
}

// A lab whose bootstrap keeps no journals, crictl logs or service records
// (a rehearsal bootstrap before bootlab played journalctl and crictl logs
// there, or one restored from such a checkpoint): bootkube's journal and
// records come from the host's stage log, and missing.json says what
// could not be seen.
func TestGatherRehearsalFromTheStageLog(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	boot := s.NodesByRole(spec.RoleBootstrap)[0]
	log, err := stages.OpenLog(labdir.Stages(s), "uuid-1")
	require.NoError(t, err)
	for i, st := range stages.Default() {
		at := gat(1, i*20)
		require.NoError(t, log.Records.Record(stages.Record{Timestamp: at, Phase: stages.PhaseStart, Stage: st.Slug, Number: st.Number, Node: boot.Name}))
		_, _ = fmt.Fprintf(log.Output, "[%s] running %s\n", st.Label(), st.Slug)
		if st.Number == 15 {
			_, _ = fmt.Fprintf(log.Output, "[%s] bootkube.service complete\n", st.Label())
		}
		require.NoError(t, log.Records.Record(stages.Record{Timestamp: at.Add(10 * time.Second), Phase: stages.PhaseEnd, Stage: st.Slug, Number: st.Number, Node: boot.Name, Result: stages.ResultSuccess}))
	}
	require.NoError(t, log.Close())
	nodes := healthyNodes(t, s, false)
	delete(nodes, s.NodesByRole(spec.RoleMaster)[2].Name) // one master does not answer
	var errOut bytes.Buffer
	o := GatherOptions{Status: status.New(&errOut, false), Dir: t.TempDir(), Sources: fakeSources(s, nodes, nil)}
	bundle, err := Gather(context.Background(), s, &labdir.State{Name: s.Name, Spec: s, UUID: "uuid-1"}, o)
	require.NoError(t, err)
	assert.Equal(t, o.Dir, filepath.Dir(bundle), "--dir")
	files := unpack(t, bundle)

	j := files["bootstrap/journals/bootkube.log"]
	assert.Contains(t, j, "May 14 10:01:20 "+boot.Name+" bootkube.sh[0]: running release-image\n", "each line at its stage run's start")
	assert.Contains(t, j, "bootkube.service complete")
	assert.Contains(t, files, "bootstrap/pods/07-etcd-bootstrap.log")
	var bk []map[string]string
	require.NoError(t, json.Unmarshal([]byte(files["bootstrap/services/bootkube.json"]), &bk))
	assert.Equal(t, "service start", bk[0]["phase"])
	assert.Equal(t, map[string]string{"timestamp": "2025-05-14T10:05:50Z", "phase": "service end", "result": "success"}, bk[len(bk)-1])
	assert.Contains(t, files, "bootstrap/services/release-image.json")
	assertNoCredentials(t, files)

	missing := files["bootlab/missing.json"]
	for _, want := range []string{`"bootstrap/journals"`, `"bootstrap/containers"`, "has no journalctl", "has no crictl",
		`"control-plane/` + s.NodesByRole(spec.RoleMaster)[2].IP + `"`, "no route to host", `"resources"`, "connection refused"} {
		assert.Contains(t, missing, want)
	}
	assert.Contains(t, files, "control-plane/"+s.NodesByRole(spec.RoleMaster)[2].IP+"/", "the master it could not log in to has its empty directory")

	b, err := diagnose.ReadBundle(context.Background(), bundle)
	require.NoError(t, err)
	r := diagnose.Diagnose(b, diagnose.Options{})
	var text bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	assert.False(t, r.Healthy, "what it could not see is never healthy")
	assert.NotEmpty(t, r.CouldNotSee)
	// What the gather wrote in bootlab/missing.json is what diagnose says
	// it could not see.
	files2 := map[string]string{}
	for _, u := range r.CouldNotSee {
		files2[u.File] = u.Why
	}
	assert.Contains(t, files2, "bootstrap/journals", "diagnose lists the gather's missing.json")
	assert.Contains(t, files2["bootstrap/journals"], "has no journalctl")
	t.Log(text.String())
}

// A rehearsal bootstrap that keeps bootkube.service's journal gives its
// own, each line at its own time; the host's stage log still gives each
// stage's output as a pod log.
func TestGatherPrefersTheNodesBootkubeJournal(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	boot := s.NodesByRole(spec.RoleBootstrap)[0]
	log, err := stages.OpenLog(labdir.Stages(s), "uuid-1")
	require.NoError(t, err)
	st := stages.Default()[6]
	require.NoError(t, log.Records.Record(stages.Record{Timestamp: gat(1, 0), Phase: stages.PhaseStart, Stage: st.Slug, Number: st.Number, Node: boot.Name}))
	_, _ = fmt.Fprintf(log.Output, "[%s] Rendering CEO Manifests...\n", st.Label())
	require.NoError(t, log.Close())
	nodes := healthyNodes(t, s, true)
	const own = "May 14 10:01:07 bootstrap bootkube.sh[326]: Rendering CEO Manifests...\n"
	nodes[boot.Name].out["journalctl --boot --no-pager --output=short --unit=bootkube.service"] = own
	o := GatherOptions{Status: status.New(&bytes.Buffer{}, false), Dir: t.TempDir(), Sources: fakeSources(s, nodes, healthyAPI(s))}
	bundle, err := Gather(context.Background(), s, &labdir.State{Name: s.Name, Spec: s, UUID: "uuid-1"}, o)
	require.NoError(t, err)
	files := unpack(t, bundle)
	assert.Equal(t, own, files["bootstrap/journals/bootkube.log"])
	assert.Equal(t, "Rendering CEO Manifests...\n", files["bootstrap/pods/"+st.ID()+"-"+st.Slug+".log"])
}

// A bootstrap without tar (a rehearsal one) still gives its service
// records and certificates, read with bash's cat, credentials left out.
func TestGatherWithoutTar(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	nodes := healthyNodes(t, s, true)
	boot := nodes[s.NodesByRole(spec.RoleBootstrap)[0].Name]
	boot.noTar = true
	o := GatherOptions{Status: status.New(io.Discard, false), Dir: t.TempDir(), Sources: fakeSources(s, nodes, healthyAPI(s))}
	bundle, err := Gather(context.Background(), s, &labdir.State{Name: s.Name, Spec: s}, o)
	require.NoError(t, err)
	files := unpack(t, bundle)
	assert.Contains(t, files["bootstrap/services/bootkube.json"], `"phase":"service end"`)
	assert.Contains(t, files["rendered-assets/openshift/tls/root-ca.crt"], "BEGIN CERTIFICATE")
	assertNoCredentials(t, files)
	assert.NotContains(t, files[logbundle.MissingFile], "bootstrap/services\"")
}

// The size caps hold: a journal larger than the file cap keeps its tail.
func TestGatherCaps(t *testing.T) {
	t.Parallel()
	s := gatherSpec(t)
	nodes := healthyNodes(t, s, true)
	boot := nodes[s.NodesByRole(spec.RoleBootstrap)[0].Name]
	boot.out["journalctl --boot --no-pager --output=short --unit=kubelet.service"] = strings.Repeat("May 14 10:29:50 bootstrap kubelet[1]: a long line of the kubelet\n", 4000)
	o := GatherOptions{Status: status.New(io.Discard, false), Limits: logbundle.Limits{File: 64 << 10, Total: 1 << 20}, Sources: fakeSources(s, nodes, healthyAPI(s))}
	bundle, err := Gather(context.Background(), s, &labdir.State{Name: s.Name, Spec: s}, o)
	require.NoError(t, err)
	files := unpack(t, bundle)
	total := 0
	for name, data := range files {
		if name != logbundle.MissingFile {
			assert.LessOrEqual(t, len(data), 64<<10, name)
			total += len(data)
		}
	}
	assert.LessOrEqual(t, total, 1<<20)
	assert.True(t, strings.HasPrefix(files["bootstrap/journals/kubelet.log"], "May 14"), "the tail starts at a line")
	assert.Contains(t, files[logbundle.MissingFile], "only its last")
}

func base64Encoder(w io.Writer) io.WriteCloser { return base64.NewEncoder(base64.StdEncoding, w) }
