// Package agent is the probe agent, /init of a probe node (cmd/bootlab-probe
// wires it): it brings the NIC up with DHCP, reads its Ignition from QEMU
// fw_cfg, follows pointer configs to the Machine Config Server the way
// Ignition does (fetch.go), checks DNS, serves the node's part (endpoints)
// and writes a JSON report of every check to the serial console
// (internal/wire's, which the host reads). On a rehearsal lab the bootstrap
// serves SSH (sshd) and a kubelet stand-in (kubelet) instead, and the masters
// join etcd (internal/guestcluster/operators/etcd) and run the release's kube-apiserver, which their
// installer stand-in writes (internal/guestcluster/operators/installer).
package agent
