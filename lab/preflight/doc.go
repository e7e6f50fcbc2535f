// Package preflight checks that a host can run a lab before anything is
// made: libvirt, the accelerator (KVM proven by booting a test guest, else
// TCG, chosen once), the tools, the network range against the host's routes
// and other libvirt networks, memory and disk for the lab's needs (the
// rule `class up` sums too), access to the pool and lab directories, and the
// load balancer's ports. Every check is an internal/check Result with a fix.
//
// The host facts come from this machine (/proc, stat, exec), or from a
// remote hypervisor's machine through its lab/host Host. It takes the spec
// from lab/spec and the hypervisor's facts from lab/hypervisor; it never
// imports lab, which calls it.
package preflight
