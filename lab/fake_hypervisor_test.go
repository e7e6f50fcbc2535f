package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/host"
)

// fakeHV is an in-memory Hypervisor that records every mutating call and
// can fail a chosen one, to test Up and Down without libvirt.
type fakeHV struct {
	mu       sync.Mutex
	nets     map[string]*Object
	pools    map[string]*Object
	vols     map[string]map[string]*Volume // pool -> name
	doms     map[string]*Object
	calls    []string
	failOn   string // a call like "DefineDomain bootlab-t-master-1"
	uploaded map[string]int64
	uuidSeq  int
	// snaps are each domain's snapshots, in the order taken.
	snaps map[string][]Snapshot
	host  *fakeMachine
	// volXML is the definition of every volume created, by name.
	volXML map[string]string
}

func (f *fakeHV) Host() host.Host { return f.host }

func newFakeHV() *fakeHV {
	return &fakeHV{
		nets: map[string]*Object{}, pools: map[string]*Object{}, vols: map[string]map[string]*Volume{},
		doms: map[string]*Object{}, uploaded: map[string]int64{}, snaps: map[string][]Snapshot{},
		host: newFakeMachine(false),
	}
}

func (f *fakeHV) call(format string, args ...any) error {
	c := fmt.Sprintf(format, args...)
	f.calls = append(f.calls, c)
	if f.failOn != "" && c == f.failOn {
		return fmt.Errorf("%s: injected failure", c)
	}
	return nil
}

// mutations returns the recorded calls, sorted (parallel steps have no order).
func (f *fakeHV) mutations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]string(nil), f.calls...)
	sort.Strings(out)
	return out
}

func (f *fakeHV) reset() { f.mu.Lock(); f.calls = nil; f.failOn = ""; f.mu.Unlock() }

func (f *fakeHV) uuid() string {
	f.uuidSeq++
	return fmt.Sprintf("00000000-0000-0000-0000-%012d", f.uuidSeq)
}

func nameOf(x string) string {
	var v struct {
		Name string `xml:"name"`
	}
	_ = xmlUnmarshalString(x, &v)
	return v.Name
}

func notFound(kind, name string) error { return fmt.Errorf("%s %s: %w", kind, name, ErrNotFound) }

func (f *fakeHV) LibvirtVersion(context.Context) (string, error) { return "9.0.0", nil }
func (f *fakeHV) DomainTypes(context.Context) ([]string, error)  { return []string{"qemu"}, nil }
func (f *fakeHV) Networks(context.Context) ([]NetworkInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []NetworkInfo
	for _, n := range f.nets {
		out = append(out, NetworkInfo{Name: n.Name, UUID: n.UUID, Active: n.Active})
	}
	return out, nil
}

func (f *fakeHV) LookupNetwork(_ context.Context, name string) (*Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.nets[name]; ok {
		c := *o
		return &c, nil
	}
	return nil, notFound("network", name)
}

func (f *fakeHV) DefineNetwork(_ context.Context, x string) (*Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := nameOf(x)
	if err := f.call("DefineNetwork %s", name); err != nil {
		return nil, err
	}
	o := &Object{Name: name, UUID: f.uuid(), XML: x}
	f.nets[name] = o
	c := *o
	return &c, nil
}

func (f *fakeHV) setNet(name, what string, fn func(o *Object)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("%s %s", what, name); err != nil {
		return err
	}
	o, ok := f.nets[name]
	if !ok {
		return notFound("network", name)
	}
	fn(o)
	return nil
}

func (f *fakeHV) StartNetwork(_ context.Context, n string) error {
	return f.setNet(n, "StartNetwork", func(o *Object) { o.Active = true })
}
func (f *fakeHV) SetNetworkAutostart(_ context.Context, n string) error {
	return f.setNet(n, "SetNetworkAutostart", func(*Object) {})
}
func (f *fakeHV) DestroyNetwork(_ context.Context, n string) error {
	return f.setNet(n, "DestroyNetwork", func(o *Object) { o.Active = false })
}
func (f *fakeHV) UndefineNetwork(_ context.Context, n string) error {
	return f.setNet(n, "UndefineNetwork", func(o *Object) { delete(f.nets, n) })
}
func (f *fakeHV) UpdateNetwork(_ context.Context, name string, e NetworkEdit) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	verb := "add"
	if e.Delete {
		verb = "delete"
	}
	if err := f.call("UpdateNetwork %s %s %s %s", name, verb, e.Section, e.XML); err != nil {
		return err
	}
	o, ok := f.nets[name]
	if !ok {
		return notFound("network", name)
	}
	var n libvirtxml.Network
	if err := n.Unmarshal(o.XML); err != nil {
		return err
	}
	switch e.Section {
	case NetworkDHCPHost:
		var h libvirtxml.NetworkDHCPHost
		if err := xmlUnmarshalString(e.XML, &h); err != nil {
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
	case NetworkDNSHost:
		var h libvirtxml.NetworkDNSHost
		if err := xmlUnmarshalString(e.XML, &h); err != nil {
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

func (f *fakeHV) NetworkLeases(context.Context, string) ([]Lease, error) { return nil, ErrUnsupported }

func (f *fakeHV) Pools(context.Context) ([]Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Object
	for _, p := range f.pools {
		out = append(out, *p)
	}
	return out, nil
}

func (f *fakeHV) LookupPool(_ context.Context, name string) (*Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.pools[name]; ok {
		c := *o
		return &c, nil
	}
	return nil, notFound("pool", name)
}

func (f *fakeHV) DefinePool(_ context.Context, x string) (*Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := nameOf(x)
	if err := f.call("DefinePool %s", name); err != nil {
		return nil, err
	}
	o := &Object{Name: name, UUID: f.uuid(), XML: x}
	f.pools[name] = o
	if f.vols[name] == nil {
		f.vols[name] = map[string]*Volume{}
	}
	c := *o
	return &c, nil
}

func (f *fakeHV) setPool(name, what string, fn func(o *Object)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("%s %s", what, name); err != nil {
		return err
	}
	o, ok := f.pools[name]
	if !ok {
		return notFound("pool", name)
	}
	fn(o)
	return nil
}

func (f *fakeHV) StartPool(_ context.Context, n string) error {
	return f.setPool(n, "StartPool", func(o *Object) { o.Active = true })
}
func (f *fakeHV) SetPoolAutostart(_ context.Context, n string) error {
	return f.setPool(n, "SetPoolAutostart", func(*Object) {})
}
func (f *fakeHV) DestroyPool(_ context.Context, n string) error {
	return f.setPool(n, "DestroyPool", func(o *Object) { o.Active = false })
}
func (f *fakeHV) DeletePool(_ context.Context, n string) error {
	return f.setPool(n, "DeletePool", func(o *Object) { delete(f.vols, n) })
}
func (f *fakeHV) UndefinePool(_ context.Context, n string) error {
	return f.setPool(n, "UndefinePool", func(o *Object) { delete(f.pools, n) })
}

func (f *fakeHV) Volumes(_ context.Context, pool string) ([]Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Volume
	for _, v := range f.vols[pool] {
		out = append(out, *v)
	}
	return out, nil
}

func (f *fakeHV) LookupVolume(_ context.Context, pool, name string) (*Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.vols[pool][name]; ok {
		c := *v
		return &c, nil
	}
	return nil, notFound("volume", name)
}

func (f *fakeHV) CreateVolume(_ context.Context, pool, x string) (*Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var v libvirtxml.StorageVolume
	if err := v.Unmarshal(x); err != nil {
		return nil, err
	}
	if err := f.call("CreateVolume %s/%s", pool, v.Name); err != nil {
		return nil, err
	}
	if f.volXML == nil {
		f.volXML = map[string]string{}
	}
	f.volXML[v.Name] = x
	if p, ok := f.pools[pool]; !ok || !p.Active {
		return nil, fmt.Errorf("pool %s not active", pool)
	}
	vol := &Volume{Name: v.Name, Path: "/pool/" + v.Name, Capacity: v.Capacity.Value}
	f.vols[pool][v.Name] = vol
	c := *vol
	return &c, nil
}

func (f *fakeHV) UploadVolume(_ context.Context, pool, name string, r io.Reader, size int64) error {
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("UploadVolume %s/%s", pool, name); err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("upload: read %d bytes, want %d", n, size)
	}
	f.uploaded[name] = n
	return nil
}

func (f *fakeHV) DeleteVolume(_ context.Context, pool, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("DeleteVolume %s/%s", pool, name); err != nil {
		return err
	}
	if _, ok := f.vols[pool][name]; !ok {
		return notFound("volume", name)
	}
	delete(f.vols[pool], name)
	return nil
}

func (f *fakeHV) Domains(context.Context) ([]Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Object
	for _, d := range f.doms {
		out = append(out, *d)
	}
	return out, nil
}

func (f *fakeHV) LookupDomain(_ context.Context, name string) (*Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.doms[name]; ok {
		c := *o
		return &c, nil
	}
	return nil, notFound("domain", name)
}

func (f *fakeHV) DefineDomain(_ context.Context, x string) (*Object, error) {
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
		if net := d.Devices.Interfaces[0].Source.Network.Network; f.nets[net] == nil {
			return nil, fmt.Errorf("domain %s: network %s does not exist", name, net)
		}
	}
	o, ok := f.doms[name]
	if !ok {
		o = &Object{Name: name, UUID: f.uuid()}
		f.doms[name] = o
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

func (f *fakeHV) setDom(name, what string, fn func(o *Object)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("%s %s", what, name); err != nil {
		return err
	}
	o, ok := f.doms[name]
	if !ok {
		return notFound("domain", name)
	}
	fn(o)
	return nil
}

func (f *fakeHV) StartDomain(_ context.Context, n string) error {
	return f.setDom(n, "StartDomain", func(o *Object) { o.Active = true })
}
func (f *fakeHV) DestroyDomain(_ context.Context, n string) error {
	return f.setDom(n, "DestroyDomain", func(o *Object) { o.Active = false })
}
func (f *fakeHV) UndefineDomain(_ context.Context, n string) error {
	f.mu.Lock()
	has := len(f.snaps[n]) > 0
	f.mu.Unlock()
	if has {
		// As libvirt: a domain with snapshots cannot be undefined.
		return fmt.Errorf("UndefineDomain %s: cannot undefine domain with %d snapshots", n, len(f.snaps[n]))
	}
	return f.setDom(n, "UndefineDomain", func(o *Object) { delete(f.doms, n) })
}

func (f *fakeHV) Snapshots(_ context.Context, dom string) ([]Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.doms[dom] == nil {
		return nil, notFound("domain", dom)
	}
	return append([]Snapshot(nil), f.snaps[dom]...), nil
}

func (f *fakeHV) CreateSnapshot(_ context.Context, dom, x string) error {
	var v libvirtxml.DomainSnapshot
	if err := v.Unmarshal(x); err != nil {
		return err
	}
	return f.setDom(dom, "CreateSnapshot "+v.Name, func(o *Object) {
		state := "shutoff"
		if o.Active {
			state = "running"
		}
		f.snaps[dom] = append(f.snaps[dom], Snapshot{Name: v.Name, Description: v.Description, State: state, Created: time.Now()})
	})
}

func (f *fakeHV) findSnap(dom, name string) (int, error) {
	for i, sn := range f.snaps[dom] {
		if sn.Name == name {
			return i, nil
		}
	}
	return -1, notFound("snapshot", dom+"/"+name)
}

func (f *fakeHV) RevertSnapshot(_ context.Context, dom, name string) error {
	var err error
	serr := f.setDom(dom, "RevertSnapshot "+name, func(o *Object) {
		var i int
		if i, err = f.findSnap(dom, name); err == nil {
			o.Active = f.snaps[dom][i].State == "running"
		}
	})
	return errors.Join(serr, err)
}

func (f *fakeHV) DeleteSnapshot(_ context.Context, dom, name string) error {
	var err error
	serr := f.setDom(dom, "DeleteSnapshot "+name, func(o *Object) {
		var i int
		if i, err = f.findSnap(dom, name); err == nil {
			f.snaps[dom] = append(f.snaps[dom][:i], f.snaps[dom][i+1:]...)
		}
	})
	return errors.Join(serr, err)
}

var _ Hypervisor = (*fakeHV)(nil)
