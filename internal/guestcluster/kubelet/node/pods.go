package node

import (
	"context"
	"fmt"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootlab/bootlab/internal/kube"
)

// The kubelet's annotations on a mirror pod.
const (
	MirrorAnnotation = "kubernetes.io/config.mirror"
	hashAnnotation   = "kubernetes.io/config.hash"
	sourceAnnotation = "kubernetes.io/config.source"
	seenAnnotation   = "kubernetes.io/config.seen"
	// NotRunReason is the waiting reason of a container the stand-in
	// does not run.
	NotRunReason = "NotRunByStandIn"
)

// mirrorName is the static pod's name in the API: the kubelet appends
// the node name.
func (n *Node) mirrorName(p corev1.Pod) (ns, name string) {
	ns = p.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return ns, p.Name + "-" + n.cfg.Name
}

// syncMirrorPods makes one mirror pod a static pod, with the status of
// what really runs, and deletes the node's mirror pods whose static pod
// went away. It reads them from the node's pod list, as the kubelet
// watches it: the Node authorizer lets a node get only pods bound to it.
func (n *Node) syncMirrorPods(ctx context.Context) error {
	pods, err := n.podsOnNode(ctx)
	if err != nil {
		return err
	}
	mirrors := map[string]*corev1.Pod{}
	for i, p := range pods {
		if _, ok := p.Annotations[MirrorAnnotation]; ok {
			mirrors[p.Namespace+"/"+p.Name] = &pods[i]
		}
	}
	want := map[string]bool{}
	var errs []error
	for _, sp := range n.cfg.StaticPods() {
		ns, name := n.mirrorName(sp.Pod)
		want[ns+"/"+name] = true
		if err := n.ensureMirror(ctx, sp, ns, name, mirrors[ns+"/"+name]); err != nil {
			errs = append(errs, err)
		}
	}
	for key, p := range mirrors {
		if !want[key] {
			if err := n.deleteMirror(ctx, p.Namespace, p.Name); err != nil && !kube.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete mirror pod %s: %w", key, err))
			}
		}
	}
	return joinErrs(n.cfg.Name, "mirror pods", errs)
}

// ensureMirror creates the mirror pod (again, when the manifest changed
// since the one there) and writes its status.
func (n *Node) ensureMirror(ctx context.Context, sp StaticPod, ns, name string, there *corev1.Pod) error {
	if there != nil && there.Annotations[MirrorAnnotation] != sp.Hash {
		if err := n.deleteMirror(ctx, ns, name); err != nil && !kube.IsNotFound(err) {
			return fmt.Errorf("replace mirror pod %s/%s: %w", ns, name, err)
		}
		there = nil
	}
	if there == nil {
		if err := n.api.Do(ctx, "POST", "/api/v1/namespaces/"+ns+"/pods", n.mirrorPod(sp, ns, name), nil); err != nil {
			return fmt.Errorf("mirror pod %s/%s: %w", ns, name, err)
		}
	}
	if err := n.api.Patch(ctx, podPath(ns, name)+"/status", map[string]any{"status": n.staticStatus(sp)}, nil); err != nil {
		return fmt.Errorf("mirror pod %s/%s status: %w", ns, name, err)
	}
	return nil
}

// deleteMirror deletes a mirror pod at once, as the kubelet does: no
// process of it runs that a grace period would wait for.
func (n *Node) deleteMirror(ctx context.Context, ns, name string) error {
	zero := int64(0)
	return n.api.Do(ctx, "DELETE", podPath(ns, name), &metav1.DeleteOptions{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}, GracePeriodSeconds: &zero}, nil)
}

func (n *Node) mirrorPod(sp StaticPod, ns, name string) *corev1.Pod {
	p := sp.Pod.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	p.Name, p.Namespace, p.ResourceVersion, p.UID = name, ns, "", ""
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[MirrorAnnotation] = sp.Hash
	p.Annotations[hashAnnotation] = sp.Hash
	p.Annotations[sourceAnnotation] = "file"
	p.Annotations[seenAnnotation] = sp.Started.UTC().Format(time.RFC3339Nano)
	p.Annotations[StandInAnnotation] = "static pod run by bootlab's kubelet stand-in"
	p.OwnerReferences = nodeRef(n.current(), true)
	p.Spec.NodeName = n.cfg.Name
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	p.Status = corev1.PodStatus{}
	return p
}

// staticStatus is a static pod's status: Running with its one running
// container while that runs, else Pending with why.
func (n *Node) staticStatus(sp StaticPod) corev1.PodStatus {
	start := metav1.NewTime(sp.Started)
	st := corev1.PodStatus{Phase: corev1.PodPending, StartTime: &start, HostIP: n.internalIP()}
	if sp.Pod.Spec.HostNetwork {
		st.PodIP = st.HostIP
	}
	ready := sp.Running
	for _, c := range sp.Pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image}
		if sp.Running && c.Name == sp.Container {
			st.Phase = corev1.PodRunning
			t := true
			cs.Ready, cs.Started = true, &t
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: start}
		} else {
			ready = false
			msg := sp.Detail
			if sp.Running {
				msg = "bootlab's kubelet stand-in runs one container a pod (" + sp.Container + ")"
			}
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: NotRunReason, Message: msg}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	st.Conditions = podConditions(ready, "not run (see the container statuses)")
	return st
}

func podConditions(ready bool, why string) []corev1.PodCondition {
	now := metav1.Now()
	s, reason, msg := corev1.ConditionTrue, "", ""
	if !ready {
		s, reason, msg = corev1.ConditionFalse, NotRunReason, why
	}
	return []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: s, Reason: reason, Message: msg, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: s, Reason: reason, Message: msg, LastTransitionTime: now},
	}
}

// reportNotRun marks every non-mirror pod scheduled to the node as not
// run, with a Warning event once: the stand-in runs static pods only.
func (n *Node) reportNotRun(ctx context.Context) error {
	pods, err := n.podsOnNode(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pods {
		if _, mirror := p.Annotations[MirrorAnnotation]; mirror || p.DeletionTimestamp != nil {
			continue
		}
		msg := "not run: bootlab's kubelet stand-in runs only static pods whose program the node has, never scheduled pods"
		st := corev1.PodStatus{Phase: corev1.PodPending, HostIP: n.internalIP(), Conditions: podConditions(false, msg)}
		for _, c := range p.Spec.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: NotRunReason, Message: msg}}})
		}
		if err := n.api.Patch(ctx, podPath(p.Namespace, p.Name)+"/status", map[string]any{"status": st}, nil); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s status: %w", p.Namespace, p.Name, err))
			continue
		}
		if !n.evented[string(p.UID)] {
			if err := n.event(ctx, p, msg); err != nil {
				errs = append(errs, err)
				continue
			}
			n.evented[string(p.UID)] = true
		}
	}
	return joinErrs(n.cfg.Name, "scheduled pods", errs)
}

func (n *Node) event(ctx context.Context, p corev1.Pod, msg string) error {
	now := metav1.Now()
	ev := corev1.Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID,
			ResourceVersion: p.ResourceVersion},
		Reason: "NotRun", Message: msg, Type: corev1.EventTypeWarning, Count: 1,
		Source:         corev1.EventSource{Component: "kubelet", Host: n.cfg.Name},
		FirstTimestamp: now, LastTimestamp: now,
		ReportingController: "kubelet", ReportingInstance: n.cfg.Name,
	}
	if err := n.api.Do(ctx, "POST", "/api/v1/namespaces/"+p.Namespace+"/events", &ev, nil); err != nil {
		return fmt.Errorf("event for pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

func (n *Node) podsOnNode(ctx context.Context) ([]corev1.Pod, error) {
	var list corev1.PodList
	q := url.Values{"fieldSelector": {"spec.nodeName=" + n.cfg.Name}}
	if err := n.api.Do(ctx, "GET", "/api/v1/pods?"+q.Encode(), nil, &list); err != nil {
		return nil, fmt.Errorf("node %s: list its pods: %w", n.cfg.Name, err)
	}
	return list.Items, nil
}

func (n *Node) internalIP() string {
	for _, a := range n.cfg.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func podPath(ns, name string) string { return "/api/v1/namespaces/" + ns + "/pods/" + name }

func joinErrs(node, what string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("node %s: %s: %w (and %d more)", node, what, errs[0], len(errs)-1)
}
