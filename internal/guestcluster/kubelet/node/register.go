package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootlab/bootlab/internal/kube"
)

// leaseSeconds is the kubelet's node lease duration.
const leaseSeconds = 40

// register creates the Node (or takes the one there), as the kubelet's
// registerWithAPIServer does.
func (n *Node) register(ctx context.Context) error {
	want := n.nodeObject(true)
	var got corev1.Node
	err := n.api.Do(ctx, "POST", "/api/v1/nodes", want, &got)
	if isForbidden(err) && len(n.cfg.Roles) > 0 {
		// Upstream's NodeRestriction keeps kubelets from setting
		// node-role labels (OpenShift's apiserver lets them): register
		// without, as an upstream kubelet must.
		n.log.Info("kubelet stand-in: the API refuses node-role labels from a node; registering without them", "node", n.cfg.Name, "err", err)
		err = n.api.Do(ctx, "POST", "/api/v1/nodes", n.nodeObject(false), &got)
	}
	if kube.IsAlreadyExists(err) {
		err = n.api.Do(ctx, "GET", "/api/v1/nodes/"+n.cfg.Name, nil, &got)
	}
	if err != nil {
		return fmt.Errorf("node %s: register the Node: %w", n.cfg.Name, err)
	}
	n.setObj(&got)
	return nil
}

// setObj records the Node as the API last returned it.
func (n *Node) setObj(obj *corev1.Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.obj = obj
}

// current is the Node as the API last returned it (nil before register).
func (n *Node) current() *corev1.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.obj
}

func isForbidden(err error) bool {
	var e *kube.APIError
	return errors.As(err, &e) && e.Code == http.StatusForbidden
}

func (n *Node) nodeObject(roles bool) *corev1.Node {
	labels := map[string]string{
		"kubernetes.io/hostname": n.cfg.Name, "kubernetes.io/os": "linux", "kubernetes.io/arch": runtime.GOARCH,
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": runtime.GOARCH,
	}
	annotations := map[string]string{
		StandInAnnotation: "bootlab's kubelet stand-in " + n.cfg.KubeletVersion + ": runs only the static pods whose program the node has; scheduled pods are not run",
	}
	var wanted []string
	for _, r := range n.cfg.Roles {
		wanted = append(wanted, "node-role.kubernetes.io/"+r)
	}
	switch {
	case roles:
		for _, k := range wanted {
			labels[k] = ""
		}
	case len(wanted) > 0:
		annotations[RoleLabelsAnnotation] = strings.Join(wanted, ",")
	}
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: n.cfg.Name, Labels: labels, Annotations: annotations},
	}
}

// postStatus writes the status a healthy kubelet reports: Ready, no
// pressure, its addresses, capacity and nodeInfo.
func (n *Node) postStatus(ctx context.Context) error {
	now := metav1.NewTime(time.Now())
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: n.transition(t, s, now)}
	}
	status := corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "bootlab's kubelet stand-in is posting ready status"),
		},
		Addresses:       n.cfg.Addresses,
		Capacity:        n.capacity(),
		Allocatable:     n.capacity(),
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion: n.cfg.KubeletVersion, KubeProxyVersion: n.cfg.KubeletVersion,
			OperatingSystem: "linux", Architecture: runtime.GOARCH,
			OSImage:                 "bootlab rehearsal node (kubelet stand-in)",
			ContainerRuntimeVersion: "bootlab-stand-in://" + n.cfg.KubeletVersion,
			KernelVersion:           firstLine("/proc/sys/kernel/osrelease"),
			MachineID:               firstLine("/etc/machine-id"),
			BootID:                  firstLine("/proc/sys/kernel/random/boot_id"),
		},
	}
	var got corev1.Node
	if err := n.api.Patch(ctx, "/api/v1/nodes/"+n.cfg.Name+"/status", map[string]any{"status": status}, &got); err != nil {
		return fmt.Errorf("node %s: post the status: %w", n.cfg.Name, err)
	}
	n.setObj(&got)
	return nil
}

// transition keeps a condition's last transition time while its status
// holds, as the kubelet does.
func (n *Node) transition(t corev1.NodeConditionType, s corev1.ConditionStatus, now metav1.Time) metav1.Time {
	if obj := n.current(); obj != nil {
		for _, c := range obj.Status.Conditions {
			if c.Type == t && c.Status == s && !c.LastTransitionTime.IsZero() {
				return c.LastTransitionTime
			}
		}
	}
	return now
}

func (n *Node) capacity() corev1.ResourceList {
	mem := "1Gi"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(strings.TrimSpace(string(data)), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf("%dKi", kb)
		}
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
}

func firstLine(path string) string {
	data, _ := os.ReadFile(path)
	l, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	return l
}

// renewLease keeps kube-node-lease/<node> fresh, the kubelet's heartbeat.
func (n *Node) renewLease(ctx context.Context) error {
	path := "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + n.cfg.Name
	now := metav1.NewMicroTime(time.Now())
	dur := int32(leaseSeconds)
	holder := n.cfg.Name
	var l coordv1.Lease
	err := n.api.Do(ctx, "GET", path, nil, &l)
	if kube.IsNotFound(err) {
		l = coordv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: n.cfg.Name, Namespace: "kube-node-lease", OwnerReferences: nodeRef(n.current(), false)},
			Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &now},
		}
		err = n.api.Do(ctx, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", &l, nil)
	} else if err == nil {
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &dur, &now
		err = n.api.Do(ctx, "PUT", path, &l, nil)
	}
	if err != nil {
		return fmt.Errorf("node %s: renew the lease: %w", n.cfg.Name, err)
	}
	return nil
}
