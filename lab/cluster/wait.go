package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/status"
)

// The installer's wait-for timeouts (platform none).
const (
	DefaultAPITimeout       = 20 * time.Minute
	DefaultBootstrapTimeout = 45 * time.Minute
	DefaultInstallTimeout   = 40 * time.Minute
	DefaultPollInterval     = 5 * time.Second
	// DefaultNodeTimeout bounds one SSH command of the narrative, so a
	// node that stops answering cannot stall the wait and its timeouts.
	DefaultNodeTimeout = 30 * time.Second
)

// TimeoutError is a wait that ran out of time; What names the milestone.
type TimeoutError struct {
	What    string
	Timeout time.Duration
	Hint    string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s did not happen within %s: %s", e.What, e.Timeout, e.Hint)
}

// BootstrapWaitOptions configure WaitBootstrapComplete.
type BootstrapWaitOptions struct {
	// API reaches the cluster through the load balancer (auth/kubeconfig).
	API *Client
	// MCS is the Machine Config Server behind the load balancer (nil: not checked).
	MCS *MCS
	// Bootstrap runs commands on the bootstrap node (nil: no SSH narrative).
	Bootstrap node.Node
	// Masters are the lab's control-plane nodes.
	Masters []LabNode
	// Timeouts (zero: the installer's) and the poll interval.
	APITimeout, BootstrapTimeout, Interval time.Duration
	// NodeTimeout bounds each command on the bootstrap node (zero: DefaultNodeTimeout).
	NodeTimeout time.Duration
	// OnWorkerConfig is called once when the MCS first serves /config/worker
	// (the masters' MCS is up): the moment to boot the workers.
	OnWorkerConfig func(ctx context.Context) error
	Status         *status.Status
	Log            *slog.Logger
}

type narrator struct {
	st    *status.Status
	start time.Time
}

func (n *narrator) say(format string, a ...any) {
	el := time.Since(n.start).Truncate(time.Second)
	n.st.Infof("[%7s] %s", el, fmt.Sprintf(format, a...))
}

// WaitBootstrapComplete narrates the bootstrap as it happens and returns
// when it is safe to remove the bootstrap node: the kube-system/bootstrap
// ConfigMap says complete and the etcd operator reports
// EtcdBootstrapMemberRemoved=True. Like `openshift-install wait-for
// bootstrap-complete`, it waits APITimeout for the API, BootstrapTimeout
// more for the ConfigMap, and then for the etcd member without a limit.
func WaitBootstrapComplete(ctx context.Context, o BootstrapWaitOptions) error {
	if o.APITimeout == 0 {
		o.APITimeout = DefaultAPITimeout
	}
	if o.BootstrapTimeout == 0 {
		o.BootstrapTimeout = DefaultBootstrapTimeout
	}
	if o.Interval == 0 {
		o.Interval = DefaultPollInterval
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = DefaultNodeTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	n := &narrator{st: o.Status, start: time.Now()}
	w := &bootstrapWatch{o: o, n: n, markers: map[string]bool{}, containers: map[string]bool{}, nodes: map[string]string{}}
	n.say("Waiting up to %s (until %s) for the Kubernetes API at %s through the load balancer...", o.APITimeout, time.Now().Add(o.APITimeout).Format("15:04:05"), o.API.Server)
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		done, err := w.tick(ctx)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

type bootstrapWatch struct {
	o                   BootstrapWaitOptions
	n                   *narrator
	apiUpAt             time.Time
	lastAPINote         time.Time
	mcsUp               bool
	ssh                 string // "", "failing", "ok"
	markers, containers map[string]bool
	etcdMembers         string
	nodes               map[string]string // name -> "registered" | "Ready"
	mastersReady        bool
	complete, removed   bool
	workersStarted      bool
}

func (w *bootstrapWatch) tick(ctx context.Context) (bool, error) {
	o, n := w.o, w.n
	if w.apiUpAt.IsZero() {
		if err := o.API.Readyz(ctx); err == nil {
			w.apiUpAt = time.Now()
			v, _ := o.API.Version(ctx)
			n.say("API %s is up: %s answers /readyz through the load balancer", v, o.API.Host())
			n.say("Waiting up to %s (until %s) for bootstrapping to complete...", o.BootstrapTimeout, w.apiUpAt.Add(o.BootstrapTimeout).Format("15:04:05"))
		} else {
			o.Log.Debug("API not ready yet", "err", err)
			if time.Since(n.start) > o.APITimeout {
				return false, &TimeoutError{What: "the Kubernetes API answering /readyz", Timeout: o.APITimeout,
					Hint: "last answer: " + shortErr(err) + "; this usually means a problem on the bootstrap node: look at `bootlab lab console bootstrap`, `bootlab lab ssh bootstrap` then `journalctl -b -f -u release-image.service -u bootkube.service`, or run `bootlab lab gather`"}
			}
			if time.Since(w.lastAPINote) >= time.Minute {
				if !w.lastAPINote.IsZero() {
					n.say("still waiting for the API (%s)", shortErr(err))
				}
				w.lastAPINote = time.Now()
			}
		}
	}
	if o.MCS != nil && !w.mcsUp {
		if err := o.MCS.Healthz(ctx); err == nil {
			w.mcsUp = true
			n.say("Machine Config Server answers /healthz on :%d: masters can fetch /config/master", MCSPort)
		}
	}
	if o.Bootstrap != nil && !w.complete {
		w.watchBootstrapNode(ctx)
	}
	if !w.apiUpAt.IsZero() {
		w.watchCluster(ctx)
		if !w.complete && time.Since(w.apiUpAt) > o.BootstrapTimeout {
			return false, &TimeoutError{What: "bootstrap-complete (ConfigMap kube-system/bootstrap status: complete)", Timeout: o.BootstrapTimeout,
				Hint: "this usually means a problem with the control-plane nodes: check they booted and fetched their Ignition (`bootlab lab console master-0`), approve their CSRs (`bootlab lab approve-csrs`), or run `bootlab lab gather`"}
		}
	}
	if o.MCS != nil && o.OnWorkerConfig != nil && !w.workersStarted {
		if code, err := o.MCS.ConfigStatus(ctx, "worker"); err == nil && code == 200 {
			w.workersStarted = true
			n.say("the masters' MCS now serves /config/worker: starting the workers")
			if err := o.OnWorkerConfig(ctx); err != nil {
				n.say("could not start the workers (%v): run `bootlab lab up --start-workers`", err)
			}
		}
	}
	if w.complete && w.removed {
		n.say("It is now safe to remove the bootstrap resources: run `bootlab lab pivot`")
		return true, nil
	}
	return false, nil
}

func (w *bootstrapWatch) watchBootstrapNode(ctx context.Context) {
	n := w.n
	run := func(cmd string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, w.o.NodeTimeout)
		defer cancel()
		out, err := node.Output(cctx, w.o.Bootstrap, cmd)
		return string(out), err
	}
	out, err := run("ls -1a /opt/openshift/ 2>/dev/null | grep '\\.done$' || true")
	if err != nil {
		if w.ssh == "" {
			w.ssh = "failing"
			n.say("no SSH to core@bootstrap yet (%v); still trying", err)
		}
		w.o.Log.Debug("ssh bootstrap", "err", err)
		return
	}
	if w.ssh != "ok" {
		w.ssh = "ok"
		n.say("logged in to core@bootstrap over SSH: watching /opt/openshift/*.done and the containers")
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		m := path.Base(strings.TrimSpace(line))
		if m == "" || m == "." || w.markers[m] {
			continue
		}
		w.markers[m] = true
		if m == ".bootkube.done" {
			n.say("bootkube.service finished: /opt/openshift/.bootkube.done")
		} else {
			n.say("bootkube stage %s done (/opt/openshift/%s)", strings.TrimSuffix(m, ".done"), m)
		}
	}
	out, err = run("sudo crictl ps -o json")
	if err != nil {
		w.o.Log.Debug("crictl ps", "err", err)
		return
	}
	var ps struct {
		Containers []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Labels map[string]string `json:"labels"`
		} `json:"containers"`
	}
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		w.o.Log.Debug("crictl ps output", "err", err)
		return
	}
	for _, c := range ps.Containers {
		name := c.Metadata.Name
		pod := c.Labels["io.kubernetes.pod.name"]
		key := pod + "/" + name
		if name == "" || w.containers[key] {
			continue
		}
		w.containers[key] = true
		if pod != "" {
			n.say("bootstrap: container %s of pod %s started", name, pod)
		} else {
			n.say("bootstrap: container %s started", name)
		}
	}
}

func (w *bootstrapWatch) watchCluster(ctx context.Context) {
	o, n := w.o, w.n
	var ep corev1.ConfigMap
	if err := o.API.Get(ctx, EtcdEndpointsPath, &ep); err == nil {
		members := etcdMembers(ep)
		if members != "" && members != w.etcdMembers {
			w.etcdMembers = members
			n.say("etcd members: %s", members)
		}
	}
	var nodes corev1.NodeList
	if err := o.API.Get(ctx, MasterNodesPath, &nodes); err == nil {
		ready := 0
		for _, nd := range nodes.Items {
			state := "registered"
			for _, c := range nd.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					state = "Ready"
				}
			}
			if state == "Ready" {
				ready++
			}
			if w.nodes[nd.Name] != state {
				w.nodes[nd.Name] = state
				if state == "Ready" {
					n.say("master %s is Ready", nd.Name)
				} else {
					n.say("master %s registered (not Ready yet)", nd.Name)
				}
			}
		}
		if !w.mastersReady && len(o.Masters) > 0 && ready >= len(o.Masters) {
			w.mastersReady = true
			n.say("all %d masters are Ready", ready)
		}
	}
	if !w.complete {
		var cm corev1.ConfigMap
		err := o.API.Get(ctx, BootstrapCMPath, &cm)
		if err == nil && cm.Data["status"] == "complete" {
			w.complete = true
			n.say("ConfigMap kube-system/bootstrap says status: complete (progress.service reported bootkube done and the masters serve the API)")
			n.say("Waiting for the bootstrap etcd member to be removed...")
		}
	}
	if !w.removed {
		var etcd statusObject
		if err := o.API.Get(ctx, EtcdOperatorPath, &etcd); err == nil && etcd.is(EtcdBootstrapMemberRemoved, "True") {
			w.removed = true
			c, _ := etcd.condition(EtcdBootstrapMemberRemoved)
			n.say("etcd operator: %s=True (%s): the bootstrap etcd member is gone", EtcdBootstrapMemberRemoved, c.Reason)
		}
	}
}

// etcdMembers lists the members of the etcd-endpoints ConfigMap: data maps
// member IDs to IPs; the bootstrap member is in an annotation.
func etcdMembers(cm corev1.ConfigMap) string {
	var out []string
	for _, ip := range cm.Data {
		out = append(out, ip)
	}
	sort.Strings(out)
	if b := cm.Annotations["alpha.installer.openshift.io/etcd-bootstrap"]; b != "" {
		out = append(out, b+" (bootstrap)")
	}
	return strings.Join(out, ", ")
}

// shortErr is the first line of err, without Go's URL error wrapping.
func shortErr(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "\": "); i >= 0 {
		msg = msg[i+3:]
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
