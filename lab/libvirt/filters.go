package libvirt

import (
	"context"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

func (c *Conn) filter(ctx context.Context, name string) (golibvirt.Nwfilter, error) {
	if err := ctx.Err(); err != nil {
		return golibvirt.Nwfilter{}, err
	}
	f, err := c.l.NwfilterLookupByName(name)
	if err != nil {
		if code(err) == golibvirt.ErrNoNwfilter {
			return f, wrap(notFoundErr{err}, "look up network filter %s", name)
		}
		return f, wrap(err, "look up network filter %s", name)
	}
	return f, nil
}

// notFoundErr marks libvirt's "no such nwfilter", which wrap does not
// know, as hypervisor.ErrNotFound.
type notFoundErr struct{ err error }

func (e notFoundErr) Error() string { return e.err.Error() }
func (e notFoundErr) Unwrap() []error {
	return []error{hypervisor.ErrNotFound, e.err}
}

func (c *Conn) filterObject(f golibvirt.Nwfilter) (*hypervisor.Object, error) {
	x, err := c.l.NwfilterGetXMLDesc(f, 0)
	if err != nil {
		return nil, wrap(err, "read network filter %s", f.Name)
	}
	return &hypervisor.Object{Name: f.Name, UUID: uuidString(f.UUID), XML: x}, nil
}

// LookupFilter returns the network filter called name.
func (c *Conn) LookupFilter(ctx context.Context, name string) (*hypervisor.Object, error) {
	f, err := c.filter(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.filterObject(f)
}

// DefineFilter defines a network filter (libvirt applies a redefinition
// to every interface that references it).
func (c *Conn) DefineFilter(ctx context.Context, xml string) (*hypervisor.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.logXML(ctx, "define network filter", xml)
	f, err := c.l.NwfilterDefineXML(xml)
	if err != nil {
		return nil, wrap(err, "define network filter %s", xmlName(xml))
	}
	return c.filterObject(f)
}

// UndefineFilter removes the network filter's definition.
func (c *Conn) UndefineFilter(ctx context.Context, name string) error {
	f, err := c.filter(ctx, name)
	if err != nil {
		return err
	}
	return wrap(c.l.NwfilterUndefine(f), "undefine network filter %s", name)
}

// UpdateDomainInterface replaces the domain's interface of the same MAC,
// in its persistent definition and, when it runs, live (libvirt's
// update-device: a changed filterref is applied to the running tap).
func (c *Conn) UpdateDomainInterface(ctx context.Context, name, xml string) error {
	d, err := c.domain(ctx, name)
	if err != nil {
		return err
	}
	c.logXML(ctx, "update interface of domain "+name, xml)
	flags := golibvirt.DomainDeviceModifyConfig
	if active, err := c.l.DomainIsActive(d); err == nil && active == 1 {
		flags |= golibvirt.DomainDeviceModifyLive
	}
	return wrap(c.l.DomainUpdateDeviceFlags(d, xml, flags), "update the interface of domain %s", name)
}
