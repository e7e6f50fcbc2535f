package plan

import (
	"encoding/xml"
	"fmt"
	"path"
	"path/filepath"

	"github.com/bootlab/bootlab/lab/spec"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/labdir"
)

// MetadataNamespace is the XML namespace of bootlab's domain metadata.
const MetadataNamespace = "https://bootlab.dev/xmlns/lab/v1"

// Metadata is the <bootlab:lab> element in every bootlab domain's
// <metadata>: how `down` and `status` recognise a domain as theirs.
type Metadata struct {
	XMLName xml.Name  `xml:"https://bootlab.dev/xmlns/lab/v1 lab"`
	Name    string    `xml:"name,attr"`
	Role    spec.Role `xml:"role,attr"`
	Node    string    `xml:"node,attr"`
	// Plan is a digest of the domain definition bootlab wrote, so a second
	// `up` can tell an unchanged domain from one whose spec changed.
	Plan string `xml:"plan,attr,omitempty"`
	// LabUUID is the lab's identity (State.UUID): a lab of the same name
	// with another lab directory never takes this domain for its own.
	LabUUID string `xml:"uuid,attr,omitempty"`
	// Ignition is the digest of the Ignition file the node boots with.
	Ignition string `xml:"ignition,attr,omitempty"`
}

// ImageInfo describes the base image file, read by Up before planning.
type ImageInfo struct {
	// Format is "qcow2" or "raw".
	Format string
	// FileSize is the size of the file in bytes (what is uploaded).
	FileSize int64
	// VirtualSize is the guest-visible disk size in bytes.
	VirtualSize uint64
}

// PlanInput is what a plan needs beyond the spec.
type PlanInput struct {
	// Accelerator is kvm or tcg (already chosen).
	Accelerator spec.Accelerator
	// Base describes spec.Image.Path; nil when the spec has no disk image
	// (the nodes then get blank overlays).
	Base *ImageInfo
	// LabUUID is recorded in every domain's metadata.
	LabUUID string
	// Ignition is a digest of each node's Ignition file (by node name): fw_cfg
	// names the file, not its content, so a node whose served config changed
	// (a probe lab that gained a node) must be told apart by this.
	Ignition map[string]string
	// Boot are the files the VMs read at start (ReadBootFiles): they are
	// uploaded into the lab's pool and the domains name them there.
	Boot BootFiles
	// QEMUOwner owns the uploaded Ignition volumes (0600), so qemu, which
	// runs as its own user on the hypervisor, can read them; nil when qemu
	// runs as root or the user is unknown.
	QEMUOwner *VolumeOwner
}

// VolumeOwner is a numeric owner on the hypervisor's machine.
type VolumeOwner struct{ UID, GID int }

// BootFile is a file the VMs read at start, on this machine.
type BootFile struct {
	// Source is the file here; Size its length.
	Source string
	Size   int64
	// Digest is the start of its sha256 (hex): the volume's name carries it,
	// so a volume of that name holds that content.
	Digest string
	// VirtualSize is the disk size a qcow2 file gives the guest; 0 for a
	// file the VM reads as it is (a kernel, an initrd, Ignition).
	VirtualSize uint64
}

// BootFiles are what the nodes boot: a kernel and initrds for direct boot,
// the Kubernetes volume of a rehearsal lab (a qcow2 disk attached
// read-only), and each node's Ignition (by node name) passed through fw_cfg.
type BootFiles struct {
	Kernel, Initrd, RehearsalInitrd *BootFile
	KubeVolume                      *BootFile
	Ignition                        map[string]*BootFile
}

// BootVolume is a boot file's volume in the lab pool.
type BootVolume struct {
	VolumePlan
	File BootFile
}

// BootVolumePrefix starts the name of every boot file volume, so an `up`
// can tell the ones a changed file left behind.
const BootVolumePrefix = "boot-"

// Plan is every libvirt object a lab needs, as XML, in creation order.
type Plan struct {
	Network    NamedXML
	Pool       NamedXML
	BaseVolume *VolumePlan
	// BootVolumes hold the kernel, initrds and Ignition files, one per
	// distinct content.
	BootVolumes []BootVolume
	Overlays    []VolumePlan
	Domains     []DomainPlan
}

// NamedXML is one object's name and definition.
type NamedXML struct {
	Name string
	XML  string
}

// VolumePlan is one volume of the lab pool.
type VolumePlan struct {
	Name string
	XML  string
	// Node is empty for the base volume.
	Node string
}

// DomainPlan is one node's domain.
type DomainPlan struct {
	Node spec.Node
	Name string
	XML  string
	// Digest is the plan digest recorded in the domain's metadata.
	Digest string
}

// WithoutRole drops the domains and overlays of role's nodes: after `lab
// pivot` destroyed a real lab's bootstrap, a later `up` must not bring it back.
func (p *Plan) WithoutRole(role spec.Role) *Plan {
	out := *p
	out.Domains, out.Overlays = nil, nil
	gone := map[string]bool{}
	for _, d := range p.Domains {
		if d.Node.Role == role {
			gone[d.Node.Name] = true
			continue
		}
		out.Domains = append(out.Domains, d)
	}
	for _, v := range p.Overlays {
		if !gone[v.Node] {
			out.Overlays = append(out.Overlays, v)
		}
	}
	return &out
}

// NewPlan computes the libvirt objects of spec s. It is pure: the same spec
// and input always give the same XML.
func NewPlan(s *spec.Spec, in PlanInput) (*Plan, error) {
	if in.Accelerator != spec.AccelKVM && in.Accelerator != spec.AccelTCG {
		return nil, fmt.Errorf("plan: accelerator must be kvm or tcg, not %q", in.Accelerator)
	}
	p := &Plan{}
	var err error
	p.Network.Name = s.NetworkName()
	if p.Network.XML, err = networkXML(s); err != nil {
		return nil, err
	}
	p.Pool.Name = s.PoolName()
	if p.Pool.XML, err = poolXML(s); err != nil {
		return nil, err
	}
	if in.Base != nil {
		v := &libvirtxml.StorageVolume{
			Name:     s.BaseVolumeName(),
			Capacity: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: uint64(in.Base.FileSize)},
			Target:   &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: in.Base.Format}},
		}
		if in.Base.Format == "qcow2" {
			v.Capacity.Value = in.Base.VirtualSize
		}
		x, err := v.Marshal()
		if err != nil {
			return nil, fmt.Errorf("plan base volume: %w", err)
		}
		p.BaseVolume = &VolumePlan{Name: v.Name, XML: x}
	}
	for _, n := range s.Nodes {
		capacity := uint64(n.DiskGiB) << 30
		v := &libvirtxml.StorageVolume{
			Name:     s.VolumeName(n),
			Capacity: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: capacity},
			Target:   &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "qcow2"}},
		}
		if in.Base != nil {
			if in.Base.VirtualSize > capacity {
				v.Capacity.Value = in.Base.VirtualSize
			}
			v.BackingStore = &libvirtxml.StorageVolumeBackingStore{
				Path:   filepath.Join(s.Storage.PoolDir, s.BaseVolumeName()),
				Format: &libvirtxml.StorageVolumeTargetFormat{Type: in.Base.Format},
			}
		}
		x, err := v.Marshal()
		if err != nil {
			return nil, fmt.Errorf("plan volume of node %s: %w", n.Name, err)
		}
		p.Overlays = append(p.Overlays, VolumePlan{Name: v.Name, XML: x, Node: n.Name})
	}
	boot, err := p.planBootVolumes(s, in)
	if err != nil {
		return nil, err
	}
	for _, n := range s.Nodes {
		d, err := domainPlan(s, n, in.Accelerator, Metadata{LabUUID: in.LabUUID, Ignition: in.Ignition[n.Name]}, boot)
		if err != nil {
			return nil, err
		}
		p.Domains = append(p.Domains, d)
	}
	return p, nil
}

// bootPaths are where a node's boot files are on the hypervisor: volume
// paths in the lab pool ("" for a file the node does not get).
type bootPaths struct {
	kernel, initrd, rehearsalInitrd string
	// kubeVolume is the name of the Kubernetes volume in the lab pool.
	kubeVolume string
	ignition   map[string]string
}

// planBootVolumes adds a volume per distinct boot file and returns where
// each lands. A spec that names a kernel or initrd needs it in in.Boot.
func (p *Plan) planBootVolumes(s *spec.Spec, in PlanInput) (bootPaths, error) {
	out := bootPaths{ignition: map[string]string{}}
	seen := map[string]bool{}
	add := func(field, kind, src string, f *BootFile, ext string, owner *VolumeOwner, mode string) (string, error) {
		if src == "" {
			return "", nil
		}
		if f == nil {
			return "", fmt.Errorf("plan: %s %s was not read (ReadBootFiles)", field, src)
		}
		name := BootVolumePrefix + kind + "-" + f.Digest + ext
		if !seen[name] {
			seen[name] = true
			perms := &libvirtxml.StorageVolumeTargetPermissions{Mode: mode}
			if owner != nil {
				perms.Owner, perms.Group = fmt.Sprint(owner.UID), fmt.Sprint(owner.GID)
			}
			v := &libvirtxml.StorageVolume{
				Name:     name,
				Capacity: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: uint64(f.Size)},
				Target: &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "raw"},
					Permissions: perms},
			}
			if f.VirtualSize > 0 { // a disk image, uploaded as the base image is
				v.Capacity.Value = f.VirtualSize
				v.Target.Format.Type = "qcow2"
			}
			x, err := v.Marshal()
			if err != nil {
				return "", fmt.Errorf("plan boot volume %s: %w", name, err)
			}
			p.BootVolumes = append(p.BootVolumes, BootVolume{VolumePlan: VolumePlan{Name: name, XML: x}, File: *f})
		}
		return path.Join(s.Storage.PoolDir, name), nil
	}
	var err error
	if out.kernel, err = add("image.kernel", "kernel", s.Image.Kernel, in.Boot.Kernel, "", nil, "0644"); err != nil {
		return out, err
	}
	if s.Image.Kernel != "" {
		if out.initrd, err = add("image.initrd", "initrd", s.Image.Initrd, in.Boot.Initrd, "", nil, "0644"); err != nil {
			return out, err
		}
		if s.Rehearsal() {
			if out.rehearsalInitrd, err = add("image.rehearsalInitrd", "initrd", s.Image.RehearsalInitrd, in.Boot.RehearsalInitrd, "", nil, "0644"); err != nil {
				return out, err
			}
		}
	}
	if s.Rehearsal() && s.Image.KubeVolume != "" {
		p, err := add("image.kubeVolume", "kube", s.Image.KubeVolume, in.Boot.KubeVolume, ".qcow2", nil, "0644")
		if err != nil {
			return out, err
		}
		out.kubeVolume = path.Base(p)
	}
	for _, n := range s.Nodes {
		f := in.Boot.Ignition[n.Name]
		if f == nil {
			continue // no Ignition written (yet): the node gets no fw_cfg entry
		}
		if out.ignition[n.Name], err = add("Ignition of node "+n.Name, n.Name, labdir.Ignition(s, n), f, ".ign", in.QEMUOwner, "0600"); err != nil {
			return out, err
		}
	}
	return out, nil
}
