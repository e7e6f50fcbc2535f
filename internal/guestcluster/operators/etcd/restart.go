package etcd

import (
	"context"
	"os"
	"path/filepath"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
)

// A master that reboots keeps its etcd member, as an RHCOS master does:
// its etcd pod is in /etc/kubernetes/manifests and its member's data in
// /var/lib/etcd, both on its disk, so the kubelet starts the pod again at
// boot and etcd restarts on its data as the member it was (the pod's
// initial-cluster flags are read only by a member with no data). The
// operator has nothing to add: its cluster member controller looks each
// etcd pod's node up by name in the member list and skips a pod that is
// already a member (cluster-etcd-operator
// pkg/operator/clustermembercontroller/clustermembercontroller.go,
// getEtcdPodToAddToMembership: "skipping unready pod ... because it is
// already an etcd member"). Adding it again, as a first boot does, would
// remove the member the data belongs to and leave it unable to start.

// etcdDataDir is where the master's etcd pod keeps its member's data.
const etcdDataDir = "/var/lib/etcd"

// etcdPodFile is the master's etcd pod in its static pod directory.
const etcdPodFile = "etcd-pod.yaml"

func (o *Operator) podDir() string {
	if o.PodDir == "" {
		return kubelet.StaticPodDir
	}
	return o.PodDir
}

func (o *Operator) dataDir() string {
	if o.DataDir == "" {
		return etcdDataDir
	}
	return o.DataDir
}

// startedBefore says whether this master's member ran on an earlier boot:
// its etcd pod is in the static pod directory and its data directory has
// a member (etcd writes member/ when it first starts).
func (o *Operator) startedBefore() bool {
	if _, err := os.Stat(filepath.Join(o.podDir(), etcdPodFile)); err != nil {
		return false
	}
	fi, err := os.Stat(filepath.Join(o.dataDir(), "member"))
	return err == nil && fi.IsDir()
}

// Resume plays the cluster member controller for a master whose member
// started on an earlier boot: it adds nothing, waits until local (this
// master's own etcd, started by the kubelet from the kept pod) lists
// this master as a voting member and is healthy, and reports it joined;
// on the leader the bootstrap teardown then goes on where it stands (the
// bootstrap member may be gone already).
func (o *Operator) Resume(ctx context.Context, self wire.NodeExpect, local Etcdctl, leader bool, join *wire.EtcdJoin) {
	o.say(Waiting, "%s booted again with its etcd pod and member data on its disk: the kubelet starts the pod; waiting for the member to run again", self.Name)
	ms, ok := o.waitExistingMember(ctx, local, self)
	if !ok {
		return
	}
	myPeer := "https://" + self.IP + ":2380"
	if mine := existingMember(ms, self.Name, myPeer); mine != nil && mine.IsLearner {
		// It went down before the operator promoted it: the promotion
		// goes on (through the bootstrap's member, as on the first boot).
		boot := local
		if join != nil && join.BootstrapIP != "" {
			boot = MasterEtcdctl("https://"+join.BootstrapIP+":2379", "https://"+self.IP+":2379")
		}
		if _, ok := o.promote(ctx, boot, self, myPeer, ms); !ok {
			return
		}
	}
	if !o.waitHealthy(ctx, local, self) {
		return
	}
	if now, err := local.Members(ctx); err == nil {
		ms = now
	}
	o.Log.Info("etcd operator stand-in: this master's member restarted on its data; nothing added", "member", self.Name, "members", MemberSummary(ms))
	o.say(Joined, "%s restarted as the member it was (its data kept on the node disk; the operator adds no member already in the cluster); members %s", self.Name, MemberSummary(ms))
	if leader && join != nil {
		o.teardownBootstrapMember(ctx, self, local, join)
	}
}

// waitExistingMember waits until local lists this master, by name (as the
// operator looks it up) or by its peer URL, and returns the members;
// false when ctx ended.
func (o *Operator) waitExistingMember(ctx context.Context, local Etcdctl, self wire.NodeExpect) ([]Member, bool) {
	myPeer := "https://" + self.IP + ":2380"
	for {
		ms, err := local.Members(ctx)
		switch mine := existingMember(ms, self.Name, myPeer); {
		case err != nil:
			o.say(Waiting, "%s booted again; its etcd does not answer yet: %v", self.Name, err)
		case mine == nil:
			o.say(Waiting, "%s booted again, but the member list has no %s (%s): its data in %s belongs to a member removed from the cluster, which etcd will not start again", self.Name, self.Name, MemberSummary(ms), o.dataDir())
		default:
			return ms, true
		}
		if !timing.Sleep(ctx, o.Poll) {
			return nil, false
		}
	}
}

// existingMember is the member of ms named name, or else the one with peer
// URL peer (nil: none).
func existingMember(ms []Member, name, peer string) *Member {
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i]
		}
	}
	return findPeer(ms, peer)
}
