package agent

import (
	"context"

	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
	"github.com/bootlab/bootlab/internal/guestcluster/operators/installer"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/wire"
)

// runMasterOperators starts what plays a rehearsal master's operators once
// its served config carries the kube-apiserver operator's credential: the
// installers of its kube-apiserver, controller manager and scheduler, which
// report on the api check, and on the leader the etcd operator's status in
// etcds/cluster.
func (a *Agent) runMasterOperators(ctx context.Context, self wire.NodeExpect, cfg types.Config, op *etcd.Operator, leader bool) {
	if _, ok, _ := ignition.FileContents(cfg, wire.KASOperatorKubeconfigPath); !ok {
		return
	}
	go installer.Master{Log: a.log, Self: self, Dial: a.newDialer().DialContext, Report: func(ready bool, detail string) {
		st := retrying
		if ready {
			st = passed
		}
		a.rep.set(chkAPI, st, "%s", detail)
	}}.Run(ctx)
	if leader {
		go op.PublishStatus(ctx, self, wire.KASOperatorKubeconfigPath, a.newDialer().DialContext)
	}
}

// runRehearsalMaster starts what a rehearsal master runs beside its
// servers and returns its kubelet stand-in. It runs the release's
// kube-apiserver as the bootstrap does: from the Kubernetes volume,
// mounted and linked on PATH the same way, started by its kubelet
// stand-in once the installer stand-in has written its pod. Its programs
// resolve names as RHCOS's do: /etc/hosts has localhost, resolv.conf the
// lab's dnsmasq (NetworkManager writes both there). Without them the
// controller manager's and scheduler's localhost:6443 went to [::1]:53
// and the controller manager exited (measured on VMs).
func (a *Agent) runRehearsalMaster(ctx context.Context, pc *wire.Config, self wire.NodeExpect, cfg types.Config) *kubelet.Kubelet {
	a.writeResolvConf()
	vol := a.mountKubeVolumeAsync()
	go a.reportNoKubeVolume(vol)
	kl := a.newKubelet(nil).WithPending(vol.pending).WithHostIP(self.IP)
	a.kubelet.Store(kl)
	// kubelet.service runs from boot on, as on the bootstrap: after a
	// reboot it starts the etcd and control-plane pods kept in
	// /etc/kubernetes/manifests.
	go kl.Run(ctx)
	op := a.etcdOperator()
	op.Kubelet = kl
	op.Keep = a.disk.keptFile
	op.APIReady = etcd.APIReady(wire.NodeBootstrapKubeconfigPath, a.newDialer().DialContext)
	leader := etcdLeader(pc, self)
	go op.Join(ctx, self, a.etcd, leader, cfg)
	a.runMasterOperators(ctx, self, cfg, op, leader)
	go a.reportEtcdMembers(ctx, self)
	return kl
}
