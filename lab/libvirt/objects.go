package libvirt

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

// ---- networks

func (c *Conn) networkObject(n golibvirt.Network) (*hypervisor.Object, error) {
	x, err := c.l.NetworkGetXMLDesc(n, uint32(golibvirt.NetworkXMLInactive))
	if unsupportedFlags(err) {
		x, err = c.l.NetworkGetXMLDesc(n, 0)
	}
	if err != nil {
		return nil, wrap(err, "read network %s", n.Name)
	}
	active, err := c.l.NetworkIsActive(n)
	if err != nil {
		return nil, wrap(err, "read state of network %s", n.Name)
	}
	return &hypervisor.Object{Name: n.Name, UUID: uuidString(n.UUID), Active: active == 1, XML: x}, nil
}

func (c *Conn) network(ctx context.Context, name string) (golibvirt.Network, error) {
	if err := ctx.Err(); err != nil {
		return golibvirt.Network{}, err
	}
	n, err := c.l.NetworkLookupByName(name)
	if err != nil {
		return n, wrap(err, "look up network %s", name)
	}
	return n, nil
}

// LookupNetwork returns the network called name.
func (c *Conn) LookupNetwork(ctx context.Context, name string) (*hypervisor.Object, error) {
	n, err := c.network(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.networkObject(n)
}

// DefineNetwork defines a persistent network.
func (c *Conn) DefineNetwork(ctx context.Context, xml string) (*hypervisor.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.logXML(ctx, "define network", xml)
	n, err := c.l.NetworkDefineXML(xml)
	if err != nil {
		return nil, wrap(err, "define network %s", xmlName(xml))
	}
	return c.networkObject(n)
}

// StartNetwork starts the network (dnsmasq, bridge).
func (c *Conn) StartNetwork(ctx context.Context, name string) error {
	n, err := c.network(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.l.NetworkCreate(n), "start network %s", name)
}

// SetNetworkAutostart marks the network to start with libvirtd.
func (c *Conn) SetNetworkAutostart(ctx context.Context, name string) error {
	n, err := c.network(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.l.NetworkSetAutostart(n, 1), "set autostart on network %s", name)
}

// DestroyNetwork stops the network; an inactive network is no error.
func (c *Conn) DestroyNetwork(ctx context.Context, name string) error {
	n, err := c.network(ctx, name)
	if err != nil {
		return err
	}
	if err := c.l.NetworkDestroy(n); err != nil && code(err) != golibvirt.ErrOperationInvalid {
		return wrap(err, "stop network %s", name)
	}
	return nil
}

// UndefineNetwork removes the network's definition.
func (c *Conn) UndefineNetwork(ctx context.Context, name string) error {
	n, err := c.network(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.l.NetworkUndefine(n), "undefine network %s", name)
}

// NetworkLeases lists the network's DHCP leases.
func (c *Conn) NetworkLeases(ctx context.Context, name string) ([]hypervisor.Lease, error) {
	n, err := c.network(ctx, name)
	if err != nil {
		return nil, err
	}
	leases, _, err := c.l.NetworkGetDhcpLeases(n, nil, 1, 0)
	if err != nil {
		return nil, wrap(err, "read DHCP leases of network %s", name)
	}
	out := make([]hypervisor.Lease, 0, len(leases))
	for _, l := range leases {
		le := hypervisor.Lease{IP: l.Ipaddr}
		if len(l.Mac) > 0 {
			le.MAC = l.Mac[0]
		}
		if len(l.Hostname) > 0 {
			le.Hostname = l.Hostname[0]
		}
		out = append(out, le)
	}
	return out, nil
}

// UpdateNetwork adds or deletes one DHCP reservation or DNS host record,
// in the running network (when active) and in its persistent definition.
func (c *Conn) UpdateNetwork(ctx context.Context, name string, e hypervisor.NetworkEdit) error {
	n, err := c.network(ctx, name)
	if err != nil {
		return err
	}
	c.logXML(ctx, "update network "+name+" "+string(e.Section), e.XML)
	cmd := golibvirt.NetworkUpdateCommandAddLast
	if e.Delete {
		cmd = golibvirt.NetworkUpdateCommandDelete
	}
	var section golibvirt.NetworkUpdateSection
	switch e.Section {
	case hypervisor.NetworkDHCPHost:
		section = golibvirt.NetworkSectionIPDhcpHost
	case hypervisor.NetworkDNSHost:
		section = golibvirt.NetworkSectionDNSHost
	default:
		return fmt.Errorf("update network %s: unknown section %q", name, e.Section)
	}
	flags := golibvirt.NetworkUpdateAffectConfig
	if active, err := c.l.NetworkIsActive(n); err == nil && active == 1 {
		flags |= golibvirt.NetworkUpdateAffectLive
	}
	verb := "add"
	if e.Delete {
		verb = "delete"
	}
	return wrap(c.l.NetworkUpdateCompat(n, cmd, section, -1, e.XML, flags), "%s %s %s in network %s", verb, e.Section, e.XML, name)
}

// ---- pools

func (c *Conn) poolObject(p golibvirt.StoragePool) (*hypervisor.Object, error) {
	x, err := c.l.StoragePoolGetXMLDesc(p, golibvirt.StorageXMLInactive)
	if unsupportedFlags(err) {
		x, err = c.l.StoragePoolGetXMLDesc(p, 0)
	}
	if err != nil {
		return nil, wrap(err, "read pool %s", p.Name)
	}
	active, err := c.l.StoragePoolIsActive(p)
	if err != nil {
		return nil, wrap(err, "read state of pool %s", p.Name)
	}
	return &hypervisor.Object{Name: p.Name, UUID: uuidString(p.UUID), Active: active == 1, XML: x}, nil
}

func (c *Conn) pool(ctx context.Context, name string) (golibvirt.StoragePool, error) {
	if err := ctx.Err(); err != nil {
		return golibvirt.StoragePool{}, err
	}
	p, err := c.l.StoragePoolLookupByName(name)
	if err != nil {
		return p, wrap(err, "look up pool %s", name)
	}
	return p, nil
}

// Pools lists every storage pool.
func (c *Conn) Pools(ctx context.Context) ([]hypervisor.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pools, _, err := c.l.ConnectListAllStoragePools(1, 0)
	if err != nil {
		return nil, wrap(err, "list pools")
	}
	return describeAll(pools, c.poolObject)
}

// LookupPool returns the pool called name.
func (c *Conn) LookupPool(ctx context.Context, name string) (*hypervisor.Object, error) {
	p, err := c.pool(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.poolObject(p)
}

// DefinePool defines a pool and builds its directory.
func (c *Conn) DefinePool(ctx context.Context, xml string) (*hypervisor.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := xmlName(xml)
	c.logXML(ctx, "define pool", xml)
	p, err := c.l.StoragePoolDefineXML(xml, 0)
	if err != nil {
		return nil, wrap(err, "define pool %s", name)
	}
	o, err := c.poolObject(p)
	if err != nil {
		return nil, err
	}
	if err := c.l.StoragePoolBuild(p, golibvirt.StoragePoolBuildNew); err != nil {
		return o, wrap(err, "build pool %s (create its directory)", name)
	}
	return o, nil
}

// StartPool starts the pool, which scans its directory for volumes.
func (c *Conn) StartPool(ctx context.Context, name string) error {
	p, err := c.pool(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.l.StoragePoolCreate(p, 0), "start pool %s", name)
}

// SetPoolAutostart marks the pool to start with libvirtd.
func (c *Conn) SetPoolAutostart(ctx context.Context, name string) error {
	p, err := c.pool(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.l.StoragePoolSetAutostart(p, 1), "set autostart on pool %s", name)
}

// DestroyPool stops the pool; an inactive pool is no error.
func (c *Conn) DestroyPool(ctx context.Context, name string) error {
	p, err := c.pool(ctx, name)
	if err != nil {
		return err
	}
	if err := c.l.StoragePoolDestroy(p); err != nil && code(err) != golibvirt.ErrOperationInvalid {
		return wrap(err, "stop pool %s", name)
	}
	return nil
}

// DeletePool removes the inactive pool's directory.
func (c *Conn) DeletePool(ctx context.Context, name string) error {
	p, err := c.pool(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.l.StoragePoolDelete(p, golibvirt.StoragePoolDeleteNormal), "delete directory of pool %s", name)
}

// UndefinePool removes the pool's definition.
func (c *Conn) UndefinePool(ctx context.Context, name string) error {
	p, err := c.pool(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.l.StoragePoolUndefine(p), "undefine pool %s", name)
}

// ---- volumes

func (c *Conn) volume(v golibvirt.StorageVol) (*hypervisor.Volume, error) {
	_, capacity, _, err := c.l.StorageVolGetInfo(v)
	if err != nil {
		return nil, wrap(err, "read volume %s in pool %s", v.Name, v.Pool)
	}
	path, err := c.l.StorageVolGetPath(v)
	if err != nil {
		return nil, wrap(err, "read path of volume %s in pool %s", v.Name, v.Pool)
	}
	return &hypervisor.Volume{Name: v.Name, Path: path, Capacity: capacity}, nil
}

// Volumes lists the volumes of pool.
func (c *Conn) Volumes(ctx context.Context, pool string) ([]hypervisor.Volume, error) {
	p, err := c.pool(ctx, pool)
	if err != nil {
		return nil, err
	}
	vols, _, err := c.l.StoragePoolListAllVolumes(p, 1, 0)
	if err != nil {
		return nil, wrap(err, "list volumes of pool %s", pool)
	}
	out := make([]hypervisor.Volume, 0, len(vols))
	for _, v := range vols {
		vol, err := c.volume(v)
		if err != nil {
			if errors.Is(err, hypervisor.ErrNotFound) {
				continue
			}
			return nil, err
		}
		out = append(out, *vol)
	}
	return out, nil
}

func (c *Conn) vol(ctx context.Context, pool, name string) (golibvirt.StorageVol, error) {
	p, err := c.pool(ctx, pool)
	if err != nil {
		return golibvirt.StorageVol{}, err
	}
	v, err := c.l.StorageVolLookupByName(p, name)
	if err != nil {
		return v, wrap(err, "look up volume %s in pool %s", name, pool)
	}
	return v, nil
}

// LookupVolume returns the volume name of pool.
func (c *Conn) LookupVolume(ctx context.Context, pool, name string) (*hypervisor.Volume, error) {
	v, err := c.vol(ctx, pool, name)
	if err != nil {
		return nil, err
	}
	return c.volume(v)
}

// CreateVolume creates a volume in pool.
func (c *Conn) CreateVolume(ctx context.Context, pool, xml string) (*hypervisor.Volume, error) {
	p, err := c.pool(ctx, pool)
	if err != nil {
		return nil, err
	}
	c.logXML(ctx, "create volume", xml)
	v, err := c.l.StorageVolCreateXML(p, xml, 0)
	if err != nil {
		return nil, wrap(err, "create volume %s in pool %s", xmlName(xml), pool)
	}
	return c.volume(v)
}

// UploadVolume streams size bytes from r into the volume through libvirt,
// which works the same on a remote host.
func (c *Conn) UploadVolume(ctx context.Context, pool, name string, r io.Reader, size int64) error {
	v, err := c.vol(ctx, pool, name)
	if err != nil {
		return err
	}
	if err := c.l.StorageVolUpload(v, ctxReader{ctx, r}, 0, uint64(size), 0); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("upload to volume %s in pool %s: %w", name, pool, ctx.Err())
		}
		return wrap(err, "upload to volume %s in pool %s", name, pool)
	}
	return nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// DeleteVolume deletes the volume and its file.
func (c *Conn) DeleteVolume(ctx context.Context, pool, name string) error {
	v, err := c.vol(ctx, pool, name)
	if err != nil {
		return err
	}
	return wrap(c.l.StorageVolDelete(v, golibvirt.StorageVolDeleteNormal), "delete volume %s in pool %s", name, pool)
}

// ---- domains

func (c *Conn) domainObject(d golibvirt.Domain) (*hypervisor.Object, error) {
	x, err := c.l.DomainGetXMLDesc(d, golibvirt.DomainXMLInactive)
	if unsupportedFlags(err) {
		x, err = c.l.DomainGetXMLDesc(d, 0)
	}
	if err != nil {
		return nil, wrap(err, "read domain %s", d.Name)
	}
	state, _, err := c.l.DomainGetState(d, 0)
	if err != nil {
		return nil, wrap(err, "read state of domain %s", d.Name)
	}
	active := golibvirt.DomainState(state) != golibvirt.DomainShutoff
	return &hypervisor.Object{Name: d.Name, UUID: uuidString(d.UUID), Active: active, XML: x}, nil
}

func (c *Conn) domain(ctx context.Context, name string) (golibvirt.Domain, error) {
	if err := ctx.Err(); err != nil {
		return golibvirt.Domain{}, err
	}
	d, err := c.l.DomainLookupByName(name)
	if err != nil {
		return d, wrap(err, "look up domain %s", name)
	}
	return d, nil
}

// Domains lists every domain with its definition.
func (c *Conn) Domains(ctx context.Context) ([]hypervisor.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	doms, _, err := c.l.ConnectListAllDomains(1, 0)
	if err != nil {
		return nil, wrap(err, "list domains")
	}
	return describeAll(doms, c.domainObject)
}

// describeAll describes every listed object, skipping those that vanished
// between the listing and the look-up (another client deleted them).
func describeAll[T any](items []T, describe func(T) (*hypervisor.Object, error)) ([]hypervisor.Object, error) {
	out := make([]hypervisor.Object, 0, len(items))
	for _, it := range items {
		o, err := describe(it)
		if err != nil {
			if errors.Is(err, hypervisor.ErrNotFound) {
				continue
			}
			return nil, err
		}
		out = append(out, *o)
	}
	return out, nil
}

// LookupDomain returns the domain called name.
func (c *Conn) LookupDomain(ctx context.Context, name string) (*hypervisor.Object, error) {
	d, err := c.domain(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.domainObject(d)
}

// DefineDomain defines (or redefines) a persistent domain.
func (c *Conn) DefineDomain(ctx context.Context, xml string) (*hypervisor.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.logXML(ctx, "define domain", xml)
	d, err := c.l.DomainDefineXML(xml)
	if err != nil {
		return nil, wrap(err, "define domain %s", xmlName(xml))
	}
	return c.domainObject(d)
}

// StartDomain boots the domain.
func (c *Conn) StartDomain(ctx context.Context, name string) error {
	d, err := c.domain(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.l.DomainCreate(d), "start domain %s", name)
}

// DestroyDomain powers the domain off; a domain already off is no error.
func (c *Conn) DestroyDomain(ctx context.Context, name string) error {
	d, err := c.domain(ctx, name)
	if err != nil {
		return err
	}
	if err := c.l.DomainDestroy(d); err != nil && code(err) != golibvirt.ErrOperationInvalid {
		return wrap(err, "power off domain %s", name)
	}
	return nil
}

// UndefineDomain removes the domain's definition (and any managed save and NVRAM).
func (c *Conn) UndefineDomain(ctx context.Context, name string) error {
	d, err := c.domain(ctx, name)
	if err != nil {
		return err
	}
	err = c.l.DomainUndefineFlags(d, golibvirt.DomainUndefineManagedSave|golibvirt.DomainUndefineNvram)
	if code(err) == golibvirt.ErrNoSupport || code(err) == golibvirt.ErrInvalidArg {
		err = c.l.DomainUndefine(d)
	}
	return wrap(err, "undefine domain %s", name)
}

// unsupportedFlags is true when a driver (the test driver) rejects the
// "inactive definition" flag: the live XML is then the best there is.
func unsupportedFlags(err error) bool {
	return err != nil && (code(err) == golibvirt.ErrInvalidArg || code(err) == golibvirt.ErrNoSupport)
}

// xmlName extracts <name> for error messages.
func xmlName(x string) string {
	var v struct {
		Name string `xml:"name"`
	}
	if err := xmlUnmarshal(x, &v); err != nil || v.Name == "" {
		return "(unnamed)"
	}
	return v.Name
}

func xmlUnmarshal(x string, v any) error { return xml.Unmarshal([]byte(x), v) }

// ---- snapshots

// Snapshots lists every snapshot of the domain with its name, description,
// state and creation time.
func (c *Conn) Snapshots(ctx context.Context, domain string) ([]hypervisor.Snapshot, error) {
	d, err := c.domain(ctx, domain)
	if err != nil {
		return nil, err
	}
	snaps, _, err := c.l.DomainListAllSnapshots(d, 1, 0)
	if err != nil {
		return nil, wrap(err, "list snapshots of domain %s", domain)
	}
	out := make([]hypervisor.Snapshot, 0, len(snaps))
	for _, sn := range snaps {
		x, err := c.l.DomainSnapshotGetXMLDesc(sn, 0)
		if code(err) == golibvirt.ErrNoDomainSnapshot {
			continue // deleted by another client since the listing
		}
		if err != nil {
			return nil, wrap(err, "read snapshot %s of domain %s", sn.Name, domain)
		}
		var v libvirtxml.DomainSnapshot
		if err := v.Unmarshal(x); err != nil {
			return nil, fmt.Errorf("parse snapshot %s of domain %s: %w", sn.Name, domain, err)
		}
		s := hypervisor.Snapshot{Name: sn.Name, Description: v.Description, State: v.State}
		if secs, err := strconv.ParseInt(v.CreationTime, 10, 64); err == nil {
			s.Created = time.Unix(secs, 0).UTC()
		}
		out = append(out, s)
	}
	return out, nil
}

// CreateSnapshot takes an internal snapshot: libvirt's default for a domain
// whose disks are all qcow2 (memory and disks of a running domain, disks of
// an off one). Atomic: on failure no half-made snapshot is left.
func (c *Conn) CreateSnapshot(ctx context.Context, domain, xml string) error {
	d, err := c.domain(ctx, domain)
	if err != nil {
		return err
	}
	c.logXML(ctx, "create snapshot of "+domain, xml)
	_, err = c.l.DomainSnapshotCreateXML(d, xml, uint32(golibvirt.DomainSnapshotCreateAtomic))
	if unsupportedFlags(err) {
		_, err = c.l.DomainSnapshotCreateXML(d, xml, 0)
	}
	return wrap(err, "snapshot domain %s", domain)
}

func (c *Conn) snapshot(ctx context.Context, domain, name string) (golibvirt.DomainSnapshot, error) {
	d, err := c.domain(ctx, domain)
	if err != nil {
		return golibvirt.DomainSnapshot{}, err
	}
	sn, err := c.l.DomainSnapshotLookupByName(d, name, 0)
	return sn, wrap(err, "look up snapshot %s of domain %s", name, domain)
}

// RevertSnapshot puts the domain back to the snapshot. Force lets a running
// domain go back to a snapshot of it shut off (libvirt otherwise refuses).
func (c *Conn) RevertSnapshot(ctx context.Context, domain, name string) error {
	sn, err := c.snapshot(ctx, domain, name)
	if err != nil {
		return err
	}
	err = c.l.DomainRevertToSnapshot(sn, 0)
	if code(err) == golibvirt.ErrSnapshotRevertRisky {
		err = c.l.DomainRevertToSnapshot(sn, uint32(golibvirt.DomainSnapshotRevertForce))
	}
	return wrap(err, "revert domain %s to snapshot %s", domain, name)
}

// DeleteSnapshot removes one snapshot, its data and its metadata.
func (c *Conn) DeleteSnapshot(ctx context.Context, domain, name string) error {
	sn, err := c.snapshot(ctx, domain, name)
	if err != nil {
		return err
	}
	return wrap(c.l.DomainSnapshotDelete(sn, 0), "delete snapshot %s of domain %s", name, domain)
}
