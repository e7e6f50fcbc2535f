package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/labdir"
)

// WaitOptions tune Lab.WaitBootstrap and Lab.WaitInstall.
type WaitOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// Net is how the lab network is reached (zero: directly, a local lab;
	// a remote lab's goes through its hypervisor host).
	Net cluster.Net
	// Connect opens the hypervisor to start deferred workers (default
	// ConnectLibvirt).
	Connect hypervisor.Connector
	// Timeouts and the poll interval (zero: cluster's defaults).
	APITimeout, BootstrapTimeout, InstallTimeout, Interval time.Duration
	// NoSSH does not log in to the bootstrap node to watch bootkube's
	// markers and containers; NoStartWorkers leaves deferred workers off.
	NoSSH, NoStartWorkers bool
}

// CheckWaitable refuses a lab `lab wait` cannot follow: only a real
// OpenShift install has a bootstrap to complete.
func CheckWaitable(s *spec.Spec) error {
	if s.Profile != spec.ProfileOpenShift {
		return &InputError{Err: fmt.Errorf("lab %s is a %s lab: `lab wait` follows a real OpenShift install (give a pull secret); a probe lab is checked with `bootlab lab verify`", s.Name, s.Profile)}
	}
	return nil
}

// WaitBootstrap tells the bootstrap of a built OpenShift lab as it happens
// (the API, the masters' MCS, bootkube's markers over SSH) until
// bootstrap-complete, starting the deferred workers once the masters serve
// their config.
func WaitBootstrap(ctx context.Context, s *spec.Spec, st *labdir.State, o WaitOptions) error {
	if err := CheckWaitable(s); err != nil {
		return err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Connect == nil {
		o.Connect = ConnectLibvirt
	}
	api, err := cluster.LabClient(s, o.Net)
	if err != nil {
		return err
	}
	w := cluster.BootstrapWaitOptions{
		API: api, Masters: cluster.MasterNodes(s),
		APITimeout: o.APITimeout, BootstrapTimeout: o.BootstrapTimeout, Interval: o.Interval,
		Status: o.Status, Log: o.Log,
	}
	if mcs, err := cluster.LabMCS(s, o.Net); err == nil {
		w.MCS = mcs
	} else {
		o.Log.Warn("not checking the Machine Config Server", "err", err)
	}
	if !o.NoSSH && (st == nil || !st.BootstrapRemoved) {
		if r, err := cluster.BootstrapSSH(s, o.Net); err == nil {
			defer r.Close()
			w.Bootstrap = r
		} else {
			o.Log.Warn("not watching the bootstrap node over SSH", "err", err)
		}
	}
	if !o.NoStartWorkers && len(s.NodesByRole(spec.RoleWorker)) > 0 {
		w.OnWorkerConfig = func(ctx context.Context) error {
			hv, err := o.Connect(ctx, s.Libvirt.URI, o.Log)
			if err != nil {
				return err
			}
			defer hv.Close()
			return StartNodes(ctx, hv, s, spec.RoleWorker)
		}
	}
	err = cluster.WaitBootstrapComplete(ctx, w)
	var te *cluster.TimeoutError
	if errors.As(err, &te) {
		return fmt.Errorf("%w (timeouts: --api-timeout, --bootstrap-timeout; assets in %s)", err, labdir.Assets(s))
	}
	return err
}

// WaitInstall waits for install-complete: the cluster operators available,
// then the console URL and the kubeadmin password's file.
func WaitInstall(ctx context.Context, s *spec.Spec, o WaitOptions) error {
	if err := CheckWaitable(s); err != nil {
		return err
	}
	api, err := cluster.LabClient(s, o.Net)
	if err != nil {
		return err
	}
	return cluster.WaitInstallComplete(ctx, cluster.InstallWaitOptions{
		API: api, Timeout: o.InstallTimeout, Interval: o.Interval,
		ClusterDomain:         s.Cluster.Domain(),
		KubeadminPasswordFile: filepath.Join(labdir.Assets(s), "auth", "kubeadmin-password"),
		Status:                o.Status, Log: o.Log,
	})
}
