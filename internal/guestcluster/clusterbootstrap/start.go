package clusterbootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/create"
	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/openshiftcrds"
	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/wire"
	"sigs.k8s.io/yaml"
)

// Start is `cluster-bootstrap start`, played on the rehearsal bootstrap:
// it does on the node what the real one does, in order, and says what it
// cannot do. The kubelet stand-in runs the release's kube-apiserver from
// the pods it lands; once it answers on localhost:6443 the manifests are
// created through it. Its fields say where it reads the node's files and
// how long it waits: New sets what a node uses.
type Start struct {
	// ProbeConfigPath is the probe config the agent wrote (the masters of
	// a lab whose config names them).
	ProbeConfigPath string
	// BootstrapAPIWait, MastersWait and BootstrapPoll time its waits.
	BootstrapAPIWait, MastersWait, BootstrapPoll time.Duration
	// CreateWait bounds the create of manifests/ through a real
	// kube-apiserver (upstream: within the 20 minutes of the required-pods
	// wait it runs beside).
	CreateWait time.Duration
}

// New returns cluster-bootstrap start as a rehearsal bootstrap runs it.
func New() *Start {
	return &Start{ProbeConfigPath: wire.ConfigPath,
		BootstrapAPIWait: 20 * time.Minute, MastersWait: 20 * time.Minute, BootstrapPoll: 2 * time.Second, CreateWait: 20 * time.Minute}
}

// Run starts the temporary control plane from assets (/opt/openshift) in
// kube (/etc/kubernetes), waits for the bootstrap API, creates the
// manifests and waits for requiredPods (--required-pods) through it,
// records that the bootstrap is complete and tears the control plane down.
func (t *Start) Run(assets, kube, requiredPods string, stdout, stderr io.Writer) error {
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	secrets, started, err := landBootstrapControlPlane(assets, kube)
	if err != nil {
		return err
	}
	say("Starting temporary bootstrap control plane...")
	if err := t.waitForControlPlanes(assets, requiredPods, stdout, stderr); err != nil {
		return err
	}
	// 5. Tear down the temporary control plane.
	say("Tearing down temporary bootstrap control plane...")
	for _, p := range started {
		_ = os.Remove(p)
	}
	return os.RemoveAll(secrets)
}

// landBootstrapControlPlane copies the bootstrap secrets where the
// control-plane pods mount them and the pods where the kubelet starts
// them; it returns the secrets' directory and the pods' manifests.
func landBootstrapControlPlane(assets, kube string) (secrets string, started []string, err error) {
	// 1. The bootstrap secrets the control-plane pods mount: tls/, and
	// the loopback admin kubeconfig as their kubeconfig (upstream's
	// assetPathAdminKubeConfig), so the bootstrap's controller manager and
	// scheduler talk to the kube-apiserver beside them on localhost:6443.
	// auth/kubeconfig names api.<domain>: through the load balancer, which
	// has no server while the bootstrap's API starts (the controller
	// manager exited on EOF, again and again), and later to the masters'
	// API servers, loading them while they start.
	secrets = filepath.Join(kube, "bootstrap-secrets")
	if err := os.MkdirAll(secrets, 0o700); err != nil {
		return "", nil, err
	}
	tlsFiles, _ := filepath.Glob(filepath.Join(assets, "tls", "*"))
	for _, src := range tlsFiles {
		if err := copyFile(src, filepath.Join(secrets, filepath.Base(src))); err != nil {
			return "", nil, err
		}
	}
	if err := copyFile(filepath.Join(assets, "auth", "kubeconfig-loopback"), filepath.Join(secrets, "kubeconfig")); err != nil {
		return "", nil, err
	}
	// 2. The bootstrap control plane: its pods go to the kubelet.
	pods, _ := filepath.Glob(filepath.Join(assets, "bootstrap-manifests", "*"))
	for _, src := range pods {
		dst := filepath.Join(kube, "manifests", filepath.Base(src))
		if err := copyFile(src, dst); err != nil {
			return "", nil, err
		}
		started = append(started, dst)
	}
	return secrets, started, nil
}

// waitForControlPlanes waits for the bootstrap API, creates the manifests
// and waits for the required pods through it, then records that the
// bootstrap is complete.
func (t *Start) waitForControlPlanes(assets, requiredPods string, stdout, stderr io.Writer) error {
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	required, err := parseRequiredPods(requiredPods)
	if err != nil {
		return err
	}
	// 3. Wait for the bootstrap API.
	if err := t.waitForAPI(say); err != nil {
		return err
	}
	if err := t.CreateManifests(assets, stdout); err != nil {
		return err
	}
	// 4. Wait for the required pods, through the real API.
	masters, err := t.mastersReadyz()
	if err != nil {
		return err
	}
	list := func(context.Context) (map[string]string, int) { return masters, len(masters) }
	if len(masters) == 0 {
		// A rehearsal bootstrap's probe config names only itself: its
		// masters are the members that join its etcd once this stage's
		// API answers.
		list = joinedMasters(etcd.BootstrapEtcdctl(assets).Members, installConfigMasters(assets))
	}
	if err := t.waitRequiredPods(assets, required, list, say); err != nil {
		return err
	}
	return recordComplete(assets, stderr)
}

// mastersReadyz lists each master's https://IP:6443/readyz, by name,
// from the node's probe config.
func (t *Start) mastersReadyz() (map[string]string, error) {
	data, err := os.ReadFile(t.ProbeConfigPath)
	if err != nil {
		return nil, err
	}
	var c wire.Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", t.ProbeConfigPath, err)
	}
	out := map[string]string{}
	for _, n := range c.Nodes {
		if n.Role == wire.RoleMaster {
			out[n.Name] = "https://" + net.JoinHostPort(n.IP, "6443") + "/readyz"
		}
	}
	return out, nil
}

// apiProgressEvery spaces the "Still waiting" lines when the reason does
// not change.
const apiProgressEvery = 30 * time.Second

// waitForAPI polls https://localhost:6443/readyz (TLS not verified, no
// credentials, as cluster-bootstrap) up to BootstrapAPIWait, saying why it
// still waits.
func (t *Start) waitForAPI(say func(string, ...any)) error {
	const url = "https://localhost:6443/readyz"
	probe := kube.NewProbe(5 * time.Second)
	say("Waiting up to %s for the Kubernetes API", t.BootstrapAPIWait)
	start, last, lastSaid := time.Now(), "", time.Time{}
	err := t.waitFor(t.BootstrapAPIWait, func() bool {
		why := readyzAnswer(probe, url)
		if why == "" {
			return true
		}
		if why != last || time.Since(lastSaid) >= apiProgressEvery {
			say("Still waiting for the Kubernetes API (%s): %s", time.Since(start).Round(time.Second), why)
			last, lastSaid = why, time.Now()
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("the bootstrap API did not answer %s: %w (last: %s); on the node: crictl ps -a, then crictl logs of the kube-apiserver container", url, err, last)
	}
	say("API is up (%s after the control plane landed)", time.Since(start).Round(time.Second))
	return nil
}

// readyzAnswer asks url and returns "" when it answered ok, else why not.
func readyzAnswer(probe *kube.Probe, url string) (why string) {
	resp, err := probe.Get(context.Background(), url, 16<<10)
	if err != nil {
		return err.Error()
	}
	body := resp.Body
	if resp.Code == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
		return ""
	}
	if resp.Code == http.StatusForbidden {
		return "403 Forbidden for an anonymous client: the API server has not written its RBAC bootstrap roles yet"
	}
	if failed := failedChecks(string(body)); failed != "" {
		return resp.Status + ": " + failed
	}
	return fmt.Sprintf("%s %s", resp.Status, truncate(strings.Join(strings.Fields(string(body)), " "), 300))
}

// failedChecks is what a /readyz or /healthz answer says failed: its
// "[-]name failed: reason" lines (the "[+]name ok" ones are dozens, and the
// one that holds the server back is among the last), or "" when it has none.
func failedChecks(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "[-]") {
			out = append(out, l)
		}
	}
	return strings.Join(out, ", ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// recordComplete creates (or updates) ConfigMap kube-system/bootstrap
// with status complete through the bootstrap's kube-apiserver. Not
// cluster-bootstrap's work upstream: report-progress.sh (progress.service)
// writes it after .bootkube.done. The rehearsal writes it here because the
// etcd operator's teardown waits for it and stage 14's wait-for-ceo waits
// for the teardown; docs/rehearsal-lab.md and `stage explain 13` say so.
func recordComplete(assets string, stderr io.Writer) error {
	if err := recordBootstrapCompleteAPI(context.Background(), assets); err != nil {
		return fmt.Errorf("create ConfigMap kube-system/bootstrap through the bootstrap API: %w", err)
	}
	fmt.Fprintln(stderr, "cluster-bootstrap (bootlab rehearsal stand-in): ConfigMap kube-system/bootstrap (status complete) created through the bootstrap's kube-apiserver; the etcd operator's teardown reads it from etcd")
	return nil
}

// recordBootstrapCompleteAPI creates (or updates) ConfigMap
// kube-system/bootstrap with status complete through the API of
// cluster-bootstrap's loopback kubeconfig.
func recordBootstrapCompleteAPI(ctx context.Context, assets string) error {
	cfg, err := kube.LoadKubeconfig(filepath.Join(assets, "auth", "kubeconfig-loopback"))
	if err != nil {
		return err
	}
	c, err := kube.NewClient(cfg)
	if err != nil {
		return err
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "bootstrap", "namespace": "kube-system"}, "data": map[string]string{"status": "complete"}}
	const coll = "/api/v1/namespaces/kube-system/configmaps"
	err = c.Do(ctx, http.MethodPost, coll, cm, nil)
	if kube.IsAlreadyExists(err) {
		err = c.Do(ctx, http.MethodPut, coll+"/bootstrap", cm, nil)
	}
	return err
}

// masterList says which masters the bootstrap knows of now, each with the
// /readyz URL of its kube-apiserver, and how many the cluster has.
type masterList func(ctx context.Context) (readyz map[string]string, want int)

// joinedMasters lists a rehearsal bootstrap's masters: the members that
// joined its etcd (members lists them), asked again each round until want
// have. A master joins
// once it has fetched its config, which stage 12 serves and which it may
// fetch only after this stage began: the wait holds for it, as upstream's
// holds for its pods, rather than going on with the masters that joined
// first. want is the install-config's controlPlane.replicas, 0 when
// unknown (the members seen so far are then all there are).
func joinedMasters(members func(context.Context) ([]etcd.Member, error), want int) masterList {
	var known map[string]string
	return func(ctx context.Context) (map[string]string, int) {
		if known == nil || len(known) < want {
			if ms, err := members(ctx); err == nil {
				known = readyzOfMembers(ms)
			}
		}
		return known, max(want, len(known))
	}
}

// installConfigMasters is controlPlane.replicas of the install-config the
// installer keeps in manifests/cluster-config.yaml (kube-system/
// cluster-config-v1), 0 when the file or the field is missing.
func installConfigMasters(assets string) int {
	data, err := os.ReadFile(filepath.Join(assets, "manifests", "cluster-config.yaml"))
	if err != nil {
		return 0
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if yaml.Unmarshal(data, &cm) != nil {
		return 0
	}
	var ic struct {
		ControlPlane struct {
			Replicas int `json:"replicas"`
		} `json:"controlPlane"`
	}
	if yaml.Unmarshal([]byte(cm.Data["install-config"]), &ic) != nil || ic.ControlPlane.Replicas < 0 {
		return 0
	}
	return ic.ControlPlane.Replicas
}

// readyzOfMembers maps the masters' etcd members (every named member but
// the bootstrap's) to the /readyz URL of the kube-apiserver on the same
// host: what the bootstrap knows of its masters, since its probe config
// names only itself.
func readyzOfMembers(ms []etcd.Member) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		if m.Name == "" || m.Name == etcd.BootstrapMemberName || len(m.ClientURLs) == 0 {
			continue
		}
		u, err := url.Parse(m.ClientURLs[0])
		if err != nil || u.Hostname() == "" {
			continue
		}
		out[m.Name] = "https://" + net.JoinHostPort(u.Hostname(), "6443") + "/readyz"
	}
	return out
}

func (t *Start) waitFor(timeout time.Duration, ok func() bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(t.BootstrapPoll)
	defer tick.Stop()
	for {
		if ok() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %s", timeout)
		case <-tick.C:
		}
	}
}

func copyFile(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, fi.Mode().Perm())
}

// CreateManifests is cluster-bootstrap's create, through the real
// kube-apiserver: OpenShift's CRDs first, which bootlab writes because the
// real payload's come from its images, then every manifest of manifests/,
// with cluster-bootstrap's loopback kubeconfig.
func (t *Start) CreateManifests(assets string, stdout io.Writer) error {
	crds, err := openshiftcrds.Manifests()
	if err != nil {
		return err
	}
	_, _, err = create.Bootstrap(context.Background(), create.BootstrapOptions{
		Kubeconfig: filepath.Join(assets, "auth", "kubeconfig-loopback"), ManifestDir: filepath.Join(assets, "manifests"),
		First: crds, FirstTitle: "OpenShift's CRDs, written by bootlab (the real payload's CRDs come from its images)",
		ReadyTimeout: t.BootstrapAPIWait, CreateTimeout: t.CreateWait, Poll: t.BootstrapPoll, Log: stdout,
	})
	if err != nil {
		return fmt.Errorf("create %s through the bootstrap API: %w", filepath.Join(assets, "manifests"), err)
	}
	return nil
}
