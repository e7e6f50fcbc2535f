// Package verify checks a lab from the host and, on a probe lab, collects
// what each probe node found about itself: DNS through the lab's dnsmasq,
// every load balancer frontend through haproxy, each backend's health in
// haproxy's stats, and the nodes' console reports. Each failure carries the
// reason and the fix.
package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// HostGroup is the Group of checks run from the host.
const HostGroup = "host"

// Result is one verify run.
type Result struct {
	Lab       string         `json:"name"`
	Profile   string         `json:"profile"`
	Pivoted   bool           `json:"bootstrapRemoved"`
	OK        bool           `json:"ok"`
	Checks    []check.Result `json:"checks"`
	ElapsedMS int64          `json:"elapsedMs"`
	// Reports are the nodes' last console reports (probe labs).
	Reports map[string]*wire.Report `json:"reports,omitempty"`
	// Passes counts the rounds of checks run.
	Passes int `json:"-"`
}

// Failed returns the failed checks.
func (r *Result) Failed() []check.Result { return check.Failed(r.Checks) }

// haproxyDown starts the detail of the "lb haproxy" check when haproxy
// is not running.
const haproxyDown = "haproxy is not running"

// final is true for a failure that waiting cannot mend: haproxy not
// running (nothing restarts it while verify waits). A failure to read its
// stats is not final.
func final(c check.Result) bool {
	return c.Failed() && c.Group == HostGroup && c.Name == "lb haproxy" && strings.HasPrefix(c.Detail, haproxyDown)
}

// Options tune Run.
type Options struct {
	// Timeout bounds the wait for all checks to pass (node reports complete,
	// backends up). 0 means one pass.
	Timeout time.Duration
	// Interval between passes (default 2s). On a probe lab whose console
	// logs are on this machine a node's new report starts the next pass
	// sooner (consoleWatch).
	Interval time.Duration
	Log      *slog.Logger
	Status   *status.Status
	// Nodes is each node's VM as the hypervisor has it, read by the caller
	// before verifying (nil: not known). A node that is not running is named
	// as such, and its console reports are not trusted.
	Nodes map[string]NodeVM
	// Accelerator is the one the lab runs under (from the lab state): a
	// console that stays silent after boot is most often its fault.
	Accelerator spec.Accelerator
	// Host is the hypervisor's machine (Hypervisor.Host): console logs are
	// read and the load balancer inspected there. nil: this machine.
	Host host.Host
	// Dial opens every connection to the lab network: DNS (TCP to the lab's
	// dnsmasq), the load balancer's frontends. nil dials directly from here
	// for a local Host and through a remote Host's SSH connection, the only
	// way to a remote lab's network.
	Dial DialFunc
	// Kube opens the lab's Kubernetes API (a rehearsal lab's, with the admin
	// kubeconfig from its bootstrap): nil checks no API. It is called once
	// a stage has started the API, and its clients are kept for the run.
	Kube KubeClients
}

func (o Options) host() host.Host {
	if o.Host == nil {
		return host.Local{}
	}
	return o.Host
}

// DialFunc opens a connection to addr, like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dialTimeout bounds one direct dial.
const dialTimeout = 3 * time.Second

// dialer is opts.Dial; else the remote Host's tunnel, or a direct dial.
func (o Options) dialer() DialFunc {
	switch {
	case o.Dial != nil:
		return o.Dial
	case o.host().Remote():
		return o.host().Dial
	}
	d := &net.Dialer{Timeout: dialTimeout}
	return d.DialContext
}

// NodeVM is what the hypervisor says of a node's VM.
type NodeVM struct {
	// State is "running", "shut off", "paused", "absent", ...
	State string
	// Since is when the VM's current run started (zero: unknown). Reports
	// from an earlier boot are stale.
	Since time.Time
}

// Run verifies the lab s with its state st, repeating until every check
// passes or opts.Timeout is reached, and returns the last pass. If ctx ends
// first, the error is ctx's (a pass it cut short is no verdict on the lab).
func Run(ctx context.Context, s *spec.Spec, st *labdir.State, opts Options) (*Result, error) {
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	deadline := start.Add(opts.Timeout)
	pivoted := st != nil && st.BootstrapRemoved
	opts.Status.Start("Verifying lab %s", s.Name)
	finalSince := map[string]time.Time{}
	kube := keepClients(opts.Kube)
	watch := watchConsoles(s, pivoted, opts)
	for pass := 1; ; pass++ {
		watch.mark()
		res := &Result{Lab: s.Name, Profile: string(s.Profile), Pivoted: pivoted, Passes: pass}
		if s.Profile == spec.ProfileProbe {
			res.Reports = map[string]*wire.Report{}
			res.Checks = append(res.Checks, nodeChecks(ctx, s, pivoted, res.Reports, opts)...)
		}
		hc, settling := hostChecks(ctx, s, pivoted, res.Reports, opts.Nodes, opts.host(), opts.dialer())
		res.Checks = append(res.Checks, hc...)
		// Read each pass: a stage run meanwhile makes its checks count.
		run := stagesRun(s, st)
		if kube != nil && run != nil {
			res.Checks = append(res.Checks, apiChecks(ctx, s, run, kube, loadbalancer.LabConfigOn(opts.host(), s, pivoted))...)
		}
		res.Checks = awaitStages(s, res.Checks, run)
		res.ElapsedMS = time.Since(start).Milliseconds()
		failed := res.Failed()
		res.OK = len(failed) == 0
		// A failure that waiting cannot mend, seen on two passes in a row
		// (not a moment of haproxy's reload), ends the wait at once.
		// Passes can follow each other within 0.5 s (consoleWatch): the
		// failure must also have lasted an interval.
		hopeless, finalNow := false, map[string]time.Time{}
		for _, c := range failed {
			if final(c) {
				key := c.Group + " " + c.Name
				since, seen := finalSince[key]
				if !seen {
					since = time.Now()
				}
				finalNow[key] = since
				hopeless = hopeless || seen && time.Since(since) >= opts.Interval
			}
		}
		finalSince = finalNow
		if err := ctx.Err(); err != nil {
			// The pass ran into the end of the caller's context: its
			// failures may be the cut itself, so it is not a result.
			opts.Status.End(false)
			return res, err
		}
		if res.OK || hopeless || time.Now().After(deadline) {
			opts.Status.End(res.OK)
			saveRecord(s, res, log)
			return res, nil
		}
		slow := slowest(res.Checks)
		log.Debug("verify pass", "pass", pass, "elapsedMs", res.ElapsedMS, "failed", len(failed), "first", failed[0].Group+" "+failed[0].Name+": "+failed[0].Detail,
			"settling", settling, "slowest", slow.Group+" "+slow.Name, "slowestMs", slow.DurationMS)
		opts.Status.Update("%d/%d checks pass, waiting for %s %s", len(res.Checks)-len(failed), len(res.Checks), failed[0].Group, failed[0].Name)
		wait := opts.Interval
		if settling {
			wait = min(wait, watchGap)
		}
		if _, err := watch.wait(ctx, wait); err != nil {
			opts.Status.End(false)
			return res, err
		}
	}
}

// slowest is the check of cs that took longest (the zero Result if none).
func slowest(cs []check.Result) check.Result {
	var out check.Result
	for _, c := range cs {
		if c.DurationMS > out.DurationMS {
			out = c
		}
	}
	return out
}

// keepClients opens the API with open until it succeeds once, then hands
// out the same clients: each pass of a run does not read the kubeconfig
// over SSH again. nil stays nil.
func keepClients(open KubeClients) KubeClients {
	if open == nil {
		return nil
	}
	var api, apiInt KubeAPI
	return func(ctx context.Context) (KubeAPI, KubeAPI, error) {
		if api != nil {
			return api, apiInt, nil
		}
		a, ai, err := open(ctx)
		if err != nil {
			return nil, nil, err
		}
		api, apiInt = a, ai
		return api, apiInt, nil
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func randHex() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func cleanURLErr(err error) error {
	type unwrapper interface{ Unwrap() error }
	if u, ok := err.(unwrapper); ok && strings.HasPrefix(err.Error(), "Get ") {
		return u.Unwrap()
	}
	return err
}
