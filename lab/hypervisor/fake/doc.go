// Package fake is an in-memory hypervisor.Hypervisor (lab/hypervisor) for
// unit tests of any package: networks, pools, volumes, domains and
// snapshots in maps, every mutating call recorded, one call failable on
// demand, and a Machine for the hypervisor's host (files in a map, a few
// shell commands understood).
//
// It behaves like libvirt where lab depends on it: a domain redefinition
// must keep its UUID, a domain with snapshots cannot be undefined, a
// domain's network must exist, a volume needs an active pool. It is test
// support, not a simulator: no XML is validated beyond what it reads.
//
// A test reads and changes the exported maps directly, between calls
// (never while a call runs in another goroutine): to seed a foreign
// network, power a domain off by hand or check what was uploaded.
package fake
