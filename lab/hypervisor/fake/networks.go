package fake

import (
	"context"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

// The hypervisor.Networks calls (Networks, the listing, is in hypervisor.go).

func (f *Hypervisor) LookupNetwork(_ context.Context, name string) (*hypervisor.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.NetworkObjects[name]; ok {
		c := *o
		return &c, nil
	}
	return nil, notFound("network", name)
}

func (f *Hypervisor) DefineNetwork(_ context.Context, x string) (*hypervisor.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := nameOf(x)
	if err := f.call("DefineNetwork %s", name); err != nil {
		return nil, err
	}
	o := &hypervisor.Object{Name: name, UUID: f.uuid(), XML: x}
	f.NetworkObjects[name] = o
	c := *o
	return &c, nil
}

func (f *Hypervisor) setNet(name, what string, fn func(o *hypervisor.Object)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("%s %s", what, name); err != nil {
		return err
	}
	o, ok := f.NetworkObjects[name]
	if !ok {
		return notFound("network", name)
	}
	fn(o)
	return nil
}

func (f *Hypervisor) StartNetwork(_ context.Context, n string) error {
	return f.setNet(n, "StartNetwork", func(o *hypervisor.Object) { o.Active = true })
}
func (f *Hypervisor) SetNetworkAutostart(_ context.Context, n string) error {
	return f.setNet(n, "SetNetworkAutostart", func(*hypervisor.Object) {})
}
func (f *Hypervisor) DestroyNetwork(_ context.Context, n string) error {
	return f.setNet(n, "DestroyNetwork", func(o *hypervisor.Object) { o.Active = false })
}
func (f *Hypervisor) UndefineNetwork(_ context.Context, n string) error {
	return f.setNet(n, "UndefineNetwork", func(o *hypervisor.Object) { delete(f.NetworkObjects, n) })
}
func (f *Hypervisor) UpdateNetwork(_ context.Context, name string, e hypervisor.NetworkEdit) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	verb := "add"
	if e.Delete {
		verb = "delete"
	}
	if err := f.call("UpdateNetwork %s %s %s %s", name, verb, e.Section, e.XML); err != nil {
		return err
	}
	o, ok := f.NetworkObjects[name]
	if !ok {
		return notFound("network", name)
	}
	var n libvirtxml.Network
	if err := n.Unmarshal(o.XML); err != nil {
		return err
	}
	switch e.Section {
	case hypervisor.NetworkDHCPHost:
		var h libvirtxml.NetworkDHCPHost
		if err := unmarshal(e.XML, &h); err != nil {
			return err
		}
		hosts := n.IPs[0].DHCP.Hosts[:0]
		for _, x := range n.IPs[0].DHCP.Hosts {
			if !(e.Delete && x.MAC == h.MAC && x.IP == h.IP) {
				hosts = append(hosts, x)
			}
		}
		if !e.Delete {
			hosts = append(hosts, h)
		}
		n.IPs[0].DHCP.Hosts = hosts
	case hypervisor.NetworkDNSHost:
		var h libvirtxml.NetworkDNSHost
		if err := unmarshal(e.XML, &h); err != nil {
			return err
		}
		hosts := n.DNS.Host[:0]
		for _, x := range n.DNS.Host {
			if !(e.Delete && x.IP == h.IP) {
				hosts = append(hosts, x)
			}
		}
		if !e.Delete {
			hosts = append(hosts, h)
		}
		n.DNS.Host = hosts
	}
	x, err := n.Marshal()
	if err != nil {
		return err
	}
	o.XML = x
	return nil
}

func (f *Hypervisor) NetworkLeases(context.Context, string) ([]hypervisor.Lease, error) {
	return nil, hypervisor.ErrUnsupported
}
