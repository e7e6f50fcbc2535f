// The facade re-exports the hypervisor port (lab/hypervisor) so that lab's
// own files and its callers keep one import while they move to
// lab/hypervisor. Keep it in step: TestAliasesCoverHypervisor fails on an
// export missing here.

package lab

import "github.com/bootlab/bootlab/lab/hypervisor"

type (
	Hypervisor     = hypervisor.Hypervisor
	HostInfo       = hypervisor.HostInfo
	NetworkInfo    = hypervisor.NetworkInfo
	Object         = hypervisor.Object
	Volume         = hypervisor.Volume
	NetworkEdit    = hypervisor.NetworkEdit
	NetworkSection = hypervisor.NetworkSection
	Lease          = hypervisor.Lease
	Snapshot       = hypervisor.Snapshot
	Capabilities   = hypervisor.Capabilities
	// Connector opens the hypervisor of a libvirt URI (the caller closes
	// it): the one way lab and the commands reach a hypervisor. The
	// commands' Factory carries one; tests pass hypervisor.Shared(fake).
	Connector = hypervisor.Connector
)

const (
	NetworkDHCPHost = hypervisor.NetworkDHCPHost
	NetworkDNSHost  = hypervisor.NetworkDNSHost
)

var (
	ErrNotFound    = hypervisor.ErrNotFound
	ErrUnsupported = hypervisor.ErrUnsupported
	Full           = hypervisor.Full
	Shared         = hypervisor.Shared
)
