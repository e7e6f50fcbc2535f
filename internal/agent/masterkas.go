package agent

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/bootlab/bootlab/internal/agent/kubelet"
	"github.com/bootlab/bootlab/internal/agent/standin"
	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/kubecreate"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
)

// kasPoll is how often a master's installer stand-in looks again.
const kasPoll = 10 * time.Second

// installKubeAPIServer plays the kube-apiserver operator's installer for a
// rehearsal master, in upstream's order: once this master's etcd member
// votes and the real bootstrap API serves the revision's objects (stage
// 13 created them), it copies them into static-pod-resources and writes
// the kube-apiserver pod, which the kubelet stand-in starts; the
// in-memory API stand-in then leaves 6443 to it. Until a real API serves
// (a lab whose stage 13 plays the API), nothing changes.
func (a *Agent) installKubeAPIServer(ctx context.Context, self wire.NodeExpect, cfg types.Config) {
	if _, ok, _ := ignition.FileContents(cfg, wire.KASOperatorKubeconfigPath); !ok {
		return
	}
	local := standin.MasterEtcdctl("https://" + self.IP + ":2379")
	servers, ok := a.waitVoter(ctx, local, self)
	if !ok {
		return
	}
	var rel wire.RehearsalRelease
	if data, err := os.ReadFile(wire.ReleaseMetadataPath); err == nil {
		_ = json.Unmarshal(data, &rel)
	}
	image := rel.Components["hyperkube"]
	in := controlplane.MasterInput{AdvertiseAddress: self.IP, EtcdServers: servers, OpenShift: rel.Version}
	if !a.installUntilDone(ctx, controlplane.KubeAPIServerOperand, in, image) {
		return
	}
	if a.stopAPIStandIn != nil {
		a.stopAPIStandIn()
	}
	a.rep.set(chkAPI, retrying, "kube-apiserver installer stand-in wrote revision 1 (etcd %v); the kubelet stand-in starts the real kube-apiserver", servers)
	a.waitLocalAPI(ctx, servers)
	// The controller manager's and scheduler's operators install theirs
	// once the master's kube-apiserver serves: each talks to it at
	// localhost:6443.
	for _, o := range []controlplane.Operand{controlplane.KubeControllerManagerOperand, controlplane.KubeSchedulerOperand} {
		if !a.installUntilDone(ctx, o, in, image) {
			return
		}
	}
}

// installUntilDone runs operand o's installer stand-in every kasPoll
// until it has installed (its objects appear once stage 13 has created
// them), logging each new reason it waits; false when ctx ended first.
func (a *Agent) installUntilDone(ctx context.Context, o controlplane.Operand, in controlplane.MasterInput, image string) bool {
	inst := &standin.Installer{Log: a.log, Operand: o, StaticPodDir: kubelet.StaticPodDir, Image: image, Input: in}
	last := ""
	for {
		err := a.installOnce(ctx, inst)
		if err == nil {
			return true
		}
		if msg := err.Error(); msg != last {
			last = msg
			a.log.Info(string(o.Component)+" installer stand-in: not installed yet", "why", msg)
		}
		if !timing.Sleep(ctx, kasPoll) {
			return false
		}
	}
}

// installOnce builds the source (the kubeconfig lands with the etcd
// operator stand-in's Ignition files), reads the cluster's networks from
// its Network config, as the operators observe them, and installs.
func (a *Agent) installOnce(ctx context.Context, inst *standin.Installer) error {
	api, err := standin.NewAPISource(wire.KASOperatorKubeconfigPath, a.newDialer().DialContext)
	if err != nil {
		return err
	}
	n, err := api.Network(ctx)
	if err != nil {
		return fmt.Errorf("%s installer stand-in: read networks.config.openshift.io/cluster (stage 13 creates it from /opt/openshift/%s): %w",
			inst.Operand.Component, controlplane.NetworkManifest, err)
	}
	inst.Input.ServiceCIDR, inst.Input.ClusterCIDR = n.ServiceCIDR, n.ClusterCIDR
	inst.Source = standin.Sources{standin.MasterEtcdFiles(wire.EtcdCABundle, wire.EtcdClientCert, wire.EtcdClientKey),
		standin.MasterClientFiles(), api}
	return inst.Install(ctx)
}

// waitVoter waits until this master's member votes and returns the
// client URLs of the masters' voting members (the bootstrap's goes at
// stage 14: the revision never names it), as upstream's etcd-endpoints.
func (a *Agent) waitVoter(ctx context.Context, local standin.Etcdctl, self wire.NodeExpect) ([]string, bool) {
	myPeer := "https://" + self.IP + ":2380"
	for {
		ms, err := local.Members(ctx)
		if err == nil {
			if servers, ok := votingMasters(ms, myPeer); ok {
				return servers, true
			}
		}
		if !timing.Sleep(ctx, kasPoll) {
			return nil, false
		}
	}
}

// votingMasters are the client URLs of the started, voting members but
// the bootstrap's; ok is true when the member with peer URL myPeer is one.
func votingMasters(ms []standin.Member, myPeer string) (servers []string, ok bool) {
	for _, m := range ms {
		if m.Name == "" || m.IsLearner || m.Name == standin.BootstrapMemberName {
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
func (a *Agent) waitLocalAPI(ctx context.Context, servers []string) {
	// Any certificate: this asks the local process whether it is ready;
	// the load balancer's check does the same.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	start := time.Now()
	for {
		resp, err := c.Get("https://127.0.0.1:6443/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				a.rep.set(chkAPI, passed, "real kube-apiserver (the release's, from the installer stand-in's pod) ready %s after its pod landed; etcd %v%s", time.Since(start).Round(time.Second), servers, standin.MemInUse())
				return
			}
			err = fmt.Errorf("/readyz: %s", resp.Status)
		}
		a.rep.set(chkAPI, retrying, "kube-apiserver pod installed; waiting for /readyz on :6443: %v", err)
		if !timing.Sleep(ctx, 5*time.Second) {
			return
		}
	}
}

// publishEtcdStatus plays the etcd operator's status on the real API, on
// the master that plays its teardown: every kasPoll it writes
// etcds/cluster's EtcdBootstrapMemberRemoved from the member list, until
// it has written True (stage 14's wait-for-ceo reads it). An API that is
// not a real one (the in-memory stand-in refuses the create) is retried.
func (a *Agent) publishEtcdStatus(ctx context.Context, self wire.NodeExpect, cfg types.Config) {
	if _, ok, _ := ignition.FileContents(cfg, wire.KASOperatorKubeconfigPath); !ok {
		return
	}
	local := standin.MasterEtcdctl("https://" + self.IP + ":2379")
	last := ""
	for {
		removed, err := a.publishEtcdStatusOnce(ctx, local)
		if err == nil && removed {
			a.log.Info("etcd operator stand-in: wrote EtcdBootstrapMemberRemoved=True to etcds/cluster through the real API")
			return
		}
		if err != nil && err.Error() != last {
			last = err.Error()
			a.log.Info("etcd operator stand-in: etcds/cluster status not written yet", "why", last)
		}
		if !timing.Sleep(ctx, kasPoll) {
			return
		}
	}
}

// publishEtcdStatusOnce asks the API first: etcd is read only once a real
// API serves the etcd operator's kind.
func (a *Agent) publishEtcdStatusOnce(ctx context.Context, local standin.Etcdctl) (bool, error) {
	cfg, err := kubecreate.LoadKubeconfig(wire.KASOperatorKubeconfigPath)
	if err != nil {
		return false, err
	}
	cfg.Dial = a.newDialer().DialContext
	c, err := kubecreate.NewClient(cfg)
	if err != nil {
		return false, err
	}
	if err := c.Do(ctx, "GET", "/apis/operator.openshift.io/v1/etcds", nil, nil); err != nil {
		return false, fmt.Errorf("no real API serving etcds at %s yet: %w", c.Server(), err)
	}
	ms, err := local.Members(ctx)
	if err != nil {
		return false, err
	}
	return standin.WriteEtcdStatus(ctx, c, ms)
}
