package clusterbootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/create"
	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/openshiftcrds"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/wire"
)

// Start is `cluster-bootstrap start`, played on the rehearsal bootstrap as
// openshift/cluster-bootstrap's pkg/start does it on the release's branch
// (start.go, bootstrap.go, status.go, ha_checker.go; release-4.16 to
// release-4.19): it lands the temporary control plane, waits for its API,
// creates the manifests in the background while it waits for the required
// pods, waits for the self-hosted control plane as the release does,
// sends the bootstrap-success and bootstrap-finished events and tears the
// temporary control plane down. The kubelet stand-in runs the release's
// kube-apiserver, controller manager and scheduler from the pods it lands.
// Its fields say where it reads the node's files and how long it waits:
// New sets what a node uses.
type Start struct {
	// ReleasePath is the node's release metadata: its version picks the
	// release's behaviour (Behaviour).
	ReleasePath string
	// BootstrapSecretsDir is where the bootstrap secrets go
	// (/etc/kubernetes/bootstrap-secrets); empty: under kube.
	BootstrapSecretsDir string
	// APIWait bounds the wait for the bootstrap API and PodsWait the
	// required-pods wait (upstream's bootstrapPodsRunningTimeout, 20 min
	// each); HAWait the 4.18+ wait for the self-hosted control plane
	// (controlPlaneAvailabaleWaitTimeout, 30 min); AssetsWait the create
	// after bootstrap-success (--assets-create-timeout, 60 min).
	APIWait, PodsWait, HAWait, AssetsWait time.Duration
	// APIPoll spaces the /readyz asks (1 s), PodsPoll the required-pods and
	// masters' rounds (5 s), HAPoll the 4.18+ availability rounds (2 s).
	APIPoll, PodsPoll, HAPoll time.Duration
	// TearDownDelay is --tear-down-delay (bootkube.sh passes none: 0).
	TearDownDelay time.Duration
	// APIURL is the local API's /readyz (https://localhost:6443/readyz).
	APIURL string
	// sleep waits out the load-balancer delay (time.Sleep; tests record it).
	sleep func(time.Duration)
}

// New returns cluster-bootstrap start as a rehearsal bootstrap runs it.
func New() *Start {
	return &Start{ReleasePath: wire.ReleaseMetadataPath,
		APIWait: 20 * time.Minute, PodsWait: 20 * time.Minute, HAWait: 30 * time.Minute, AssetsWait: 60 * time.Minute,
		APIPoll: time.Second, PodsPoll: 5 * time.Second, HAPoll: 2 * time.Second, APIURL: "https://localhost:6443/readyz"}
}

// Run is start --asset-dir=assets (/opt/openshift) --required-pods=... on a
// node whose kubelet reads kube/manifests (/etc/kubernetes), in the order
// of the release's start.go.
func (t *Start) Run(assets, kube, requiredPods string, stdout, stderr io.Writer) (err error) {
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	required, err := parseRequiredPods(requiredPods)
	if err != nil {
		return err
	}
	replicas, err := installConfigReplicas(assets)
	if err != nil {
		return err
	}
	b := t.behaviour(say)
	bcp := &controlPlane{assets: assets, podDir: filepath.Join(kube, "manifests"), secrets: t.secretsDir(kube)}
	// Always tear down the temporary control plane (upstream's defer).
	defer func() {
		if terr := bcp.teardown(say); terr != nil {
			say("Error tearing down temporary bootstrap control plane: %v", terr)
		}
		if err != nil {
			say("Error: %v", err)
		}
	}()
	if err = bcp.start(say); err != nil {
		return err
	}
	if err = t.waitForAPI(say); err != nil {
		return err
	}
	c, err := loopbackClient(assets)
	if err != nil {
		return err
	}
	return t.afterAPI(c, b, assets, required, replicas, bcp, say, stderr)
}

// afterAPI is start.go from the background create on: the waits, the
// events and the release's end order.
func (t *Start) afterAPI(c *kube.Client, b Behaviour, assets string, required []requiredPod, replicas int, bcp *controlPlane, say func(string, ...any), stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), t.PodsWait)
	defer cancel()
	created := t.createInBackground(ctx, cancel, assets, say, stderr)
	if err := t.waitRequiredPods(ctx, c, required, say); err != nil {
		return err
	}
	if gate := b.HAGate(replicas); gate != "" {
		if err := t.waitHA(ctx, c, gate, say); err != nil {
			return err
		}
	}
	if d := b.TearDownDelay(replicas, t.TearDownDelay); d > 0 {
		say("Waiting %v to give load-balancers time to observe the self-hosted control-plane", d)
		if t.sleep != nil {
			t.sleep(d)
		} else {
			time.Sleep(d)
		}
	}
	cancel()
	created.Wait()
	say("Sending bootstrap-success event.")
	if err := sendEvent(c, "bootstrap-success"); err != nil {
		return err
	}
	// The tail of the assets, still through the local API (bootkube.sh
	// passes --tear-down-early=false).
	actx, acancel := context.WithTimeout(context.Background(), t.AssetsWait)
	defer acancel()
	created = t.createInBackground(actx, acancel, assets, say, stderr)
	say("Waiting for remaining assets to be created.")
	created.Wait()
	finish := func() error {
		if errors.Is(actx.Err(), context.DeadlineExceeded) {
			return errors.New("timed out creating manifests")
		}
		say("Sending bootstrap-finished event.")
		return sendEvent(c, "bootstrap-finished")
	}
	if b.FinishedBeforeTeardown {
		if err := finish(); err != nil {
			return err
		}
		return bcp.teardown(say)
	}
	if err := bcp.teardown(say); err != nil {
		say("Error tearing down temporary bootstrap control plane: %v", err)
	}
	return finish()
}

// behaviour is the release's, read from the node's release metadata; a
// node without it gets the newest release's, and says so.
func (t *Start) behaviour(say func(string, ...any)) Behaviour {
	rel, err := wire.ReadRehearsalRelease(t.ReleasePath)
	if err != nil {
		b := BehaviourFor("")
		say("cluster-bootstrap (bootlab stand-in): %v: acting as release-%s's", err, b.Branch)
		return b
	}
	return BehaviourFor(rel.Version)
}

func (t *Start) secretsDir(kube string) string {
	if t.BootstrapSecretsDir != "" {
		return t.BootstrapSecretsDir
	}
	return filepath.Join(kube, "bootstrap-secrets")
}

// controlPlane is upstream's bootstrapControlPlane: the secrets and the
// pod files it copied, which teardown removes.
type controlPlane struct {
	assets, podDir, secrets string
	owned                   []string
	down                    bool
}

// start copies tls/ and the loopback admin kubeconfig into the secrets
// directory (replacing what was there) and bootstrap-manifests/ into the
// kubelet's pod directory, each file created O_EXCL (upstream's copyFile
// without overwrite): a pod file already there is an error, not replaced.
// The pods copied are owned even when a later one fails.
func (b *controlPlane) start(say func(string, ...any)) error {
	say("Starting temporary bootstrap control plane...")
	if err := os.RemoveAll(b.secrets); err != nil {
		return err
	}
	if _, err := copyDirectory(filepath.Join(b.assets, "tls"), b.secrets, true); err != nil {
		return err
	}
	// The loopback admin kubeconfig (upstream's assetPathAdminKubeConfig):
	// the bootstrap's controller manager and scheduler talk to the
	// kube-apiserver beside them on localhost:6443.
	if err := copyFile(filepath.Join(b.assets, "auth", "kubeconfig-loopback"), filepath.Join(b.secrets, "kubeconfig"), true); err != nil {
		return err
	}
	src := filepath.Join(b.assets, "bootstrap-manifests")
	say("Copying static manifests from: %s to: %s", src, b.podDir)
	owned, err := copyDirectory(src, b.podDir, false)
	b.owned = owned
	if err != nil {
		return err
	}
	say("Successfully copied static pod manifests: %v", b.owned)
	return nil
}

// teardown removes the secrets and the pod files start copied (the
// kubelet stops the pods); it is idempotent.
func (b *controlPlane) teardown(say func(string, ...any)) error {
	if b.down {
		return nil
	}
	b.down = true
	say("Tearing down temporary bootstrap control plane...")
	if err := os.RemoveAll(b.secrets); err != nil {
		return err
	}
	for _, p := range b.owned {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	b.owned = nil
	return nil
}

// copyFile copies src to dst 0600; without overwrite dst is created
// O_EXCL, so a file already there fails the copy.
func copyFile(src, dst string, overwrite bool) error {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if !overwrite {
		flags = os.O_CREATE | os.O_WRONLY | os.O_EXCL
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, flags, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyDirectory copies src into dst recursively (directories 0700) and
// returns the files it copied.
func copyDirectory(src, dst string, overwrite bool) ([]string, error) {
	var copied []string
	return copied, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		to := filepath.Join(dst, strings.TrimPrefix(p, src))
		if d.IsDir() {
			if err := os.Mkdir(to, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			return nil
		}
		if err := copyFile(p, to, overwrite); err != nil {
			return err
		}
		copied = append(copied, to)
		return nil
	})
}

// waitForAPI polls https://localhost:6443/readyz every APIPoll, up to
// APIWait, without credentials and without verifying TLS: any HTTP answer
// ends the wait (bootstrap.go waitForApi ends on the GET's error alone,
// whatever the status: a 403 or a 500 with checks still failing counts as
// up). Each new error is said once.
func (t *Start) waitForAPI(say func(string, ...any)) error {
	url := t.APIURL
	probe := kube.NewProbe(5 * time.Second)
	say("Waiting up to %v for the Kubernetes API", t.APIWait)
	start, last := time.Now(), ""
	err := pollUntil(context.Background(), t.APIWait, t.APIPoll, func() bool {
		resp, err := probe.Get(context.Background(), url, 16<<10)
		if err == nil {
			say("API is up (%s after the control plane landed; /readyz answered %s)", time.Since(start).Round(time.Second), resp.Status)
			return true
		}
		if err.Error() != last {
			say("Still waiting for the Kubernetes API: %v ", err)
			last = err.Error()
		}
		return false
	})
	if err != nil {
		// cluster-bootstrap's own words, then where the lab keeps the logs.
		return fmt.Errorf("time out waiting for Kubernetes API (last: %s); on the node: crictl ps -a, then crictl logs of the kube-apiserver container", last)
	}
	return nil
}

// createInBackground creates manifests/ (with bootlab's CRDs among them)
// through the loopback API until done or ctx ends, as start.go's
// createAssetsInBackground: a failure before ctx ends is said and cancels
// ctx, which ends the waits beside it.
func (t *Start) createInBackground(ctx context.Context, cancel func(), assets string, say func(string, ...any), log io.Writer) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := t.createManifests(ctx, assets, log); err != nil && ctx.Err() == nil {
			say("Assert creation failed: %v", err)
			cancel()
		}
	}()
	return &wg
}

// createManifests is cluster-bootstrap's create of manifests/, with
// OpenShift's CRDs that bootlab writes (the real payload's come from its
// images, rendered into manifests/) sorted among the files by their
// upstream names.
func (t *Start) createManifests(ctx context.Context, assets string, log io.Writer) error {
	crds, err := openshiftcrds.Manifests()
	if err != nil {
		return err
	}
	_, err = create.Bootstrap(ctx, create.BootstrapOptions{
		Kubeconfig: filepath.Join(assets, "auth", "kubeconfig-loopback"), ManifestDir: filepath.Join(assets, "manifests"),
		Extra: crds, Log: log,
	})
	return err
}

// CreateManifests creates manifests/ through the loopback API up to wait:
// stage 13's create alone.
func (t *Start) CreateManifests(assets string, wait time.Duration, log io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := t.createManifests(ctx, assets, log); err != nil {
		return fmt.Errorf("create %s through the bootstrap API: %w", filepath.Join(assets, "manifests"), err)
	}
	return nil
}

// sendEvent creates Event kube-system/name, as start.go's
// makeBootstrapSuccessEvent: the installer and a learner read it as the
// sign the required control-plane pods run. One that exists is kept.
func sendEvent(c *kube.Client, name string) error {
	now := time.Now().UTC().Format(time.RFC3339)
	ev := map[string]any{"apiVersion": "v1", "kind": "Event",
		"metadata":       map[string]any{"name": name, "namespace": "kube-system"},
		"involvedObject": map[string]any{"namespace": "kube-system"},
		"message":        "Required control plane pods have been created", "count": 1,
		"firstTimestamp": now, "lastTimestamp": now}
	err := c.Do(context.Background(), http.MethodPost, "/api/v1/namespaces/kube-system/events", ev, nil)
	if err != nil && !kube.IsAlreadyExists(err) {
		return fmt.Errorf("create event kube-system/%s: %w", name, err)
	}
	return nil
}

// loopbackClient is the admin client of auth/kubeconfig-loopback.
func loopbackClient(assets string) (*kube.Client, error) {
	cfg, err := kube.LoadKubeconfig(filepath.Join(assets, "auth", "kubeconfig-loopback"))
	if err != nil {
		return nil, err
	}
	return kube.NewClient(cfg)
}

// pollUntil asks ok every poll until it says true, ctx ends or timeout
// passes.
func pollUntil(ctx context.Context, timeout, poll time.Duration, ok func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if ok() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %s: %w", timeout, ctx.Err())
		case <-tick.C:
		}
	}
}
