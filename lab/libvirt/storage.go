package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

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
	var v golibvirt.StorageVol
	err = c.long(ctx, func(l *golibvirt.Libvirt) (err error) {
		v, err = l.StorageVolCreateXML(p, xml, 0)
		return err
	})
	if err != nil {
		return nil, wrap(err, "create volume %s in pool %s", xmlName(xml), pool)
	}
	return c.volume(v)
}

// CopyVolume creates a volume in pool from xml with the content of
// fromPool's volume fromName, copied on the host (libvirt's
// virStorageVolCreateXMLFrom).
func (c *Conn) CopyVolume(ctx context.Context, pool, xml, fromPool, fromName string) (*hypervisor.Volume, error) {
	p, err := c.pool(ctx, pool)
	if err != nil {
		return nil, err
	}
	src, err := c.vol(ctx, fromPool, fromName)
	if err != nil {
		return nil, err
	}
	c.logXML(ctx, "copy volume from "+fromPool+"/"+fromName, xml)
	var v golibvirt.StorageVol
	err = c.long(ctx, func(l *golibvirt.Libvirt) (err error) {
		v, err = l.StorageVolCreateXMLFrom(p, xml, src, 0)
		return err
	})
	if err != nil {
		return nil, wrap(err, "copy volume %s of pool %s as %s in pool %s", fromName, fromPool, xmlName(xml), pool)
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
	// go-libvirt's upload can block for good when the connection ends or
	// the context is cancelled mid-stream: its sender, having failed,
	// waits to hand over its error while its receiver, interrupted, waits
	// to tell the sender to stop. The call is then left behind (the
	// connection is gone, or the command is ending) and the upload fails
	// here, naming why.
	done := make(chan error, 1)
	go func() { done <- c.l.StorageVolUpload(v, ctxReader{ctx, r}, 0, uint64(size), 0) }()
	select {
	case err = <-done:
	case <-c.l.Disconnected():
		select {
		case err = <-done:
		case <-time.After(time.Second):
			err = errors.New("the connection to libvirt ended during the upload")
		}
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		return fmt.Errorf("upload to volume %s in pool %s: %w", name, pool, ctx.Err())
	}
	if err != nil {
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
