package libvirt

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

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
	paused := golibvirt.DomainState(state) == golibvirt.DomainPaused
	return &hypervisor.Object{Name: d.Name, UUID: uuidString(d.UUID), Active: active, Paused: paused, XML: x}, nil
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
	return wrap(c.long(ctx, func(l *golibvirt.Libvirt) error { return l.DomainCreate(d) }), "start domain %s", name)
}

// StartDomainPaused starts the domain with its vCPUs stopped. A driver
// without start --paused (libvirt's test driver) starts it and suspends it.
func (c *Conn) StartDomainPaused(ctx context.Context, name string) error {
	d, err := c.domain(ctx, name)
	if err != nil {
		return err
	}
	err = c.long(ctx, func(l *golibvirt.Libvirt) error {
		_, err := l.DomainCreateWithFlags(d, uint32(golibvirt.DomainStartPaused))
		if unsupportedFlags(err) {
			if err = l.DomainCreate(d); err == nil {
				err = l.DomainSuspend(d)
			}
		}
		return err
	})
	return wrap(err, "start domain %s paused", name)
}

// ResumeDomain runs a paused domain's vCPUs; a running domain is no error.
func (c *Conn) ResumeDomain(ctx context.Context, name string) error {
	d, err := c.domain(ctx, name)
	if err != nil {
		return err
	}
	state, _, err := c.l.DomainGetState(d, 0)
	if err != nil {
		return wrap(err, "read state of domain %s", name)
	}
	if golibvirt.DomainState(state) != golibvirt.DomainPaused {
		return nil
	}
	return wrap(c.l.DomainResume(d), "resume domain %s", name)
}

// ResetDomain resets a running domain (virDomainReset): the guest
// restarts as after a power reset, keeping its disks.
func (c *Conn) ResetDomain(ctx context.Context, name string) error {
	d, err := c.domain(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.l.DomainReset(d, 0), "reset domain %s", name)
}

// DestroyDomain powers the domain off; a domain already off is no error.
func (c *Conn) DestroyDomain(ctx context.Context, name string) error {
	d, err := c.domain(ctx, name)
	if err != nil {
		return err
	}
	err = c.long(ctx, func(l *golibvirt.Libvirt) error { return l.DomainDestroy(d) })
	if err != nil && code(err) != golibvirt.ErrOperationInvalid {
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
	err = c.long(ctx, func(l *golibvirt.Libvirt) error {
		_, err := l.DomainSnapshotCreateXML(d, xml, uint32(golibvirt.DomainSnapshotCreateAtomic))
		if unsupportedFlags(err) {
			_, err = l.DomainSnapshotCreateXML(d, xml, 0)
		}
		return err
	})
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
	err = c.long(ctx, func(l *golibvirt.Libvirt) error {
		err := l.DomainRevertToSnapshot(sn, 0)
		if code(err) == golibvirt.ErrSnapshotRevertRisky {
			err = l.DomainRevertToSnapshot(sn, uint32(golibvirt.DomainSnapshotRevertForce))
		}
		return err
	})
	return wrap(err, "revert domain %s to snapshot %s", domain, name)
}

// DeleteSnapshot removes one snapshot, its data and its metadata.
func (c *Conn) DeleteSnapshot(ctx context.Context, domain, name string) error {
	sn, err := c.snapshot(ctx, domain, name)
	if err != nil {
		return err
	}
	return wrap(c.long(ctx, func(l *golibvirt.Libvirt) error { return l.DomainSnapshotDelete(sn, 0) }), "delete snapshot %s of domain %s", name, domain)
}

// CreateDomain starts a transient domain of xml: it is gone once stopped.
func (c *Conn) CreateDomain(ctx context.Context, xml string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.logXML(ctx, "create domain", xml)
	err := c.long(ctx, func(l *golibvirt.Libvirt) error {
		_, err := l.DomainCreateXML(xml, 0)
		return err
	})
	return wrap(err, "create domain %s", xmlName(xml))
}

// SaveDomain writes the running domain's memory and device state to path,
// on the hypervisor's machine, and stops it.
func (c *Conn) SaveDomain(ctx context.Context, name, path string) error {
	d, err := c.domain(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.long(ctx, func(l *golibvirt.Libvirt) error { return l.DomainSave(d, path) }), "save domain %s to %s", name, path)
}

// RestoreDomainPaused starts the domain a save image at path describes
// (the definition in its header names it), with its vCPUs stopped.
func (c *Conn) RestoreDomainPaused(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := c.long(ctx, func(l *golibvirt.Libvirt) error {
		return l.DomainRestoreFlags(path, nil, uint32(golibvirt.DomainSavePaused))
	})
	return wrap(err, "restore domain from %s", path)
}

// DomainSaveXML is the domain's persistent definition as a save image
// carries it (inactive, migratable: no live-only parts).
func (c *Conn) DomainSaveXML(ctx context.Context, name string) (string, error) {
	d, err := c.domain(ctx, name)
	if err != nil {
		return "", err
	}
	x, err := c.l.DomainGetXMLDesc(d, golibvirt.DomainXMLInactive|golibvirt.DomainXMLMigratable)
	return x, wrap(err, "read definition of domain %s", name)
}
