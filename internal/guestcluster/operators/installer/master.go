package installer

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
)

// kasPoll is how often a master's installer stand-in looks again.
const kasPoll = 10 * time.Second

// Master plays the installers of a rehearsal master's control plane.
type Master struct {
	Log  *slog.Logger
	Self wire.NodeExpect
	// Dial opens the connections to the API (the node's resolver for
	// api-int).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Report says where the master's kube-apiserver stands: ready, or
	// still to come and why (the node's api check).
	Report func(ready bool, detail string)
}

// Run plays the kube-apiserver operator's installer for the master, in
// upstream's order: once this master's etcd member votes and the real
// bootstrap API serves the revision's objects (stage 13 created them), it
// copies them into static-pod-resources and writes the kube-apiserver pod,
// which the kubelet stand-in starts on the 6443 the master kept closed
// until then. Then the controller manager's and scheduler's installers.
func (a Master) Run(ctx context.Context) {
	self := a.Self
	local := etcd.MasterEtcdctl("https://" + self.IP + ":2379")
	servers, ok := a.waitVoter(ctx, local, self)
	if !ok {
		return
	}
	image, version := "", ""
	if rel, err := wire.ReadRehearsalRelease(wire.ReleaseMetadataPath); err == nil {
		image, version = rel.Components["hyperkube"], rel.Version
	}
	in := controlplane.MasterInput{AdvertiseAddress: self.IP, EtcdServers: servers, OpenShift: version, Revision: 1}
	// After a reboot each operand's pod is on the node's disk at the
	// revision it had: that revision again, which writes the same pod
	// (the kubelet keeps it running), not a step back to revision 1.
	kas := keptRevision(kubelet.StaticPodDir, controlplane.KubeAPIServerOperand, in)
	if !a.installUntilDone(ctx, controlplane.KubeAPIServerOperand, kas, image) {
		return
	}
	a.Report(false, fmt.Sprintf("kube-apiserver installer stand-in wrote revision %d (etcd %v); the kubelet stand-in starts the real kube-apiserver", kas.Revision, servers))
	a.waitLocalAPI(ctx, kas.Revision, servers)
	if !a.recordWhenServing(ctx, controlplane.KubeAPIServerOperand, controlplane.APIPort, kas.Revision) {
		return
	}
	// The controller manager's and scheduler's operators install theirs
	// once the master's kube-apiserver serves: each talks to it at
	// localhost:6443.
	for _, o := range []struct {
		op   controlplane.Operand
		port int
	}{{controlplane.KubeControllerManagerOperand, controlplane.ControllerManagerPort}, {controlplane.KubeSchedulerOperand, controlplane.SchedulerPort}} {
		oin := keptRevision(kubelet.StaticPodDir, o.op, in)
		if !a.installUntilDone(ctx, o.op, oin, image) || !a.recordWhenServing(ctx, o.op, o.port, oin.Revision) {
			return
		}
	}
	a.rolloutWithoutBootstrap(ctx, local, kas, image)
}

// keptRevision is in at the revision of operand o's pod in the static pod
// directory dir, when a pod of an earlier boot is there (in unchanged
// when none is, or its revision cannot be read).
func keptRevision(dir string, o controlplane.Operand, in controlplane.MasterInput) controlplane.MasterInput {
	data, err := os.ReadFile(filepath.Join(dir, o.Pod(in, "").File))
	if err != nil {
		return in
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(data, &pod); err != nil {
		return in
	}
	if rev, err := strconv.Atoi(pod.Labels["revision"]); err == nil && rev > in.Revision {
		in.Revision = rev
	}
	return in
}

// rolloutWithoutBootstrap is the kube-apiserver operator's next revision
// once the etcd operator removed etcd-bootstrap (after stage 15): the
// endpoint observer drops the bootstrap's address from --etcd-servers and
// the installer rolls revision 2 out, which the kubelet stand-in starts in
// place of revision 1.
func (a Master) rolloutWithoutBootstrap(ctx context.Context, local etcd.Etcdctl, in controlplane.MasterInput, image string) {
	for {
		if ms, err := local.Members(ctx); err == nil && !hasBootstrap(ms) {
			var changed bool
			if in, changed = nextRevision(in, ms); !changed {
				return
			}
			break
		}
		if !timing.Sleep(ctx, kasPoll) {
			return
		}
	}
	if !a.installUntilDone(ctx, controlplane.KubeAPIServerOperand, in, image) {
		return
	}
	a.Report(false, fmt.Sprintf("kube-apiserver installer stand-in wrote revision %d without the removed etcd-bootstrap (etcd %v); the kubelet stand-in restarts the real kube-apiserver", in.Revision, in.EtcdServers))
	a.waitLocalAPI(ctx, in.Revision, in.EtcdServers)
	a.recordWhenServing(ctx, controlplane.KubeAPIServerOperand, controlplane.APIPort, in.Revision)
}

// nextRevision is in with the members' --etcd-servers as the next revision
// (revision 1 the first), and whether they changed.
func nextRevision(in controlplane.MasterInput, ms []etcd.Member) (controlplane.MasterInput, bool) {
	next := etcdServers(ms)
	if slices.Equal(next, in.EtcdServers) {
		return in, false
	}
	in.Revision, in.EtcdServers = max(in.Revision, 1)+1, next
	return in, true
}

func hasBootstrap(ms []etcd.Member) bool {
	for _, m := range ms {
		if m.Name == etcd.BootstrapMemberName {
			return true
		}
	}
	return false
}

// installUntilDone runs operand o's installer stand-in every kasPoll
// until it has installed (its objects appear once stage 13 has created
// them), logging each new reason it waits; false when ctx ended first.
func (a Master) installUntilDone(ctx context.Context, o controlplane.Operand, in controlplane.MasterInput, image string) bool {
	inst := &Installer{Log: a.Log, Operand: o, StaticPodDir: kubelet.StaticPodDir, Image: image, Input: in}
	last := ""
	for {
		err := a.installOnce(ctx, inst)
		if err == nil {
			return true
		}
		if msg := err.Error(); msg != last {
			last = msg
			a.Log.Info(string(o.Component)+" installer stand-in: not installed yet", "why", msg)
		}
		if !timing.Sleep(ctx, kasPoll) {
			return false
		}
	}
}

// installOnce builds the source (the kubeconfig lands with the etcd
// operator stand-in's Ignition files), reads the cluster's networks from
// its Network config and the gates of its FeatureGate for the release, as
// the operators observe them, and installs.
func (a Master) installOnce(ctx context.Context, inst *Installer) error {
	api, err := NewAPISource(apiKubeconfig, a.Dial)
	if err != nil {
		return err
	}
	n, err := api.Network(ctx)
	if err != nil {
		return fmt.Errorf("%s installer stand-in: read networks.config.openshift.io/cluster (stage 13 creates it from /opt/openshift/%s): %w",
			inst.Operand.Component, controlplane.NetworkManifest, err)
	}
	inst.Input.ServiceCIDR, inst.Input.ClusterCIDR = n.ServiceCIDR, n.ClusterCIDR
	if inst.Input.OpenShift != "" {
		fg, err := api.FeatureGates(ctx, inst.Input.OpenShift)
		if err != nil {
			return fmt.Errorf("%s installer stand-in: read featuregates.config.openshift.io/cluster (stage 13 creates it from /opt/openshift/%s with the status stage 05 resolved): %w",
				inst.Operand.Component, controlplane.FeatureGateManifest, err)
		}
		inst.Input.FeatureGates = fg
	}
	inst.Source = Sources{MasterEtcdFiles(wire.EtcdCABundle, wire.EtcdClientCert, wire.EtcdClientKey),
		MasterClientFiles(), api}
	return inst.Install(ctx)
}

// apiKubeconfig is the installer stand-ins' credential: the
// kube-apiserver operator's identity, in the master's served config.
const apiKubeconfig = wire.KASOperatorKubeconfigPath

// waitVoter waits until this master's member votes and returns the
// revision's --etcd-servers (etcdServers).
func (a Master) waitVoter(ctx context.Context, local etcd.Etcdctl, self wire.NodeExpect) ([]string, bool) {
	myPeer := "https://" + self.IP + ":2380"
	for {
		ms, err := local.Members(ctx)
		if err == nil {
			if _, ok := votingMasters(ms, myPeer); ok {
				return etcdServers(ms), true
			}
		}
		if !timing.Sleep(ctx, kasPoll) {
			return nil, false
		}
	}
}

// etcdServers is --etcd-servers as the kube-apiserver operator observes
// it (library-go pkg/operator/configobserver/etcd/observe_etcd_endpoints.go,
// ObserveStorageURLsToArgumentsWithAlwaysLocal): https://IP:2379 of every
// voting member the etcd operator lists in openshift-etcd/etcd-endpoints,
// the bootstrap's among them while it is a member (its
// alpha.installer.openshift.io/etcd-bootstrap annotation), and always
// https://localhost:2379, sorted.
func etcdServers(ms []etcd.Member) []string {
	out := []string{"https://localhost:2379"}
	for _, m := range ms {
		if m.Name == "" || m.IsLearner || len(m.ClientURLs) == 0 {
			continue
		}
		u, err := url.Parse(m.ClientURLs[0])
		if err != nil || u.Hostname() == "" {
			continue
		}
		out = append(out, "https://"+net.JoinHostPort(u.Hostname(), "2379"))
	}
	sort.Strings(out)
	return out
}

// votingMasters are the client URLs of the started, voting members but
// the bootstrap's; ok is true when the member with peer URL myPeer is one.
func votingMasters(ms []etcd.Member, myPeer string) (servers []string, ok bool) {
	for _, m := range ms {
		if m.Name == "" || m.IsLearner || m.Name == etcd.BootstrapMemberName {
			continue
		}
		servers = append(servers, m.ClientURLs...)
		for _, u := range m.PeerURLs {
			ok = ok || u == myPeer
		}
	}
	return servers, ok
}

// waitLocalAPI reports on the API check once the master's kube-apiserver
// answers /readyz on 6443.
func (a Master) waitLocalAPI(ctx context.Context, revision int, servers []string) {
	// Any certificate: this asks the local process whether it is ready;
	// the load balancer's check does the same.
	probe := kube.NewProbe(5 * time.Second)
	start := time.Now()
	for {
		// Until the kubelet stand-in has replaced the previous revision's
		// process, its /readyz is not this revision's.
		if !servingRevision(servers) {
			a.Report(false, fmt.Sprintf("kube-apiserver revision %d installed; waiting for the kubelet stand-in to run it", revision))
			if !timing.Sleep(ctx, 2*time.Second) {
				return
			}
			continue
		}
		resp, err := probe.Get(ctx, "https://127.0.0.1:6443/readyz", 0)
		if err == nil {
			if resp.Code == http.StatusOK {
				a.Report(true, fmt.Sprintf("real kube-apiserver (the release's, from the installer stand-in's pod) revision %d ready %s after its pod landed; etcd %v%s", revision, time.Since(start).Round(time.Second), servers, etcd.MemInUse()))
				return
			}
			err = fmt.Errorf("/readyz: %s", resp.Status)
		}
		a.Report(false, fmt.Sprintf("kube-apiserver pod installed; waiting for /readyz on :6443: %v", err))
		if !timing.Sleep(ctx, 5*time.Second) {
			return
		}
	}
}
