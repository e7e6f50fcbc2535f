package fake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

// The hypervisor.Domains and hypervisor.Snapshots calls.

func (f *Hypervisor) Domains(context.Context) ([]hypervisor.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []hypervisor.Object
	for _, d := range f.DomainObjects {
		out = append(out, *d)
	}
	return out, nil
}

func (f *Hypervisor) LookupDomain(_ context.Context, name string) (*hypervisor.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.DomainObjects[name]; ok {
		c := *o
		return &c, nil
	}
	return nil, notFound("domain", name)
}

func (f *Hypervisor) DefineDomain(_ context.Context, x string) (*hypervisor.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := nameOf(x)
	if err := f.call("DefineDomain %s", name); err != nil {
		return nil, err
	}
	if strings.Contains(x, `<source network=`) {
		var d libvirtxml.Domain
		if err := d.Unmarshal(x); err != nil {
			return nil, err
		}
		if net := d.Devices.Interfaces[0].Source.Network.Network; f.NetworkObjects[net] == nil {
			return nil, fmt.Errorf("domain %s: network %s does not exist", name, net)
		}
	}
	o, ok := f.DomainObjects[name]
	if !ok {
		o = &hypervisor.Object{Name: name, UUID: f.uuid()}
		f.DomainObjects[name] = o
	} else {
		// As libvirt: a redefinition must keep the domain's UUID.
		var d libvirtxml.Domain
		if err := d.Unmarshal(x); err != nil {
			return nil, err
		}
		if d.UUID != o.UUID {
			return nil, fmt.Errorf("operation failed: domain '%s' already exists with uuid %s", name, o.UUID)
		}
	}
	o.XML = x
	c := *o
	return &c, nil
}

func (f *Hypervisor) setDom(name, what string, fn func(o *hypervisor.Object)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("%s %s", what, name); err != nil {
		return err
	}
	o, ok := f.DomainObjects[name]
	if !ok {
		return notFound("domain", name)
	}
	fn(o)
	return nil
}

func (f *Hypervisor) StartDomain(_ context.Context, n string) error {
	return f.setDom(n, "StartDomain", func(o *hypervisor.Object) { o.Active = true })
}
func (f *Hypervisor) StartDomainPaused(_ context.Context, n string) error {
	return f.setDom(n, "StartDomainPaused", func(o *hypervisor.Object) { o.Active, o.Paused = true, true })
}

// ResumeDomain fails, as libvirt does, for a domain that is not active.
func (f *Hypervisor) ResumeDomain(_ context.Context, n string) error {
	var inactive bool
	err := f.setDom(n, "ResumeDomain", func(o *hypervisor.Object) {
		inactive, o.Paused = !o.Active, false
	})
	if err == nil && inactive {
		return fmt.Errorf("ResumeDomain %s: Requested operation is not valid: domain is not running", n)
	}
	return err
}
func (f *Hypervisor) DestroyDomain(_ context.Context, n string) error {
	return f.setDom(n, "DestroyDomain", func(o *hypervisor.Object) { o.Active, o.Paused = false, false })
}
func (f *Hypervisor) ResetDomain(_ context.Context, n string) error {
	var err error
	serr := f.setDom(n, "ResetDomain", func(o *hypervisor.Object) {
		if !o.Active {
			err = fmt.Errorf("ResetDomain %s: domain is not running", n)
		}
	})
	if serr != nil {
		return serr
	}
	return err
}
func (f *Hypervisor) UndefineDomain(_ context.Context, n string) error {
	f.mu.Lock()
	snaps := len(f.DomainSnapshots[n])
	f.mu.Unlock()
	if snaps > 0 {
		// As libvirt: a domain with snapshots cannot be undefined.
		return fmt.Errorf("UndefineDomain %s: cannot undefine domain with %d snapshots", n, snaps)
	}
	return f.setDom(n, "UndefineDomain", func(o *hypervisor.Object) { delete(f.DomainObjects, n) })
}

func (f *Hypervisor) Snapshots(_ context.Context, dom string) ([]hypervisor.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.DomainObjects[dom] == nil {
		return nil, notFound("domain", dom)
	}
	return append([]hypervisor.Snapshot(nil), f.DomainSnapshots[dom]...), nil
}

func (f *Hypervisor) CreateSnapshot(_ context.Context, dom, x string) error {
	var v libvirtxml.DomainSnapshot
	if err := v.Unmarshal(x); err != nil {
		return err
	}
	return f.setDom(dom, "CreateSnapshot "+v.Name, func(o *hypervisor.Object) {
		state := "shutoff"
		if o.Active {
			state = "running"
		}
		f.DomainSnapshots[dom] = append(f.DomainSnapshots[dom], hypervisor.Snapshot{Name: v.Name, Description: v.Description, State: state, Created: time.Now()})
	})
}

func (f *Hypervisor) findSnap(dom, name string) (int, error) {
	for i, sn := range f.DomainSnapshots[dom] {
		if sn.Name == name {
			return i, nil
		}
	}
	return -1, notFound("snapshot", dom+"/"+name)
}

func (f *Hypervisor) RevertSnapshot(_ context.Context, dom, name string) error {
	var err error
	serr := f.setDom(dom, "RevertSnapshot "+name, func(o *hypervisor.Object) {
		var i int
		if i, err = f.findSnap(dom, name); err == nil {
			o.Active = f.DomainSnapshots[dom][i].State == "running"
		}
	})
	return errors.Join(serr, err)
}

func (f *Hypervisor) DeleteSnapshot(_ context.Context, dom, name string) error {
	var err error
	serr := f.setDom(dom, "DeleteSnapshot "+name, func(o *hypervisor.Object) {
		var i int
		if i, err = f.findSnap(dom, name); err == nil {
			f.DomainSnapshots[dom] = append(f.DomainSnapshots[dom][:i], f.DomainSnapshots[dom][i+1:]...)
		}
	})
	return errors.Join(serr, err)
}

// The fake runs no guest, so it has no memory to save
// (Capabilities().SavesMemory is false): these calls fail as a driver
// without them would.
func (f *Hypervisor) CreateDomain(_ context.Context, x string) error {
	return f.unsupported("CreateDomain " + nameOf(x))
}
func (f *Hypervisor) SaveDomain(_ context.Context, n, _ string) error {
	return f.unsupported("SaveDomain " + n)
}
func (f *Hypervisor) RestoreDomainPaused(_ context.Context, path string) error {
	return f.unsupported("RestoreDomainPaused " + path)
}

// DomainSaveXML is the domain's definition as defined.
func (f *Hypervisor) DomainSaveXML(_ context.Context, n string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.DomainObjects[n]; ok {
		return o.XML, nil
	}
	return "", notFound("domain", n)
}

func (f *Hypervisor) unsupported(what string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("%s", what); err != nil {
		return err
	}
	return fmt.Errorf("%s: %w", what, hypervisor.ErrUnsupported)
}
