package reportprogress

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/kube"
)

// says starts every line the stand-in logs: it says it is one.
const says = "progress.service (bootlab stand-in of report-progress.sh)"

// Service is the progress.service stand-in.
type Service struct {
	// Assets is /opt/openshift: .bootkube.done and auth/kubeconfig.
	Assets string
	// Poll is the scripts' sleep (5 s).
	Poll time.Duration
	// Dial opens the connections (the node's resolver for api-int).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	Log  *slog.Logger
	// Release is the node's OpenShift version ("4.17.12"), which decides
	// what wait-for-ha-api.sh waits for (haWaitFor).
	Release string
}

// New returns the stand-in as a rehearsal bootstrap runs it.
func New(assets, release string, dial func(ctx context.Context, network, addr string) (net.Conn, error), log *slog.Logger) Service {
	return Service{Assets: assets, Poll: 5 * time.Second, Dial: dial, Log: log, Release: release}
}

// Run waits for .bootkube.done, then for the HA API, then creates the
// ConfigMap; it returns once it exists or ctx ends.
func (s Service) Run(ctx context.Context) error {
	done := filepath.Join(s.Assets, ".bootkube.done")
	s.Log.Info(says+": Waiting for bootstrap to complete...", "until", done)
	if !s.every(ctx, func() bool { _, err := os.Stat(done); return err == nil }) {
		return ctx.Err()
	}
	c, err := s.client()
	if err != nil {
		return err
	}
	last := ""
	wait := haWaitFor(s.Release)
	if !s.every(ctx, func() bool {
		ok, why := wait.ready(ctx, c)
		if !ok && why != last {
			s.Log.Info(says+": "+wait.says+" (wait-for-ha-api.sh)", "why", why)
			last = why
		}
		return ok
	}) {
		return ctx.Err()
	}
	s.Log.Info(says + ": Reporting install progress...")
	last = ""
	if !s.every(ctx, func() bool {
		err := createComplete(ctx, c)
		if err != nil && err.Error() != last {
			s.Log.Info(says+": oc create configmap kube-system/bootstrap failed, retrying", "why", err)
			last = err.Error()
		}
		return err == nil
	}) {
		return ctx.Err()
	}
	s.Log.Info(says + ": created ConfigMap kube-system/bootstrap (status complete) through " + c.Server())
	return nil
}

func (s Service) client() (*kube.Client, error) {
	cfg, err := kube.LoadKubeconfig(filepath.Join(s.Assets, "auth", "kubeconfig"))
	if err != nil {
		return nil, err
	}
	cfg.Dial = s.Dial
	return kube.NewClient(cfg)
}

// every asks ok every Poll until it says true (true) or ctx ends (false).
func (s Service) every(ctx context.Context, ok func() bool) bool {
	t := time.NewTicker(s.Poll)
	defer t.Stop()
	for {
		if ok() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// haWait is what wait-for-ha-api.sh waits for on a HighlyAvailable
// control plane, in a release.
type haWait struct {
	// says is the script's line for the wait.
	says string
	// available tells whether the masters' API is there, and what it saw.
	available func(ctx context.Context, c *kube.Client) (bool, string)
}

// haWaitFor is the release's wait-for-ha-api.sh (installer
// data/data/bootstrap/files/usr/local/bin/wait-for-ha-api.sh): up to
// release-4.17 it counts the addresses of the default/kubernetes
// endpoints, which each serving kube-apiserver adds; from release-4.18 it
// counts the masters with a current kube-apiserver revision. An
// unparsable release gets the newest.
func haWaitFor(release string) haWait {
	if m := controlplane.OpenShiftMinor(release); m != 0 && m < 18 {
		return haWait{says: "Waiting for at least 2 available IP addresses for the default/kubernetes service", available: endpointAddresses}
	}
	return haWait{says: "waiting for the API on two masters", available: currentRevisions}
}

// ready is wait-for-ha-api.sh: on a HighlyAvailable control plane
// (infrastructures/cluster status.controlPlaneTopology) the release's
// wait; any other topology does not wait.
func (w haWait) ready(ctx context.Context, c *kube.Client) (bool, string) {
	var infra struct {
		Status struct {
			ControlPlaneTopology string `json:"controlPlaneTopology"`
		} `json:"status"`
	}
	if err := c.Do(ctx, http.MethodGet, "/apis/config.openshift.io/v1/infrastructures/cluster", nil, &infra); err != nil {
		return false, err.Error()
	}
	if infra.Status.ControlPlaneTopology != "HighlyAvailable" {
		return true, ""
	}
	return w.available(ctx, c)
}

// endpointAddresses is 4.16 and 4.17's is_api_available: more than one
// address in the endpoints of service default/kubernetes.
func endpointAddresses(ctx context.Context, c *kube.Client) (bool, string) {
	var ep struct {
		Subsets []struct {
			Addresses []struct {
				IP string `json:"ip"`
			} `json:"addresses"`
		} `json:"subsets"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/namespaces/default/endpoints/kubernetes", nil, &ep); err != nil {
		return false, err.Error()
	}
	var ips []string
	for _, s := range ep.Subsets {
		for _, a := range s.Addresses {
			ips = append(ips, a.IP)
		}
	}
	return len(ips) > 1, fmt.Sprintf("Got the following addresses for the default/kubernetes endpoint object: %s", strings.Join(ips, " "))
}

// currentRevisions is 4.18 on: more than one master has a current
// kube-apiserver revision (kubeapiservers/cluster status.nodeStatuses,
// which the masters' installer stand-ins write).
func currentRevisions(ctx context.Context, c *kube.Client) (bool, string) {
	var kas struct {
		Status struct {
			NodeStatuses []struct {
				NodeName        string `json:"nodeName"`
				CurrentRevision int    `json:"currentRevision"`
			} `json:"nodeStatuses"`
		} `json:"status"`
	}
	if err := c.Do(ctx, http.MethodGet, "/apis/operator.openshift.io/v1/kubeapiservers/cluster", nil, &kas); err != nil {
		return false, err.Error()
	}
	n := 0
	for _, s := range kas.Status.NodeStatuses {
		if s.CurrentRevision > 0 {
			n++
		}
	}
	return n > 1, fmt.Sprintf("%d master(s) with a current kube-apiserver revision", n)
}

// createComplete is the script's `oc create` of ConfigMap
// kube-system/bootstrap {status: complete}; one that exists counts.
func createComplete(ctx context.Context, c *kube.Client) error {
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "bootstrap", "namespace": "kube-system"}, "data": map[string]string{"status": "complete"}}
	err := c.Do(ctx, http.MethodPost, "/api/v1/namespaces/kube-system/configmaps", cm, nil)
	if kube.IsAlreadyExists(err) {
		return nil
	}
	return err
}
