package fake

import (
	"context"
	"fmt"
	"io"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

// The hypervisor.Pools and hypervisor.Volumes calls.

func (f *Hypervisor) Pools(context.Context) ([]hypervisor.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []hypervisor.Object
	for _, p := range f.PoolObjects {
		out = append(out, *p)
	}
	return out, nil
}

func (f *Hypervisor) LookupPool(_ context.Context, name string) (*hypervisor.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.PoolObjects[name]; ok {
		c := *o
		return &c, nil
	}
	return nil, notFound("pool", name)
}

func (f *Hypervisor) DefinePool(_ context.Context, x string) (*hypervisor.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := nameOf(x)
	if err := f.call("DefinePool %s", name); err != nil {
		return nil, err
	}
	o := &hypervisor.Object{Name: name, UUID: f.uuid(), XML: x}
	f.PoolObjects[name] = o
	if f.PoolVolumes[name] == nil {
		f.PoolVolumes[name] = map[string]*hypervisor.Volume{}
	}
	c := *o
	return &c, nil
}

func (f *Hypervisor) setPool(name, what string, fn func(o *hypervisor.Object)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("%s %s", what, name); err != nil {
		return err
	}
	o, ok := f.PoolObjects[name]
	if !ok {
		return notFound("pool", name)
	}
	fn(o)
	return nil
}

func (f *Hypervisor) StartPool(_ context.Context, n string) error {
	return f.setPool(n, "StartPool", func(o *hypervisor.Object) { o.Active = true })
}
func (f *Hypervisor) SetPoolAutostart(_ context.Context, n string) error {
	return f.setPool(n, "SetPoolAutostart", func(*hypervisor.Object) {})
}
func (f *Hypervisor) DestroyPool(_ context.Context, n string) error {
	return f.setPool(n, "DestroyPool", func(o *hypervisor.Object) { o.Active = false })
}
func (f *Hypervisor) DeletePool(_ context.Context, n string) error {
	return f.setPool(n, "DeletePool", func(o *hypervisor.Object) { delete(f.PoolVolumes, n) })
}
func (f *Hypervisor) UndefinePool(_ context.Context, n string) error {
	return f.setPool(n, "UndefinePool", func(o *hypervisor.Object) { delete(f.PoolObjects, n) })
}

func (f *Hypervisor) Volumes(_ context.Context, pool string) ([]hypervisor.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []hypervisor.Volume
	for _, v := range f.PoolVolumes[pool] {
		out = append(out, *v)
	}
	return out, nil
}

func (f *Hypervisor) LookupVolume(_ context.Context, pool, name string) (*hypervisor.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.PoolVolumes[pool][name]; ok {
		c := *v
		return &c, nil
	}
	return nil, notFound("volume", name)
}

func (f *Hypervisor) CreateVolume(_ context.Context, pool, x string) (*hypervisor.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var v libvirtxml.StorageVolume
	if err := v.Unmarshal(x); err != nil {
		return nil, err
	}
	if err := f.call("CreateVolume %s/%s", pool, v.Name); err != nil {
		return nil, err
	}
	f.VolumeXML[v.Name] = x
	if p, ok := f.PoolObjects[pool]; !ok || !p.Active {
		return nil, fmt.Errorf("pool %s not active", pool)
	}
	vol := &hypervisor.Volume{Name: v.Name, Path: "/pool/" + v.Name, Capacity: v.Capacity.Value}
	f.PoolVolumes[pool][v.Name] = vol
	c := *vol
	return &c, nil
}

func (f *Hypervisor) UploadVolume(_ context.Context, pool, name string, r io.Reader, size int64) error {
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
	f.Uploaded[name] = n
	return nil
}

// CopyVolume creates the volume as CreateVolume does, with the source's
// uploaded bytes (Uploaded); the source must exist.
func (f *Hypervisor) CopyVolume(_ context.Context, pool, x, fromPool, fromName string) (*hypervisor.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var v libvirtxml.StorageVolume
	if err := v.Unmarshal(x); err != nil {
		return nil, err
	}
	if err := f.call("CopyVolume %s/%s from %s/%s", pool, v.Name, fromPool, fromName); err != nil {
		return nil, err
	}
	if _, ok := f.PoolVolumes[fromPool][fromName]; !ok {
		return nil, notFound("volume", fromName)
	}
	if p, ok := f.PoolObjects[pool]; !ok || !p.Active {
		return nil, fmt.Errorf("pool %s not active", pool)
	}
	f.VolumeXML[v.Name] = x
	vol := &hypervisor.Volume{Name: v.Name, Path: "/pool/" + v.Name, Capacity: v.Capacity.Value}
	f.PoolVolumes[pool][v.Name] = vol
	if n, ok := f.Uploaded[fromName]; ok {
		f.Uploaded[v.Name] = n
	}
	c := *vol
	return &c, nil
}

func (f *Hypervisor) DeleteVolume(_ context.Context, pool, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("DeleteVolume %s/%s", pool, name); err != nil {
		return err
	}
	if _, ok := f.PoolVolumes[pool][name]; !ok {
		return notFound("volume", name)
	}
	delete(f.PoolVolumes[pool], name)
	return nil
}
