package etcd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/bootlab/bootlab/internal/kube"
)

// etcdOperatorPath is the API path of the etcd operator's resource (Etcd
// "cluster"), which wait-for-ceo reads.
const etcdOperatorPath = "/apis/operator.openshift.io/v1/etcds/cluster"

// condition is an operator status condition, as wait-for-ceo reads it.
type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// WaitForCEO is `cluster-etcd-operator wait-for-ceo` (stage 14), as
// pkg/operator/bootstrapteardown/waitforceo.go (release-4.16 to 4.19, the
// same file): it returns once etcds/cluster has EtcdRunningInCluster True,
// with the bootstrap member still in the cluster; the teardown removes it
// later. Upstream watches without a deadline; Wait bounds it here, Poll
// spaces the reads.
type WaitForCEO struct {
	Wait, Poll time.Duration
}

// NewWaitForCEO returns wait-for-ceo as the rehearsal bootstrap runs it.
func NewWaitForCEO() WaitForCEO { return WaitForCEO{Wait: 30 * time.Minute, Poll: 3 * time.Second} }

// Run watches the etcd operator's status through the API kubeconfig
// names until EtcdRunningInCluster is True.
func (w WaitForCEO) Run(kubeconfig string, stdout io.Writer) error {
	cfg, err := kube.LoadKubeconfig(kubeconfig)
	if err != nil {
		return err
	}
	k, err := kube.NewClient(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(w.Wait)
	last := ""
	for {
		var etcd struct {
			Status struct {
				Conditions []condition `json:"conditions"`
			} `json:"status"`
		}
		err := k.Do(context.Background(), http.MethodGet, etcdOperatorPath, nil, &etcd)
		msg := ""
		if err != nil {
			msg = err.Error()
		} else {
			for _, c := range etcd.Status.Conditions {
				if c.Type == "EtcdRunningInCluster" {
					if c.Status == "True" {
						fmt.Fprintf(stdout, "Cluster etcd operator bootstrapped successfully (%s: %s)\n", c.Reason, c.Message)
						return nil
					}
					msg = c.Message
				}
			}
		}
		if msg == "" {
			msg = "waiting on condition EtcdRunningInCluster in etcd CR /cluster to be True."
		}
		if msg != last {
			fmt.Fprintf(stdout, "Still waiting for the cluster-etcd-operator to bootstrap: %s\n", msg)
			last = msg
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the etcd operator did not report EtcdRunningInCluster in %s: %s", w.Wait, last)
		}
		time.Sleep(w.Poll)
	}
}
