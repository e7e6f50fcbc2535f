package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/rhcos"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
)

// A rehearsal master's etcd, in the order of a real cluster: the
// cluster-etcd-operator is a pod of the cluster, so it runs only once the
// bootstrap's temporary control plane serves (stage 13); until then etcd
// is the bootstrap's member alone, and the bootstrap's kube-apiserver
// starts against it. Then, the master having its config (stage 12), the
// operator's cluster member controller adds the master as a learner to the
// bootstrap's member, the master's etcd pod lands in its static pod
// directory and the kubelet starts it with the initial cluster the add
// returned, and the operator promotes the learner when it has caught up.
// Once every master is a healthy voting member the operator's bootstrap
// teardown controller reports EtcdRunningInCluster (stage 14's wait-for-ceo
// returns on it), and once progress.service has written
// kube-system/bootstrap status=complete (after stage 15) it removes the
// etcd-bootstrap member (4 -> 3). Real etcd and etcdctl do the work; the operator's two
// controllers are the agent (a stand-in), and say so in the report.

const (
	// BootstrapMemberName is the bootstrap member's name, which the
	// teardown controller looks for.
	BootstrapMemberName = "etcd-bootstrap"
	// bootstrapConfigMapKey is where the API server keeps ConfigMap
	// kube-system/bootstrap in etcd.
	bootstrapConfigMapKey = "/kubernetes.io/configmaps/kube-system/bootstrap"
	// etcdPodCertDir is where the etcd pod mounts wire.EtcdCertsDir, as
	// the operator's etcd pod does.
	etcdPodCertDir = "/etc/kubernetes/static-pod-certs"
)

// Operator plays the etcd operator's cluster member and bootstrap
// teardown controllers on one rehearsal master.
type Operator struct {
	Log *slog.Logger
	// Report sets the master's etcd check of the node's report.
	Report func(p Progress, detail string)
	// Poll is how often it looks again (tests shorten it).
	Poll time.Duration
	// ReleasePath is the release metadata, which names the etcd image.
	ReleasePath string
	// Kubelet is the master's kubelet stand-in, which its caller runs
	// from the node's boot on, as kubelet.service runs; nil: the operator
	// starts one of its own with the etcd pod.
	Kubelet *kubelet.Kubelet
	// Keep says which Ignition files stay as the node's disk has them
	// (a boot after the first: Ignition runs once); nil writes them all.
	Keep func(path string) bool
	// PodDir and DataDir are where the etcd pod lands and where its
	// member keeps its data (kubelet.StaticPodDir and /var/lib/etcd).
	PodDir, DataDir string
	// APIReady says whether the cluster's API answers (nil) or why not:
	// the operator adds no member before it does. Nil adds at once.
	APIReady func(ctx context.Context) error
	// running and removed are what the teardown found: EtcdRunningInCluster
	// and the bootstrap member gone, which PublishStatus writes.
	running, removed atomic.Bool
}

// Progress is where the etcd operator stand-in stands, for the node's
// report.
type Progress int

const (
	// Failed: it gave up (the check fails).
	Failed Progress = iota
	// Waiting: it retries, the detail says on what (the check stays open).
	Waiting
	// Joined: this master is a voting member, and on the leader the
	// bootstrap member is removed (the check passes).
	Joined
)

// NewOperator returns the etcd operator stand-in as a master runs it.
func NewOperator(log *slog.Logger, report func(p Progress, detail string)) *Operator {
	return &Operator{Log: log, Report: report, Poll: 2 * time.Second, ReleasePath: wire.ReleaseMetadataPath,
		PodDir: kubelet.StaticPodDir, DataDir: etcdDataDir}
}

// Join plays the etcd operator's cluster member controller for this
// master and starts its etcd pod; on the first master by name (leader)
// it then plays the bootstrap teardown controller.
func (o *Operator) Join(ctx context.Context, self wire.NodeExpect, join *wire.EtcdJoin, leader bool, cfg types.Config) {
	// The kernel starts /init with no PATH: etcdctl and the kubelet
	// stand-in's etcd are found in the node's usual one.
	_ = os.Setenv("PATH", rhcos.DefaultPath)
	// Lay the merged config's files down as Ignition would: the etcd
	// certificates among them.
	if _, err := rhcos.WriteIgnitionFilesExcept(cfg, o.Keep); err != nil {
		o.Report(Failed, fmt.Sprintf("write the Ignition files: %v", err))
		return
	}
	if o.startedBefore() {
		local := MasterEtcdctl("https://" + self.IP + ":2379")
		o.Resume(ctx, self, local, leader, join)
		return
	}
	if !o.waitAPI(ctx) {
		return
	}
	bootEP := "https://" + join.BootstrapIP + ":2379"
	myPeer := "https://" + self.IP + ":2380"
	boot := MasterEtcdctl(bootEP)
	o.say(Waiting, "waiting for the bootstrap member at %s (stage 07 starts it)", bootEP)
	members, ok := o.addLearner(ctx, boot, bootEP, self, myPeer)
	if !ok {
		return
	}
	o.Log.Info("etcd operator stand-in: added this master as a learner", "member", self.Name, "members", MemberSummary(members))
	o.say(Waiting, "added %s as a learner; members %s; starting its etcd pod", self.Name, MemberSummary(members))
	if !o.startMember(ctx, self, members) {
		return
	}
	if members, ok = o.promote(ctx, boot, self, myPeer, members); !ok {
		return
	}
	local := MasterEtcdctl("https://" + self.IP + ":2379")
	if !o.waitHealthy(ctx, local, self) {
		return
	}
	if ms, err := local.Members(ctx); err == nil {
		members = ms
	}
	o.Log.Info("etcd operator stand-in: promoted this master's member", "member", self.Name, "members", MemberSummary(members))
	o.say(Joined, "%s joined (added as a learner, promoted when in sync; real etcd); members %s", self.Name, MemberSummary(members))
	if leader {
		o.teardownBootstrapMember(ctx, self, local, join)
	}
}

// say reports on the etcd member check, with the node's memory in use.
func (o *Operator) say(p Progress, format string, args ...any) {
	o.Report(p, fmt.Sprintf("etcd operator stand-in: "+format+memInUse(), args...))
}

// waitAPI is step 0: the operator runs as a pod of the cluster, so it adds
// no member before the cluster's API answers (stage 13 starts the
// bootstrap's). Joining earlier, as the rehearsal once did right after
// stage 12, made the bootstrap's kube-apiserver start against four TLS
// members of emulated nodes instead of one, which a real cluster never
// does. False when ctx ended first.
func (o *Operator) waitAPI(ctx context.Context) bool {
	if o.APIReady == nil {
		return true
	}
	last := ""
	for {
		err := o.APIReady(ctx)
		if err == nil {
			return true
		}
		// The first line, short: a /readyz that is not ok yet lists
		// every check it has.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		if msg = truncate(msg, 200); msg != last {
			last = msg
			o.say(Waiting, "waiting for the cluster's API (stage 13 starts the bootstrap's): the etcd operator is a pod of the cluster, so etcd stays the bootstrap's member alone until it answers: %s", msg)
		}
		if !timing.Sleep(ctx, o.Poll) {
			return false
		}
	}
}

// addLearner is step 1: member add --learner, retried: the cluster takes
// one learner at a time, as the operator adds one master at a time. It
// returns the members the add left, false when ctx ended.
func (o *Operator) addLearner(ctx context.Context, boot Etcdctl, bootEP string, self wire.NodeExpect, myPeer string) ([]Member, bool) {
	for {
		members, added, err := addLearnerOnce(ctx, boot, self.Name, myPeer)
		if added {
			return members, true
		}
		if err != nil {
			o.say(Waiting, "member add %s --learner against %s: %v (retrying)", self.Name, bootEP, err)
		}
		if !timing.Sleep(ctx, o.Poll) {
			return nil, false
		}
	}
}

// addLearnerOnce adds master name (peer URL myPeer) as a learner unless the
// list has it; added is true once the list has it as an unstarted learner.
func addLearnerOnce(ctx context.Context, boot Etcdctl, name, myPeer string) (members []Member, added bool, err error) {
	ms, err := boot.Members(ctx)
	if err != nil {
		return nil, false, err
	}
	mine := findPeer(ms, myPeer)
	if mine != nil && mine.Name != "" {
		// A member of an earlier boot: its data is gone with the
		// initramfs, so it goes and is added again.
		_, err = boot.run(ctx, "member", "remove", mine.hexID())
	} else if mine == nil {
		_, err = boot.run(ctx, "member", "add", name, "--peer-urls="+myPeer, "--learner")
	}
	if err != nil {
		return nil, false, err
	}
	if members, err = boot.Members(ctx); err != nil {
		return nil, false, err
	}
	m := findPeer(members, myPeer)
	return members, m != nil && m.Name == "", nil
}

// startMember is step 2: the etcd pod lands on the master; its kubelet
// starts it.
func (o *Operator) startMember(ctx context.Context, self wire.NodeExpect, members []Member) bool {
	image := ""
	if rel, _ := wire.ReadRehearsalRelease(o.ReleasePath); rel != nil {
		image = rel.Components["etcd"]
	}
	if err := writeMasterEtcdPod(o.podDir(), self, members, image); err != nil {
		o.say(Failed, "write the etcd pod: %v", err)
		return false
	}
	if o.Kubelet == nil {
		go kubelet.New(o.Log, kubelet.StaticPodDir, nil).Run(ctx)
	}
	return true
}

// promote is step 3: member promote once the learner has caught up. It
// returns the members once this one votes, false when ctx ended.
func (o *Operator) promote(ctx context.Context, boot Etcdctl, self wire.NodeExpect, myPeer string, members []Member) ([]Member, bool) {
	for {
		ms, err := boot.Members(ctx)
		if err == nil {
			mine := findPeer(ms, myPeer)
			switch {
			case mine == nil:
				err = errors.New("this master's member is gone from the member list")
			case !mine.IsLearner:
				return ms, true
			default:
				_, err = boot.run(ctx, "member", "promote", mine.hexID())
				if err == nil {
					continue
				}
			}
		}
		o.say(Waiting, "member promote %s: %v (retrying until the learner is in sync)", self.Name, err)
		if !timing.Sleep(ctx, o.Poll) {
			return members, false
		}
	}
}

// waitHealthy waits until this master's etcd answers endpoint health;
// false when ctx ended.
func (o *Operator) waitHealthy(ctx context.Context, local Etcdctl, self wire.NodeExpect) bool {
	for {
		ok, detail := local.healthy(ctx, local.endpoints)
		if ok {
			return true
		}
		o.say(Waiting, "%s promoted; waiting for its etcd to be healthy: %s", self.Name, detail)
		if !timing.Sleep(ctx, o.Poll) {
			return false
		}
	}
}

func findPeer(ms []Member, peer string) *Member {
	for i := range ms {
		for _, u := range ms[i].PeerURLs {
			if u == peer {
				return &ms[i]
			}
		}
	}
	return nil
}

// ReleaseEnv is the environment the release's cluster-etcd-operator
// gives every etcd member of a 3.5 cluster (pkg/etcdenvvar's
// FixedEtcdEnvVars): the 8 GiB quota, the watch progress notifications the
// API server's watch cache relies on, the apply-duration warning at 200ms,
// and the heartbeat and election timeout of the control plane's hardware
// speed (etcdTimeouts). etcd 3.6 still reads the experimental names, with a
// deprecation warning. The member's name, data dir and initial cluster
// state stay flags here, as the kubelet stand-in maps paths in arguments.
func ReleaseEnv() []corev1.EnvVar {
	return etcdEnvFor(softwareEmulated(clocksourcesPath))
}

// etcdEnvFor is ReleaseEnv for a node that is (slower) or is not
// emulated in software.
func etcdEnvFor(slower bool) []corev1.EnvVar {
	heartbeat, election := etcdTimeouts(slower)
	return []corev1.EnvVar{
		{Name: "ETCD_ELECTION_TIMEOUT", Value: election},
		{Name: "ETCD_ENABLE_PPROF", Value: "true"},
		{Name: "ETCD_EXPERIMENTAL_WARNING_APPLY_DURATION", Value: "200ms"},
		{Name: "ETCD_EXPERIMENTAL_WATCH_PROGRESS_NOTIFY_INTERVAL", Value: "5s"},
		{Name: "ETCD_HEARTBEAT_INTERVAL", Value: heartbeat},
		{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "8589934592"},
		{Name: "ETCD_SOCKET_REUSE_ADDRESS", Value: "true"},
	}
}

// etcdTimeouts are the heartbeat interval and election timeout (ms) of the
// operator's two control-plane hardware speeds: Standard (100 / 1000) and
// Slower (500 / 2500: what the operator sets on Azure and when the Etcd
// resource asks for controlPlaneHardwareSpeed: Slower). A rehearsal node
// emulated in software (TCG) is slow hardware by any measure: with the
// Standard profile, measured on a TCG rehearsal bootstrap, the peer round
// trip (1.1 s) exceeded the 1 s election timeout, the members changed
// leader again and again and the API server's lists failed with "leader
// changed", so stage 13's kube-apiserver never became ready.
func etcdTimeouts(slower bool) (heartbeat, election string) {
	if slower {
		return "500", "2500"
	}
	return "100", "1000"
}

// clocksourcesPath lists the clock sources the kernel can use.
const clocksourcesPath = "/sys/devices/system/clocksource/clocksource0/available_clocksource"

// softwareEmulated says whether this node runs under software emulation
// rather than a hypervisor with hardware virtualization: a KVM guest
// always has the kvm-clock paravirtual clock source, a TCG guest never.
// A file that cannot be read (not Linux, no sysfs) counts as hardware.
func softwareEmulated(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	return !strings.Contains(string(data), "kvm-clock")
}

// APIReady is what the operator waits for before it adds this master to
// etcd (Operator.APIReady): the API kubeconfig names (the node's bootstrap
// kubeconfig: api-int, through the load balancer) answers /readyz ok. That
// is the bootstrap's temporary control plane from stage 13 on, as the
// operator's pod runs only once a cluster API does. One client for every
// ask, so its connection is kept; dial opens it (the node's resolver).
func APIReady(kubeconfig string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(context.Context) error {
	var c *kube.Client
	return func(ctx context.Context) error {
		if c == nil {
			cfg, err := kube.LoadKubeconfig(kubeconfig)
			if err != nil {
				return err
			}
			cfg.Dial = dial
			nc, err := kube.NewClient(cfg)
			if err != nil {
				return err
			}
			c = nc
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return c.Ready(ctx)
	}
}
