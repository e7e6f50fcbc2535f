package fake

import (
	"context"
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

// The hypervisor.Filters calls, and the domain interface update.

func (f *Hypervisor) LookupFilter(_ context.Context, name string) (*hypervisor.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.FilterObjects[name]; ok {
		c := *o
		return &c, nil
	}
	return nil, notFound("network filter", name)
}

func (f *Hypervisor) DefineFilter(_ context.Context, x string) (*hypervisor.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var nf libvirtxml.NWFilter
	if err := nf.Unmarshal(x); err != nil {
		return nil, fmt.Errorf("define network filter: %w", err)
	}
	if err := f.call("DefineFilter %s", nf.Name); err != nil {
		return nil, err
	}
	o, ok := f.FilterObjects[nf.Name]
	if !ok {
		o = &hypervisor.Object{Name: nf.Name, UUID: f.uuid()}
		f.FilterObjects[nf.Name] = o
	}
	o.XML = x
	c := *o
	return &c, nil
}

// UndefineFilter refuses, as libvirt does, a filter an interface of a
// domain references.
func (f *Hypervisor) UndefineFilter(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("UndefineFilter %s", name); err != nil {
		return err
	}
	if _, ok := f.FilterObjects[name]; !ok {
		return notFound("network filter", name)
	}
	for _, d := range f.DomainObjects {
		if strings.Contains(d.XML, "filter=\""+name+"\"") || strings.Contains(d.XML, "filter='"+name+"'") {
			return fmt.Errorf("undefine network filter %s: operation failed: nwfilter is in use", name)
		}
	}
	delete(f.FilterObjects, name)
	return nil
}

// UpdateDomainInterface replaces the interface with x's MAC in the
// domain's definition.
func (f *Hypervisor) UpdateDomainInterface(_ context.Context, name, x string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("UpdateDomainInterface %s", name); err != nil {
		return err
	}
	o, ok := f.DomainObjects[name]
	if !ok {
		return notFound("domain", name)
	}
	var iface libvirtxml.DomainInterface
	if err := iface.Unmarshal(x); err != nil {
		return fmt.Errorf("update the interface of domain %s: %w", name, err)
	}
	var d libvirtxml.Domain
	if err := d.Unmarshal(o.XML); err != nil {
		return err
	}
	for i, old := range d.Devices.Interfaces {
		if old.MAC != nil && iface.MAC != nil && old.MAC.Address == iface.MAC.Address {
			if iface.FilterRef != nil && f.FilterObjects[iface.FilterRef.Filter] == nil {
				return fmt.Errorf("update the interface of domain %s: network filter %s: %w", name, iface.FilterRef.Filter, hypervisor.ErrNotFound)
			}
			d.Devices.Interfaces[i] = iface
			out, err := d.Marshal()
			if err != nil {
				return err
			}
			o.XML = out
			return nil
		}
	}
	return fmt.Errorf("update the interface of domain %s: operation failed: no interface with MAC %v", name, iface.MAC)
}
