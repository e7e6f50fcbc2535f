// Package shims holds the rehearsal bootstrap's tools that need a release
// image or a container runtime on a real bootstrap: sudo, podman, oc,
// crictl, dig, the power commands (reboot, poweroff, halt, shutdown, systemctl reboot)
// and systemctl's start, stop, restart, status and is-active of the units
// the agent runs (systemctl.go, asking package units). They are the agent itself, linked under those names
// (Tools.Multicall); each parses its arguments, says it is a stand-in on
// stderr, and calls the part of the guest cluster that plays the work:
// podman runs the operators' renders (operators/renders), cluster-bootstrap
// start (clusterbootstrap), wait-for-ceo (operators/etcd) and the node's
// real etcdctl; crictl lists what the kubelet stand-in runs; the power
// commands ask the agent, PID 1, to take the node down (power.go).
package shims
