// Package kubelet is the probe agent's kubelet stand-in: like the kubelet,
// it watches the static pod directory; a pod whose container's program is
// on the node (etcd) is started with the container's command and
// arguments, its volume mounts resolved to their host paths, and stopped
// when the manifest goes away. Containers the agent plays itself (the MCS)
// are Services.
package kubelet
