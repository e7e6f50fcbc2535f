package lab

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"time"

	"github.com/bootlab/bootlab/lab/host"
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

// ErrNotFound is wrapped by Hypervisor lookups when the object does not exist.
var ErrNotFound = errors.New("not found")

// ErrUnsupported is wrapped when the libvirt driver cannot do an operation
// (the test driver cannot upload volumes or list DHCP leases).
var ErrUnsupported = errors.New("not supported by this libvirt driver")

// Object is a libvirt network, pool or domain as lab sees it.
type Object struct {
	Name   string
	UUID   string
	Active bool
	// XML is the object's current (inactive, persistent) definition.
	XML string
}

// Volume is a storage volume in a pool.
type Volume struct {
	Name     string
	Path     string
	Capacity uint64
}

// NetworkEdit is one change to a network's DHCP reservations or DNS hosts.
type NetworkEdit struct {
	// Delete removes the entry; otherwise it is added.
	Delete bool
	// Section is NetworkDHCPHost or NetworkDNSHost.
	Section NetworkSection
	// XML is the <host> element (libvirt network XML).
	XML string
}

// NetworkSection names the part of a network a NetworkEdit changes.
type NetworkSection string

const (
	NetworkDHCPHost NetworkSection = "dhcp-host"
	NetworkDNSHost  NetworkSection = "dns-host"
)

// Lease is one DHCP lease on a network.
type Lease struct {
	MAC      string
	IP       string
	Hostname string
}

// Hypervisor is every libvirt call lab makes. lab/libvirt implements it over
// one go-libvirt connection; unit tests use an in-memory fake. Methods are
// safe for concurrent use. Lookups wrap ErrNotFound when nothing has that
// name; the other methods act on exactly the object named.
type Hypervisor interface {
	HostInfo

	// Host is the machine the hypervisor runs on: files the VMs read, the
	// load balancer and console logs are there (lab/host).
	Host() host.Host

	LookupNetwork(ctx context.Context, name string) (*Object, error)
	DefineNetwork(ctx context.Context, xml string) (*Object, error)
	StartNetwork(ctx context.Context, name string) error
	SetNetworkAutostart(ctx context.Context, name string) error
	DestroyNetwork(ctx context.Context, name string) error
	UndefineNetwork(ctx context.Context, name string) error
	NetworkLeases(ctx context.Context, name string) ([]Lease, error)
	// UpdateNetwork edits one DHCP reservation or DNS host record of a
	// network, live (when active) and in its persistent definition.
	UpdateNetwork(ctx context.Context, name string, e NetworkEdit) error

	Pools(ctx context.Context) ([]Object, error)
	LookupPool(ctx context.Context, name string) (*Object, error)
	// DefinePool defines a dir pool and builds its directory.
	DefinePool(ctx context.Context, xml string) (*Object, error)
	StartPool(ctx context.Context, name string) error
	SetPoolAutostart(ctx context.Context, name string) error
	DestroyPool(ctx context.Context, name string) error
	// DeletePool removes the (inactive) pool's directory.
	DeletePool(ctx context.Context, name string) error
	UndefinePool(ctx context.Context, name string) error

	Volumes(ctx context.Context, pool string) ([]Volume, error)
	LookupVolume(ctx context.Context, pool, name string) (*Volume, error)
	CreateVolume(ctx context.Context, pool, xml string) (*Volume, error)
	// UploadVolume streams size bytes from r into the volume (works on remote hosts).
	UploadVolume(ctx context.Context, pool, name string, r io.Reader, size int64) error
	DeleteVolume(ctx context.Context, pool, name string) error

	// Domains lists every domain with its XML (lab picks its own by metadata).
	Domains(ctx context.Context) ([]Object, error)
	LookupDomain(ctx context.Context, name string) (*Object, error)
	DefineDomain(ctx context.Context, xml string) (*Object, error)
	StartDomain(ctx context.Context, name string) error
	// DestroyDomain powers the domain off; a domain already off is no error.
	DestroyDomain(ctx context.Context, name string) error
	UndefineDomain(ctx context.Context, name string) error

	// Snapshots lists every snapshot of the domain, bootlab's and others'.
	Snapshots(ctx context.Context, domain string) ([]Snapshot, error)
	// CreateSnapshot takes an internal snapshot described by xml (a
	// <domainsnapshot>): with memory when the domain runs, disk only when off.
	CreateSnapshot(ctx context.Context, domain, xml string) error
	// RevertSnapshot puts the domain back to the snapshot: disk, memory and
	// run state as they were when it was taken.
	RevertSnapshot(ctx context.Context, domain, name string) error
	// DeleteSnapshot removes one snapshot (not its children).
	DeleteSnapshot(ctx context.Context, domain, name string) error
}

// Snapshot is one libvirt snapshot of a domain.
type Snapshot struct {
	Name        string
	Description string
	// State is the domain state the snapshot holds ("running", "shutoff").
	State string
	// Created is when libvirt took it.
	Created time.Time
}
