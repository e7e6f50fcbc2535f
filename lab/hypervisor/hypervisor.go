package hypervisor

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"github.com/bootlab/bootlab/lab/host"
)

// ErrNotFound is wrapped by lookups when no object has the name asked for.
var ErrNotFound = errors.New("not found")

// ErrUnsupported is wrapped when the libvirt driver cannot do an operation
// (the test driver cannot upload volumes or list DHCP leases).
var ErrUnsupported = errors.New("not supported by this libvirt driver")

// NetworkInfo is what lab needs to know about any libvirt network, ours or not.
type NetworkInfo struct {
	Name     string
	UUID     string
	Bridge   string
	Prefixes []netip.Prefix
	Active   bool
}

// Object is a libvirt network, pool or domain as lab sees it.
type Object struct {
	Name   string
	UUID   string
	Active bool
	// Paused is set for an active domain whose vCPUs are stopped.
	Paused bool
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

// Snapshot is one libvirt snapshot of a domain.
type Snapshot struct {
	Name        string
	Description string
	// State is the domain state the snapshot holds ("running", "shutoff").
	State string
	// Created is when libvirt took it.
	Created time.Time
}

// The interfaces below are the port, one per resource. Every method is safe
// for concurrent use. Lookups wrap ErrNotFound when nothing has that name;
// the other methods act on exactly the object named.

// Capabilities are what a hypervisor can do. lab asks them instead of
// looking at the URI: libvirt's test driver (test:///default) defines
// objects and runs nothing, a qemu driver does all of it. The zero value
// is the test driver's.
type Capabilities struct {
	// RunsGuests: a started domain boots a kernel under qemu (an
	// accelerator is chosen, boot files must exist, console logs are
	// written, qemu's user owns the disks).
	RunsGuests bool `json:"runsGuests"`
	// HostNetwork: a started network is a bridge with dnsmasq on the
	// hypervisor's machine, so the load balancer can listen on it and its
	// bridge can collide with the machine's interfaces.
	HostNetwork bool `json:"hostNetwork"`
	// UploadsVolumes: a volume's content can be uploaded.
	UploadsVolumes bool `json:"uploadsVolumes"`
	// PoolsOnDisk: a storage pool is a directory on the hypervisor's
	// machine, which bootlab proves it owns before using or removing it.
	PoolsOnDisk bool `json:"poolsOnDisk"`
	// SavesMemory: a running domain's memory can be saved to a file of
	// this machine and domains restored from one (the qemu driver, here):
	// probe nodes then start from a saved image (lab/internal/savedstart).
	SavesMemory bool `json:"savesMemory"`
}

// Full are the capabilities of a hypervisor that runs guests (qemu).
func Full() Capabilities {
	return Capabilities{RunsGuests: true, HostNetwork: true, UploadsVolumes: true, PoolsOnDisk: true}
}

// HostInfo is the read-only part of the hypervisor that validation and
// preflight need.
type HostInfo interface {
	// Capabilities say what the hypervisor can do (known at connect).
	Capabilities() Capabilities
	// LibvirtVersion is the daemon's version, e.g. "9.0.0".
	LibvirtVersion(ctx context.Context) (string, error)
	// DomainTypes lists the domain types the hypervisor offers for x86_64
	// guests, e.g. ["qemu", "kvm"].
	DomainTypes(ctx context.Context) ([]string, error)
	// Networks lists every libvirt network, ours and everybody else's.
	Networks(ctx context.Context) ([]NetworkInfo, error)
}

// Machine gives the machine the hypervisor runs on: files the VMs read,
// the load balancer and console logs are there (lab/host).
type Machine interface {
	Host() host.Host
}

// Networks manages libvirt networks.
type Networks interface {
	// Networks lists every libvirt network, ours and everybody else's.
	Networks(ctx context.Context) ([]NetworkInfo, error)
	LookupNetwork(ctx context.Context, name string) (*Object, error)
	DefineNetwork(ctx context.Context, xml string) (*Object, error)
	StartNetwork(ctx context.Context, name string) error
	SetNetworkAutostart(ctx context.Context, name string) error
	DestroyNetwork(ctx context.Context, name string) error
	UndefineNetwork(ctx context.Context, name string) error
	// NetworkLeases lists the network's DHCP leases (ErrUnsupported on
	// the test driver).
	NetworkLeases(ctx context.Context, name string) ([]Lease, error)
	// UpdateNetwork edits one DHCP reservation or DNS host record of a
	// network, live (when active) and in its persistent definition.
	UpdateNetwork(ctx context.Context, name string, e NetworkEdit) error
}

// Pools manages storage pools (dir pools only).
type Pools interface {
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
}

// Volumes manages the volumes of a pool.
type Volumes interface {
	Volumes(ctx context.Context, pool string) ([]Volume, error)
	LookupVolume(ctx context.Context, pool, name string) (*Volume, error)
	CreateVolume(ctx context.Context, pool, xml string) (*Volume, error)
	// UploadVolume streams size bytes from r into the volume (works on remote hosts).
	UploadVolume(ctx context.Context, pool, name string, r io.Reader, size int64) error
	// CopyVolume creates a volume in pool from xml, filled with the content
	// of fromPool's volume fromName, copied by the host itself (nothing
	// crosses the connection): the labs of a class on one host send a boot
	// file once.
	CopyVolume(ctx context.Context, pool, xml, fromPool, fromName string) (*Volume, error)
	DeleteVolume(ctx context.Context, pool, name string) error
}

// Domains manages libvirt domains (the lab's VMs).
type Domains interface {
	// Domains lists every domain with its XML (lab picks its own by metadata).
	Domains(ctx context.Context) ([]Object, error)
	LookupDomain(ctx context.Context, name string) (*Object, error)
	DefineDomain(ctx context.Context, xml string) (*Object, error)
	StartDomain(ctx context.Context, name string) error
	// StartDomainPaused starts the domain with its vCPUs stopped (libvirt's
	// start --paused) until ResumeDomain: QEMU is up, the guest has not run.
	StartDomainPaused(ctx context.Context, name string) error
	// ResumeDomain runs a paused domain's vCPUs; a running domain is no error.
	ResumeDomain(ctx context.Context, name string) error
	// DestroyDomain powers the domain off; a domain already off is no error.
	DestroyDomain(ctx context.Context, name string) error
	// ResetDomain resets a running domain as its reset button would: the
	// guest restarts at once, nothing synced (libvirt's virDomainReset).
	ResetDomain(ctx context.Context, name string) error
	UndefineDomain(ctx context.Context, name string) error
	// CreateDomain starts a transient domain (gone once stopped).
	CreateDomain(ctx context.Context, xml string) error
	// SaveDomain saves a running domain's memory to path and stops it;
	// RestoreDomainPaused starts the domain saved in path, paused; and
	// DomainSaveXML is a domain's definition as a save image carries it.
	// Only with Capabilities().SavesMemory.
	SaveDomain(ctx context.Context, name, path string) error
	RestoreDomainPaused(ctx context.Context, path string) error
	DomainSaveXML(ctx context.Context, name string) (string, error)
	// UpdateDomainInterface replaces the domain's network interface that
	// has xml's MAC address with xml (an <interface>): live when the
	// domain runs, and in its persistent definition.
	UpdateDomainInterface(ctx context.Context, name, xml string) error
}

// Filters manages libvirt's network filters (nwfilter): rules the host
// applies to a domain's interface that references one (a filterref), with
// ebtables, live. bootlab's carry the lab's name in theirs.
type Filters interface {
	LookupFilter(ctx context.Context, name string) (*Object, error)
	// DefineFilter defines (or redefines, keeping its UUID) a <filter>.
	DefineFilter(ctx context.Context, xml string) (*Object, error)
	// UndefineFilter removes a filter no interface references.
	UndefineFilter(ctx context.Context, name string) error
}

// Snapshots manages the internal snapshots of a domain.
type Snapshots interface {
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

// Hypervisor is every call lab makes: the whole port. Close ends the
// connection (and the machine's, when the connector opened it).
type Hypervisor interface {
	io.Closer
	HostInfo
	Machine
	Networks
	Pools
	Volumes
	Domains
	Snapshots
	Filters
}

// Connector opens the hypervisor of a libvirt URI; the caller closes it.
// lab/libvirt's is the real one; tests hand lab the fake through Shared.
type Connector func(ctx context.Context, uri string, log *slog.Logger) (Hypervisor, error)

// Shared is a Connector that hands out hv, already open, for every URI;
// closing what it hands out leaves hv open (its owner closes it).
func Shared(hv Hypervisor) Connector {
	return func(ctx context.Context, _ string, _ *slog.Logger) (Hypervisor, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return shared{hv}, nil
	}
}

type shared struct{ Hypervisor }

func (shared) Close() error { return nil }
