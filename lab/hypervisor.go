package lab

import (
	"context"
	"net/netip"
)

// NetworkInfo is what lab needs to know about any libvirt network, ours or not.
type NetworkInfo struct {
	Name     string
	UUID     string
	Bridge   string
	Prefixes []netip.Prefix
	Active   bool
}

// HostInfo is the read-only part of the hypervisor that validation and
// preflight need. lab/libvirt implements it (and the rest of Hypervisor).
type HostInfo interface {
	// LibvirtVersion is the daemon's version, e.g. "9.0.0".
	LibvirtVersion(ctx context.Context) (string, error)
	// DomainTypes lists the domain types the hypervisor offers for x86_64
	// guests, e.g. ["qemu", "kvm"].
	DomainTypes(ctx context.Context) ([]string, error)
	// Networks lists every libvirt network, ours and everybody else's.
	Networks(ctx context.Context) ([]NetworkInfo, error)
}
