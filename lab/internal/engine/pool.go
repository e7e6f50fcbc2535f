package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/lab/labdir"
)

func (r *labRun) ownedPool(o *hypervisor.Object) error {
	if r.state.PoolUUID == o.UUID {
		return nil
	}
	return fmt.Errorf("storage pool %s exists but this lab did not create it (UUID %s, lab state has %q): remove it (`virsh pool-destroy %[1]s; virsh pool-undefine %[1]s`) or choose another lab name", o.Name, o.UUID, r.state.PoolUUID)
}

// poolWithUUID is the pool definition x with a UUID of its own (a new one
// unless x has one), and that UUID.
func poolWithUUID(x string) (string, string, error) {
	var p libvirtxml.StoragePool
	if err := p.Unmarshal(x); err != nil {
		return "", "", fmt.Errorf("pool definition: %w", err)
	}
	if p.UUID == "" {
		p.UUID = labdir.NewLabUUID()
	}
	out, err := p.Marshal()
	return out, p.UUID, err
}

func (r *labRun) ensurePool(ctx context.Context, want plan.NamedXML) (string, error) {
	var did []string
	o, err := r.hv.LookupPool(ctx, want.Name)
	switch {
	case errors.Is(err, hypervisor.ErrNotFound):
		x, id, err := poolWithUUID(want.XML)
		if err != nil {
			return "", err
		}
		// Recorded before the define, as the network's UUID is.
		if err := r.record(func(st *labdir.State) { st.PoolUUID = id }); err != nil {
			return "", err
		}
		o, err = r.hv.DefinePool(ctx, x)
		if o != nil {
			if rerr := r.record(func(st *labdir.State) { st.PoolUUID = o.UUID }); rerr != nil {
				return "", rerr
			}
		}
		if err != nil {
			return "", err
		}
		did = append(did, "defined")
		if err := r.hv.SetPoolAutostart(ctx, want.Name); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	default:
		if err := r.ownedPool(o); err != nil {
			return "", err
		}
	}
	if !o.Active {
		if err := r.hv.StartPool(ctx, want.Name); err != nil {
			return "", err
		}
		did = append(did, "started")
	}
	if len(did) > 0 && did[0] == "defined" {
		if err := r.checkNewPool(ctx, want.Name); err != nil {
			return "", err
		}
	}
	return strings.Join(did, ", "), nil
}

// checkNewPool refuses a pool just defined on a directory that already
// held files bootlab did not make for this lab (build checks first where
// it can run a command on the hypervisor's machine; libvirt's own listing
// is the check that holds everywhere). The pool is then undefined again,
// leaving its directory and every file as they were.
func (r *labRun) checkNewPool(ctx context.Context, name string) error {
	vols, err := r.hv.Volumes(ctx, name)
	if err != nil {
		return err
	}
	allowed := poolLeftovers(r.s)
	var foreign []string
	for _, v := range vols {
		if !allowed[v.Name] {
			foreign = append(foreign, v.Name)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	if err := r.hv.DestroyPool(ctx, name); err != nil {
		return err
	}
	if err := r.hv.UndefinePool(ctx, name); err != nil {
		return err
	}
	if err := r.record(func(st *labdir.State) { st.PoolUUID = "" }); err != nil {
		return err
	}
	return &labdir.NotOursError{Field: "storage.poolDir", Dir: r.s.Storage.PoolDir, Files: foreign}
}

// baseMarker records that the base volume was filled completely, so an
// upload cut short is redone and a complete one never repeated. It lives
// in the pool directory's lab-side twin: the lab directory.
func (r *labRun) baseMarker() string { return labdir.BaseImageMarker(r.s) }

func baseMarkerContent(s *spec.Spec, info *plan.ImageInfo) string {
	return fmt.Sprintf("%s %s %d\n", s.Storage.PoolDir, info.Format, info.FileSize)
}

func (r *labRun) ensureBaseVolume(ctx context.Context, want plan.VolumePlan, info *plan.ImageInfo) (string, error) {
	pool := r.s.PoolName()
	marker := baseMarkerContent(r.s, info)
	_, err := r.hv.LookupVolume(ctx, pool, want.Name)
	if err == nil {
		if b, rerr := os.ReadFile(r.baseMarker()); rerr == nil && string(b) == marker {
			return "", nil
		}
		if !r.caps.UploadsVolumes {
			return "", nil
		}
		// Present but not known complete: an interrupted upload. Redo it.
		r.log.Info("base volume incomplete, importing again", "volume", want.Name)
		if err := r.hv.DeleteVolume(ctx, pool, want.Name); err != nil {
			return "", err
		}
	} else if !errors.Is(err, hypervisor.ErrNotFound) {
		return "", err
	}
	how, err := r.fill(ctx, volumeFill{key: fmt.Sprintf("base %s %s %d", want.Name, r.s.Image.Path, info.FileSize),
		name: want.Name, xml: want.XML, source: r.s.Image.Path, size: info.FileSize, what: "base image (image.path)"})
	if err != nil {
		return "", err
	}
	if how == "created" {
		// The test driver cannot upload: the volume exists, empty.
		return "created (test driver: not uploaded)", nil
	}
	if r.plan != nil {
		return "planned", nil
	}
	if err := os.WriteFile(r.baseMarker(), []byte(marker), 0o644); err != nil {
		return "", fmt.Errorf("record base image import: %w", err)
	}
	if how == "copied" {
		return fmt.Sprintf("copied on the host (%d MiB)", info.FileSize>>20), nil
	}
	return fmt.Sprintf("uploaded %d MiB", info.FileSize>>20), nil
}

func (r *labRun) ensureOverlays(ctx context.Context, vols []plan.VolumePlan) (string, error) {
	pool := r.s.PoolName()
	n, err := parallel(ctx, vols, parallelism, func(ctx context.Context, v plan.VolumePlan) (bool, error) {
		_, err := r.hv.LookupVolume(ctx, pool, v.Name)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, hypervisor.ErrNotFound) {
			return false, err
		}
		_, err = r.hv.CreateVolume(ctx, pool, v.XML)
		return err == nil, err
	})
	if n > 0 {
		return fmt.Sprintf("%d created", n), err
	}
	return "", err
}

// ReadImageInfo reads a base image's format and sizes from its header.
func ReadImageInfo(path string) (*plan.ImageInfo, error) {
	f, fi, err := userfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("base image (image.path): %w", err)
	}
	defer f.Close()
	info := &plan.ImageInfo{Format: "raw", FileSize: fi.Size(), VirtualSize: uint64(fi.Size())}
	hdr := make([]byte, 32)
	if _, err := io.ReadFull(f, hdr); err == nil && string(hdr[:4]) == "QFI\xfb" {
		info.Format = "qcow2"
		info.VirtualSize = binary.BigEndian.Uint64(hdr[24:32])
	}
	return info, nil
}
