package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/status"
)

// InstallWaitOptions configure WaitInstallComplete.
type InstallWaitOptions struct {
	API *Client
	// Timeout (zero: the installer's 40m) and the poll interval.
	Timeout, Interval time.Duration
	// ClusterDomain names the console URL; KubeadminPasswordFile is shown, never read.
	ClusterDomain         string
	KubeadminPasswordFile string
	Status                *status.Status
	Log                   *slog.Logger
}

// WaitInstallComplete narrates the cluster operators rolling out and returns
// when ClusterVersion is Available=True, Failing=False, Progressing=False.
func WaitInstallComplete(ctx context.Context, o InstallWaitOptions) error {
	if o.Timeout == 0 {
		o.Timeout = DefaultInstallTimeout
	}
	if o.Interval == 0 {
		o.Interval = DefaultPollInterval
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	n := &narrator{st: o.Status, start: time.Now()}
	n.say("Waiting up to %s (until %s) for the cluster at %s to initialize...", o.Timeout, time.Now().Add(o.Timeout).Format("15:04:05"), o.API.Server)
	w := &installWatch{o: o, n: n, lastPending: -1}
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		if w.clusterVersionDone(ctx) {
			return nil
		}
		w.operators(ctx)
		w.pendingCSRs(ctx)
		if time.Since(n.start) > o.Timeout {
			return &TimeoutError{What: "install-complete (ClusterVersion Available)", Timeout: o.Timeout,
				Hint: "look at the cluster operators (`oc get clusteroperators` with KUBECONFIG=<lab>/assets/auth/kubeconfig), approve pending CSRs (`bootlab lab approve-csrs`), then run this again"}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// installWatch is what WaitInstallComplete said last, so it says only
// what changed.
type installWatch struct {
	o               InstallWaitOptions
	n               *narrator
	lastMsg, lastCO string
	lastPending     int
}

// clusterVersionDone reads ClusterVersion, says its progress, and is true
// once it is Available, not Failing and not Progressing.
func (w *installWatch) clusterVersionDone(ctx context.Context) bool {
	o, n := w.o, w.n
	var cv statusObject
	if err := o.API.Get(ctx, ClusterVersionPath, &cv); err != nil {
		o.Log.Debug("read ClusterVersion", "err", err)
		return false
	}
	if c, ok := cv.condition("Progressing"); ok && c.Message != w.lastMsg {
		w.lastMsg = c.Message
		n.say("ClusterVersion: %s", c.Message)
	}
	if cv.is("Available", "True") && !cv.is("Failing", "True") && cv.is("Progressing", "False") {
		n.say("Install complete: ClusterVersion %s is Available", cv.Status.Desired.Version)
		if o.ClusterDomain != "" {
			n.say("console: https://console-openshift-console.apps.%s", o.ClusterDomain)
		}
		if o.KubeadminPasswordFile != "" {
			n.say("log in as kubeadmin with the password in %s", o.KubeadminPasswordFile)
		}
		return true
	}
	if c, ok := cv.condition("Failing"); ok && c.Status == "True" {
		o.Log.Debug("ClusterVersion failing", "message", c.Message)
	}
	return false
}

// operators says how many cluster operators are available, and which not
// (when few are left).
func (w *installWatch) operators(ctx context.Context) {
	var cos struct {
		Items []statusObject `json:"items"`
	}
	if err := w.o.API.Get(ctx, ClusterOperatorPath, &cos); err != nil || len(cos.Items) == 0 {
		return
	}
	avail := 0
	var missing []string
	for _, co := range cos.Items {
		if co.is("Available", "True") {
			avail++
		} else {
			missing = append(missing, co.Metadata.Name)
		}
	}
	s := fmt.Sprintf("%d of %d cluster operators available", avail, len(cos.Items))
	if len(missing) > 0 && len(missing) <= 6 {
		s += " (waiting for " + strings.Join(missing, ", ") + ")"
	}
	if s != w.lastCO {
		w.lastCO = s
		w.n.say("%s", s)
	}
}

// pendingCSRs says how many CSRs wait for approval, when that changes.
func (w *installWatch) pendingCSRs(ctx context.Context) {
	csrs, err := ListCSRs(ctx, w.o.API)
	if err != nil {
		return
	}
	pending := 0
	for _, c := range csrs {
		if csrState(c) == "Pending" {
			pending++
		}
	}
	if pending != w.lastPending {
		if pending > 0 {
			w.n.say("%d CSR(s) pending: workers join only once approved: run `bootlab lab approve-csrs`", pending)
		}
		w.lastPending = pending
	}
}
