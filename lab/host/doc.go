// Package host is the machine the hypervisor runs on, as lab sees it: run a
// command, read and write a file, open a connection from there. Local is
// this machine (qemu:///system); SSH is a remote hypervisor reached over
// the same SSH connection that carries its libvirt socket
// (qemu+ssh://user@host/system). Files the VMs read, the load balancer and
// console logs live on the Host, so a remote lab never names a
// workstation path.
package host
