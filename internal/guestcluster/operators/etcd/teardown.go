package etcd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
)

// teardownBootstrapMember plays the bootstrap teardown controller
// (cluster-etcd-operator pkg/operator/bootstrapteardown/
// bootstrap_teardown_controller.go, release-4.16 to 4.19): once the cluster
// has every master as a healthy voting member it reports
// EtcdRunningInCluster (what stage 14's wait-for-ceo waits for), and it
// removes etcd-bootstrap only once ConfigMap kube-system/bootstrap says
// complete, which progress.service writes after stage 15.
func (o *Operator) teardownBootstrapMember(ctx context.Context, self wire.NodeExpect, c Etcdctl, join *wire.EtcdJoin) {
	last := ""
	note := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if msg != last {
			o.Log.Info("etcd operator stand-in (bootstrap teardown): " + msg)
			last = msg
		}
	}
	for {
		st, why := bootstrapTeardownStep(ctx, c, join.Masters+1, o.running.Load())
		note("%s", why)
		if st >= tdRunning && !o.running.Swap(true) {
			ms, _ := c.Members(ctx)
			o.Report(Joined, fmt.Sprintf("etcd operator stand-in: %s joined; bootstrap teardown: EtcdRunningInCluster (enough healthy members; etcd-bootstrap stays until kube-system/bootstrap says complete, after stage 15); members %s"+memInUse(), self.Name, MemberSummary(ms)))
		}
		if st == tdRemoved {
			o.removed.Store(true)
			ms, _ := c.Members(ctx)
			o.Report(Joined, fmt.Sprintf("etcd operator stand-in: %s joined; bootstrap teardown: %s; members %s"+memInUse(), self.Name, why, MemberSummary(ms)))
			return
		}
		if !timing.Sleep(ctx, o.Poll) {
			return
		}
	}
}

// teardownStage is where the teardown stands.
type teardownStage int

const (
	// tdWaiting: not enough healthy voting members yet.
	tdWaiting teardownStage = iota
	// tdRunning: EtcdRunningInCluster; etcd-bootstrap still a member.
	tdRunning
	// tdRemoved: etcd-bootstrap is gone.
	tdRemoved
)

// bootstrapTeardownStep checks once, in upstream's order: the members
// (enough, all voting, the masters' healthy: EtcdRunningInCluster), then,
// once that was seen (running), ConfigMap kube-system/bootstrap, and
// removes etcd-bootstrap when it says complete, the members checked again
// first. While it waits for the ConfigMap (from stage 14 to after stage
// 15) it asks only for that: one serializable read of this master's own
// member, which needs no round of the others (upstream's controller reads
// it from its informer's cache, which costs nothing; an etcdctl run per
// read took a fifth of a TCG master's vCPU).
func bootstrapTeardownStep(ctx context.Context, c Etcdctl, want int, running bool) (teardownStage, string) {
	if running {
		complete, detail := c.bootstrapComplete(ctx)
		if !complete {
			return tdRunning, detail
		}
	}
	boot, ready, why := membersReady(ctx, c, want)
	switch {
	case boot == nil && why == "":
		return tdRemoved, "the etcd-bootstrap member is removed"
	case !ready:
		return tdWaiting, why
	case !running:
		return tdRunning, "enough members found: EtcdRunningInCluster; waiting for kube-system/bootstrap to say complete before removing etcd-bootstrap"
	}
	if _, err := c.run(ctx, "member", "remove", boot.hexID()); err != nil {
		return tdRunning, err.Error()
	}
	return tdRemoved, fmt.Sprintf("removed the etcd-bootstrap member %s", boot.hexID())
}

// membersReady lists the members: the bootstrap's (nil when gone, with why
// empty), and whether there are want, every master a started voting member
// and healthy (why says what is missing).
func membersReady(ctx context.Context, c Etcdctl, want int) (boot *Member, ready bool, why string) {
	ms, err := c.Members(ctx)
	if err != nil {
		return nil, false, err.Error()
	}
	var endpoints []string
	for i, m := range ms {
		if m.Name == BootstrapMemberName {
			boot = &ms[i]
			continue
		}
		if m.IsLearner || m.Name == "" {
			return boot, false, "waiting for every master to be a started voting member: " + MemberSummary(ms)
		}
		endpoints = append(endpoints, m.ClientURLs...)
	}
	if boot == nil {
		return nil, false, ""
	}
	if len(ms) < want {
		return boot, false, fmt.Sprintf("still waiting for %d etcd members (the bootstrap's and every master's): %s", want, MemberSummary(ms))
	}
	if ok, detail := c.healthy(ctx, endpoints); !ok {
		return boot, false, "waiting for the masters' members to be healthy: " + detail
	}
	return boot, true, ""
}

// writeMasterEtcdPod lands the master's etcd static pod, with the initial
// cluster of the members the add returned (the unstarted one is this
// master), joining an existing cluster, running image.
func writeMasterEtcdPod(dir string, self wire.NodeExpect, members []Member, image string) error {
	var initial []string
	myPeer := "https://" + self.IP + ":2380"
	for _, m := range members {
		name := m.Name
		if findPeer([]Member{m}, myPeer) != nil {
			name = self.Name
		}
		for _, u := range m.PeerURLs {
			initial = append(initial, name+"="+u)
		}
	}
	sort.Strings(initial)
	cert := func(kind string) string {
		return etcdPodCertDir + "/secrets/etcd-all-certs/etcd-" + kind + "-" + self.Name
	}
	ca := etcdPodCertDir + "/configmaps/etcd-serving-ca/ca-bundle.crt"
	hostPathDir := corev1.HostPathDirectoryOrCreate
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-" + self.Name, Namespace: "openshift-etcd", Labels: map[string]string{"app": "etcd", "etcd": "true"}},
		Spec: corev1.PodSpec{
			HostNetwork: true,
			Containers: []corev1.Container{{
				Name: "etcd", Image: image, Command: []string{"etcd"},
				Args: []string{
					"--name=" + self.Name,
					"--data-dir=/var/lib/etcd",
					"--initial-advertise-peer-urls=" + myPeer,
					"--initial-cluster=" + strings.Join(initial, ","),
					"--initial-cluster-state=existing",
					"--listen-peer-urls=https://0.0.0.0:2380",
					"--listen-client-urls=https://0.0.0.0:2379",
					"--advertise-client-urls=https://" + self.IP + ":2379",
					"--cert-file=" + cert("serving") + ".crt",
					"--key-file=" + cert("serving") + ".key",
					"--trusted-ca-file=" + ca,
					"--client-cert-auth=true",
					"--peer-cert-file=" + cert("peer") + ".crt",
					"--peer-key-file=" + cert("peer") + ".key",
					"--peer-trusted-ca-file=" + ca,
					"--peer-client-cert-auth=true",
					"--logger=zap",
					"--log-outputs=stderr",
				},
				Env:          ReleaseEnv(),
				VolumeMounts: []corev1.VolumeMount{{Name: "cert-dir", MountPath: etcdPodCertDir}, {Name: "data-dir", MountPath: "/var/lib/etcd"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "cert-dir", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: wire.EtcdCertsDir}}},
				{Name: "data-dir", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/etcd", Type: &hostPathDir}}},
			},
		},
	}
	data, err := yaml.Marshal(pod)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "etcd-pod.yaml"), data, 0o644)
}

// memInUse is "; node memory in use: N of M MiB" (MemTotal-MemAvailable),
// for the report: the masters have no SSH to ask them.
// MemInUse is ", memory in use X of Y MiB" for a report detail ("" when
// /proc/meminfo cannot be read).
func MemInUse() string { return memInUse() }

func memInUse() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return ""
	}
	var total, avail int
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "MemTotal:":
			fmt.Sscan(f[1], &total)
		case "MemAvailable:":
			fmt.Sscan(f[1], &avail)
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("; node memory in use: %d of %d MiB", (total-avail)/1024, total/1024)
}

// bootstrapComplete reads ConfigMap kube-system/bootstrap from etcd, as
// the kube-apiserver stored it (protobuf by default, or JSON), and says
// whether its status is complete.
func (c Etcdctl) bootstrapComplete(ctx context.Context) (bool, string) {
	value, err := c.rangeSerializable(ctx, bootstrapConfigMapKey)
	if err != nil {
		return false, err.Error()
	}
	const notYet = "bootstrap is not yet complete: ConfigMap kube-system/bootstrap has no status complete (progress.service writes it after stage 15's .bootkube.done)"
	if value == nil {
		return false, notYet
	}
	data, err := storedConfigMapData(value)
	if err != nil {
		return false, notYet + ": " + err.Error()
	}
	if data["status"] != "complete" {
		return false, notYet
	}
	return true, ""
}
