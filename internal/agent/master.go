package agent

import (
	"context"

	"github.com/coreos/ignition/v2/config/v3_2/types"

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
