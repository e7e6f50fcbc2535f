package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet/node"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/wire"
)

// The kubelet's files for the join, as the kubelet has them on RHCOS.
const (
	nodeKubeconfigPath = "/var/lib/kubelet/kubeconfig"
	nodeCertDir        = "/var/lib/kubelet/pki"
)

// joinWhenRealAPI registers a rehearsal master as a Node once a real
// kube-apiserver answers at api-int (node.JoinWhenRealAPI). Its config
// carries the bootstrap kubeconfig only on a rehearsal master; pods is the
// node's kubelet stand-in's static pods (nil: it runs none).
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
	n.JoinWhenRealAPI(ctx)
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
