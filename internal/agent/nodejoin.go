package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet/node"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/wire"
)

// The kubelet's files for the join, as the kubelet has them on RHCOS.
const (
	nodeKubeconfigPath = "/var/lib/kubelet/kubeconfig"
	nodeCertDir        = "/var/lib/kubelet/pki"
)

// joinWhenRealAPI registers a rehearsal master as a Node, through the
// kubelet's CSR flow, once a real kube-apiserver answers at api-int: until
// then (before stage 13) it only looks every 10 s. Its config carries the
// bootstrap kubeconfig only on a rehearsal master; pods is the node's
// kubelet stand-in's static pods (nil: it runs none).
func (a *Agent) joinWhenRealAPI(ctx context.Context, self wire.NodeExpect, cfg types.Config, pods func() []node.StaticPod) {
	version, ok := a.writeJoinFiles(cfg)
	if !ok {
		return
	}
	d := a.newDialer()
	n, err := node.New(a.log, node.Config{Name: self.Name, BootstrapKubeconfig: wire.NodeBootstrapKubeconfigPath,
		Kubeconfig: nodeKubeconfigPath, CertDir: nodeCertDir, KubeletVersion: version, Roles: []string{"master", "control-plane"},
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: self.IP}, {Type: corev1.NodeHostName, Address: self.Name}},
		StaticPods: pods, Dial: d.DialContext})
	if err != nil {
		a.log.Warn("kubelet stand-in: no node join", "err", err)
		return
	}
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	last := ""
	for {
		err := n.RealAPI(ctx)
		if err == nil {
			a.log.Info("kubelet stand-in: a real kube-apiserver answers at api-int: joining as a Node", "node", self.Name)
			n.Run(ctx)
			return
		}
		if msg := err.Error(); msg != last {
			last = msg
			a.log.Info("kubelet stand-in: not joining yet: no real kube-apiserver at api-int", "why", msg)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// writeJoinFiles lays down the bootstrap kubeconfig as Ignition would and
// returns the release's kubelet version: false when the config has no
// bootstrap kubeconfig (not a rehearsal master) or it cannot be written.
func (a *Agent) writeJoinFiles(cfg types.Config) (string, bool) {
	kc, ok, err := ignition.FileContents(cfg, wire.NodeBootstrapKubeconfigPath)
	if err != nil || !ok {
		return "", false
	}
	err = os.MkdirAll(filepath.Dir(wire.NodeBootstrapKubeconfigPath), 0o755)
	if err == nil {
		err = os.WriteFile(wire.NodeBootstrapKubeconfigPath, kc, 0o600)
	}
	if err != nil {
		a.log.Warn("kubelet stand-in: write the bootstrap kubeconfig", "err", err)
		return "", false
	}
	var rel wire.RehearsalRelease
	data, ok, err := ignition.FileContents(cfg, wire.ReleaseMetadataPath)
	if err != nil || !ok || json.Unmarshal(data, &rel) != nil || rel.KubernetesVersion == "" || rel.KubernetesVersion == "unknown" {
		a.log.Warn("kubelet stand-in: no release metadata with a Kubernetes version: no node join", "path", wire.ReleaseMetadataPath)
		return "", false
	}
	return "v" + rel.KubernetesVersion, true
}

// clusterAPIReady is what the etcd operator stand-in waits for before it
// adds this master to etcd: the API the node's bootstrap kubeconfig names
// (api-int, through the load balancer) answers /readyz ok. That is the
// bootstrap's temporary control plane from stage 13 on, as the operator's
// pod runs only once a cluster API does. One client for every ask, so its
// connection is kept.
func (a *Agent) clusterAPIReady() func(context.Context) error {
	var c *kube.Client
	return func(ctx context.Context) error {
		if c == nil {
			cfg, err := kube.LoadKubeconfig(wire.NodeBootstrapKubeconfigPath)
			if err != nil {
				return err
			}
			cfg.Dial = a.newDialer().DialContext
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
