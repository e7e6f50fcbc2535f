package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/timing"
)

// StandInAnnotation marks every Node and mirror pod bootlab's kubelet
// stand-in makes, so nobody takes it for a real kubelet's.
const StandInAnnotation = "bootlab.io/kubelet-stand-in"

// RoleLabelsAnnotation holds the node-role labels a node registered
// without (comma-separated keys): OpenShift's kube-apiserver lets a kubelet
// set its own node-role.kubernetes.io labels (the --node-labels of the
// masters' kubelet.service), upstream's NodeRestriction does not, so a
// node of the release's upstream apiserver asks for them here and the
// rehearsal's approve-csr stand-in, holding the admin kubeconfig, sets them.
const RoleLabelsAnnotation = "bootlab.io/node-role-labels"

// StaticPod is one static pod as the stand-in runs it (or does not).
type StaticPod struct {
	// Pod is the manifest as read from the static pod directory.
	Pod corev1.Pod
	// Hash is the manifest's digest (the mirror pod's config hash).
	Hash string
	// Container is the container the stand-in runs of it (one a pod).
	Container string
	// Running is true only while that container's process (or the
	// agent's service) runs.
	Running bool
	Started time.Time
	// Detail says why it is not running.
	Detail string
}

// Config is one node's join.
type Config struct {
	// Name is the node name (the hostname: master-0).
	Name string
	// BootstrapKubeconfig is the installer's node-bootstrapper kubeconfig
	// (auth/kubeconfig-kubelet, on the node /etc/kubernetes/kubeconfig).
	BootstrapKubeconfig string
	// Kubeconfig is where the node's own kubeconfig is written
	// (/var/lib/kubelet/kubeconfig); CertDir holds its certificate
	// (/var/lib/kubelet/pki).
	Kubeconfig, CertDir string
	// KubeletVersion is the version the release's kubelet reports (v1.32.13).
	KubeletVersion string
	// Addresses are the node's InternalIP and Hostname.
	Addresses []corev1.NodeAddress
	// Roles become node-role.kubernetes.io/<role> labels (master).
	Roles []string
	// StaticPods lists the static pods the stand-in runs right now.
	StaticPods func() []StaticPod
	// Dial, when set, opens the node's connections to the API (nil:
	// directly): the agent resolves api-int through the lab's DNS.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Poll is how often the CSR is looked at (default 2 s), and how soon a
	// failed Lease renewal is tried again; Heartbeat how often the Lease,
	// the status and the pods are written (default 10 s, the kubelet's
	// nodeStatusUpdateFrequency and its lease renew interval).
	Poll, Heartbeat time.Duration
}

// Node is a joining (then joined) node.
type Node struct {
	cfg Config
	log *slog.Logger
	api *kube.Client
	// mu guards obj, which the Lease loop reads while the sync loop
	// replaces it (a new pointer each time: a Node read is never changed).
	mu  sync.Mutex
	obj *corev1.Node
	// evented records the pods already given a not-run event.
	evented map[string]bool
}

// New checks cfg and returns the node, not joined yet.
func New(log *slog.Logger, cfg Config) (*Node, error) {
	switch {
	case cfg.Name == "":
		return nil, errors.New("node join: no node name")
	case cfg.BootstrapKubeconfig == "" || cfg.Kubeconfig == "" || cfg.CertDir == "":
		return nil, fmt.Errorf("node %s: the bootstrap kubeconfig, the kubeconfig and the certificate directory must all be set", cfg.Name)
	case cfg.KubeletVersion == "":
		return nil, fmt.Errorf("node %s: no kubelet version (the release's Kubernetes version, v1.32.13)", cfg.Name)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 10 * time.Second
	}
	if cfg.StaticPods == nil {
		cfg.StaticPods = func() []StaticPod { return nil }
	}
	return &Node{cfg: cfg, log: log, evented: map[string]bool{}}, nil
}

// Start joins (Join), registers the Node, takes its Lease and makes its
// first heartbeat.
func (n *Node) Start(ctx context.Context) error {
	api, err := n.Join(ctx)
	if err != nil {
		return err
	}
	n.api = api
	if err := n.register(ctx); err != nil {
		return err
	}
	return errors.Join(n.renewLease(ctx), n.Sync(ctx))
}

// Sync is one status heartbeat: the status posted, mirror pods made to
// match the static pods, pods it cannot run reported. The Lease is not
// in it: Run renews that on a loop of its own (keepLease).
func (n *Node) Sync(ctx context.Context) error {
	if n.api == nil {
		return fmt.Errorf("node %s: not joined", n.cfg.Name)
	}
	return errors.Join(n.postStatus(ctx), n.syncMirrorPods(ctx), n.reportNotRun(ctx))
}

// Run starts the node, retrying the join until it succeeds, then syncs
// every heartbeat until ctx ends. The Lease is renewed on a loop of its
// own, as the kubelet's node lease controller does: a sync slowed by a
// loaded API (mirror pods, events, each request up to its timeout) never
// lets the Lease age past the node controller's grace period.
func (n *Node) Run(ctx context.Context) {
	t := time.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	var leases sync.WaitGroup
	defer leases.Wait()
	joined, last := false, ""
	for {
		var err error
		if joined {
			err = n.Sync(ctx)
		} else if err = n.Start(ctx); err == nil || n.current() != nil {
			// Registered (the Node is there, whatever the first
			// heartbeat said): from now on only heartbeats.
			joined = true
			n.log.Info("kubelet stand-in: node registered", "node", n.cfg.Name)
			leases.Go(func() { n.keepLease(ctx) })
		}
		n.logChange(ctx, "node", err, &last)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// keepLease renews the Lease every Heartbeat until ctx ends; a failed
// renewal is tried again after Poll. Each try is bounded by Heartbeat, so
// one hung request cannot hold the Lease back.
func (n *Node) keepLease(ctx context.Context) {
	last := ""
	for {
		rctx, cancel := context.WithTimeout(ctx, n.cfg.Heartbeat)
		err := n.renewLease(rctx)
		cancel()
		n.logChange(ctx, "lease", err, &last)
		wait := n.cfg.Heartbeat
		if err != nil {
			wait = n.cfg.Poll
		}
		if !timing.Sleep(ctx, wait) {
			return
		}
	}
}

// logChange says an error once, and once when it is gone: the API goes
// away and comes back while the control plane moves.
func (n *Node) logChange(ctx context.Context, what string, err error, last *string) {
	switch msg := fmt.Sprint(err); {
	case err != nil && msg != *last && ctx.Err() == nil:
		n.log.Warn("kubelet stand-in: "+what, "node", n.cfg.Name, "err", err)
		*last = msg
	case err == nil && *last != "":
		n.log.Info("kubelet stand-in: "+what+" in sync again", "node", n.cfg.Name)
		*last = ""
	}
}

// RealAPI says whether the API the bootstrap kubeconfig names is a real
// kube-apiserver, one that serves CertificateSigningRequests (a plain
// probe lab's health-only API stand-in does not): nil when it is, else why
// not. A node joins only then.
func (n *Node) RealAPI(ctx context.Context) error {
	boot, err := kube.LoadKubeconfig(n.cfg.BootstrapKubeconfig)
	if err != nil {
		return fmt.Errorf("node %s: bootstrap kubeconfig: %w", n.cfg.Name, err)
	}
	boot.Dial = n.cfg.Dial
	c, err := kube.NewClient(boot)
	if err != nil {
		return fmt.Errorf("node %s: bootstrap kubeconfig %s: %w", n.cfg.Name, n.cfg.BootstrapKubeconfig, err)
	}
	var list metav1.APIResourceList
	if err := c.Do(ctx, "GET", "/apis/certificates.k8s.io/v1", nil, &list); err != nil {
		return fmt.Errorf("the API at %s serves no certificates.k8s.io/v1: %w", c.Server(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == "certificatesigningrequests" {
			return nil
		}
	}
	return fmt.Errorf("the API at %s lists no certificatesigningrequests in certificates.k8s.io/v1", c.Server())
}

// JoinWhenRealAPI joins the node, through the kubelet's CSR flow, once a
// real kube-apiserver answers at the bootstrap kubeconfig's server
// (RealAPI): until then (before stage 13) it only looks every 10 s.
func (n *Node) JoinWhenRealAPI(ctx context.Context) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	last := ""
	for {
		err := n.RealAPI(ctx)
		if err == nil {
			n.log.Info("kubelet stand-in: a real kube-apiserver answers at api-int: joining as a Node", "node", n.cfg.Name)
			n.Run(ctx)
			return
		}
		if msg := err.Error(); msg != last {
			last = msg
			n.log.Info("kubelet stand-in: not joining yet: no real kube-apiserver at api-int", "why", msg)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
