package libvirt

import (
	"context"
	"encoding/xml"
	"fmt"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

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
