package agent

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/wire"
)

// The rehearsal bootstrap's temporary control plane is the release's own
// kube-apiserver, controller manager and scheduler, run by the kubelet
// stand-in from the pods stage 13 lands, with the programs of the
// Kubernetes volume. Nothing plays them on a node without that volume:
// its api check fails and says so (lab up attaches the volume to every
// rehearsal bootstrap and master).

// kubeVolume is the Kubernetes volume's mount on this node, as the kubelet
// stand-in waits for it: its programs are still to come until the mount
// is done.
type kubeVolume struct {
	done    chan struct{}
	mounted bool
}

// mountKubeVolumeAsync mounts the volume in the background.
func (a *Agent) mountKubeVolumeAsync() *kubeVolume {
	v := &kubeVolume{done: make(chan struct{})}
	go func() {
		v.mounted = a.mountKubeVolume()
		close(v.done)
	}()
	return v
}

// pending is the kubelet stand-in's kubelet.Pending: a Kubernetes program
// is still to come while the mount is under way.
func (v *kubeVolume) pending(program string) string {
	select {
	case <-v.done:
		return ""
	default:
	}
	if !slices.Contains(wire.KubePrograms(), program) {
		return ""
	}
	return fmt.Sprintf("waiting for the Kubernetes volume (serial %s) to be mounted at %s: it brings %s", wire.KubeVolumeSerial, wire.KubeVolumeMount, program)
}

// reportNoKubeVolume fails the api check once the mount is done without
// the volume: a rehearsal node runs the release's kube-apiserver from it,
// and nothing plays it in its place.
func (a *Agent) reportNoKubeVolume(v *kubeVolume) {
	<-v.done
	if v.mounted {
		return
	}
	a.rep.set(chkAPI, failed, "no Kubernetes volume (the disk with serial %s) on this rehearsal node, so the release's kube-apiserver cannot run here and nothing plays it: `bootlab lab up` attaches it to a rehearsal lab's bootstrap and masters; rebuild the lab (bootlab lab down, then bootlab lab up --manual-bootstrap)", wire.KubeVolumeSerial)
}

// apiReadyz is where the agent asks the real kube-apiserver; /readyz is
// open to anonymous clients (system:public-info-viewer).
const apiReadyz = "https://localhost:6443/readyz"

// reportRealAPI keeps the api check honest while the kubelet stand-in
// runs the release's kube-apiserver: pending until /readyz says ok, then
// passed, failed once cluster-bootstrap removed its pod.
func (a *Agent) reportRealAPI(ctx context.Context, kl *kubelet.Kubelet) {
	probe := kube.NewProbe(5 * time.Second)
	seen, readySince := false, time.Time{}
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		st, running := kl.Process("kube-apiserver")
		switch {
		case running:
			seen = true
			why := readyz(ctx, probe)
			up := time.Since(st.Started).Round(time.Second)
			if why == "" {
				if readySince.IsZero() {
					readySince = time.Now()
					a.log.Info("the release's kube-apiserver answers /readyz ok", "pid", st.PID, "after", up)
				}
				a.rep.set(chkAPI, passed, "the release's kube-apiserver (pid %d, started by the kubelet stand-in from the pod stage 13 landed) answers %s ok, ready %s after its start",
					st.PID, apiReadyz, readySince.Sub(st.Started).Round(time.Second))
			} else {
				readySince = time.Time{}
				a.rep.set(chkAPI, retrying, "the release's kube-apiserver (pid %d) runs for %s, %s not ok yet: %s", st.PID, up, apiReadyz, why)
			}
		case seen:
			seen, readySince = false, time.Time{}
			a.rep.set(chkAPI, failed, "bootstrap API stopped: cluster-bootstrap tore the temporary control plane down (the kube-apiserver pod's manifest was removed)")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// readyz returns "" when /readyz answers ok, else why not.
func readyz(ctx context.Context, p *kube.Probe) string {
	resp, err := p.Get(ctx, apiReadyz, 256)
	if err != nil {
		return err.Error()
	}
	body := resp.Body
	if resp.Code == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
		return ""
	}
	return fmt.Sprintf("%s %s", resp.Status, strings.Join(strings.Fields(string(body)), " "))
}
