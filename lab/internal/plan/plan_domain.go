package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bootlab/bootlab/lab/spec"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/labdir"
)

func domainPlan(s *spec.Spec, n spec.Node, accel spec.Accelerator, extra Metadata, boot bootPaths) (DomainPlan, error) {
	dtype := "qemu"
	if accel == spec.AccelKVM {
		dtype = "kvm"
	}
	d := &libvirtxml.Domain{
		Type:        dtype,
		Name:        s.DomainName(n),
		Description: fmt.Sprintf("bootlab lab %s: %s %s", s.Name, n.Role, s.FQDN(n)),
		Memory:      &libvirtxml.DomainMemory{Value: uint(n.MemoryMiB), Unit: "MiB"},
		VCPU:        &libvirtxml.DomainVCPU{Placement: "static", Value: uint(n.VCPUs)},
		OS: &libvirtxml.DomainOS{
			Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"},
		},
		Features: &libvirtxml.DomainFeatureList{
			ACPI: &libvirtxml.DomainFeature{},
			APIC: &libvirtxml.DomainFeatureAPIC{},
		},
		OnPoweroff: "destroy",
		OnReboot:   "restart",
		OnCrash:    "destroy",
		Devices:    domainDevices(s, n),
	}
	if ign := boot.ignition[n.Name]; ign != "" {
		d.SysInfo = []libvirtxml.DomainSysInfo{{FWCfg: &libvirtxml.DomainSysInfoFWCfg{
			Entry: []libvirtxml.DomainSysInfoEntry{{Name: "opt/com.coreos/config", File: ign}},
		}}}
	}
	if (n.Role == spec.RoleBootstrap || n.Role == spec.RoleMaster) && boot.kubeVolume != "" {
		d.Devices.Disks = append(d.Devices.Disks, kubeVolumeDisk(s, boot.kubeVolume))
		// A rehearsal node keeps its state on its own disk, which the
		// agent knows by this serial (wire.NodeDiskSerial): no other disk
		// is ever given a file system.
		d.Devices.Disks[0].Serial = wire.NodeDiskSerial
	}
	d.CPU = domainCPU(s, accel)
	bootFrom(d.OS, s, n, boot)
	md := Metadata{Name: s.Name, Role: n.Role, Node: n.Name, LabUUID: extra.LabUUID, Ignition: extra.Ignition}
	return signedDomain(d, n, md)
}

// x8664v2Features are the CPU features of the x86-64-v2 level beyond
// QEMU's qemu64 model, the level RHEL 9, and so RHCOS since OpenShift 4.13,
// is built for: its glibc stops every program ("CPU does not support
// x86-64-v2") on a CPU without them. cx16 and lahf_lm, the rest of the
// level, are qemu64's already; they are required too, so the list is the
// level's whole.
var x8664v2Features = []string{"cx16", "lahf_lm", "popcnt", "sse4.1", "sse4.2", "ssse3"}

// domainCPU is the virtual CPU of a lab's domains. Under KVM it is the
// host's (host-passthrough). Under TCG a node that boots its disk (RHCOS)
// gets qemu64 with the x86-64-v2 features, which TCG emulates: without
// them RHCOS does not get past its initramfs. The model stays qemu64 (an
// AMD vendor: the guest kernel turns on no Meltdown page-table isolation,
// costly under TCG) and offers no AES-NI (with it Go's TLS picks AES-GCM,
// slower emulated than ChaCha20 in software: measured in docs/benchmarks.md).
// A probe or rehearsal node (bootlab's kernel and Debian's programs) keeps
// libvirt's default, qemu64, which measured no slower than any other.
func domainCPU(s *spec.Spec, accel spec.Accelerator) *libvirtxml.DomainCPU {
	if accel == spec.AccelKVM {
		return &libvirtxml.DomainCPU{Mode: "host-passthrough"}
	}
	if s.Image.Kernel != "" {
		return nil
	}
	cpu := &libvirtxml.DomainCPU{Mode: "custom", Match: "exact",
		Model: &libvirtxml.DomainCPUModel{Fallback: "forbid", Value: "qemu64"}}
	for _, f := range x8664v2Features {
		cpu.Features = append(cpu.Features, libvirtxml.DomainCPUFeature{Policy: "require", Name: f})
	}
	return cpu
}

// domainDevices are node n's disk (its volume), its NIC on the lab
// network, its serial console (logged for `lab console`), an RNG and no
// balloon.
func domainDevices(s *spec.Spec, n spec.Node) *libvirtxml.DomainDeviceList {
	d := &libvirtxml.DomainDeviceList{
		Disks: []libvirtxml.DomainDisk{{
			Device: "disk",
			Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
			Source: &libvirtxml.DomainDiskSource{Volume: &libvirtxml.DomainDiskSourceVolume{
				Pool: s.PoolName(), Volume: s.VolumeName(n),
			}},
			Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"},
		}},
		Interfaces: []libvirtxml.DomainInterface{{
			MAC:    &libvirtxml.DomainInterfaceMAC{Address: n.MAC},
			Source: &libvirtxml.DomainInterfaceSource{Network: &libvirtxml.DomainInterfaceSourceNetwork{Network: s.NetworkName()}},
			Model:  &libvirtxml.DomainInterfaceModel{Type: "virtio"},
		}},
		// The serial port is a pty (for `virsh console`) whose output
		// virtlogd also appends to the console log (for `lab console`).
		Serials: []libvirtxml.DomainSerial{{
			Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
			Target: &libvirtxml.DomainSerialTarget{Port: uintPtr(0)},
			Log:    &libvirtxml.DomainChardevLog{File: hostPath(s, labdir.ConsoleLog(s, n)), Append: "on"},
		}},
		Consoles: []libvirtxml.DomainConsole{{
			Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
			Target: &libvirtxml.DomainConsoleTarget{Type: "serial", Port: uintPtr(0)},
		}},
		RNGs: []libvirtxml.DomainRNG{{
			Model:   "virtio",
			Backend: &libvirtxml.DomainRNGBackend{Random: &libvirtxml.DomainRNGBackendRandom{Device: "/dev/urandom"}},
		}},
		MemBalloon: &libvirtxml.DomainMemBalloon{Model: "none"},
	}
	if s.Image.Kernel != "" {
		// A probe or rehearsal node (bootlab's own kernel and initramfs) has
		// no USB device: without libvirt's default xHCI controller its
		// kernel has none to probe, 0.15 s of a TCG boot measured alone.
		d.Controllers = []libvirtxml.DomainController{{Type: "usb", Model: "none"}}
	}
	return d
}

// bootFrom says what node n boots: the lab image's kernel and initrd (a
// probe lab's) with its command line, or its disk.
func bootFrom(o *libvirtxml.DomainOS, s *spec.Spec, n spec.Node, boot bootPaths) {
	if s.Image.Kernel != "" {
		o.Kernel = boot.kernel
		o.Initrd = boot.initrd
		// Masters of a rehearsal lab run real etcd too (they join the
		// bootstrap's member after stage 12): they boot the same initrd.
		if (n.Role == spec.RoleBootstrap || n.Role == spec.RoleMaster) && boot.rehearsalInitrd != "" {
			o.Initrd = boot.rehearsalInitrd
		}
		o.Cmdline = s.Image.Cmdline
	} else {
		o.BootDevices = []libvirtxml.DomainBootDevice{{Dev: "hd"}}
	}
}

// signedDomain marshals d with md in its metadata, md.Plan being the
// digest of d as marshalled without it, so a later up can tell a domain
// whose definition changed.
func signedDomain(d *libvirtxml.Domain, n spec.Node, md Metadata) (DomainPlan, error) {
	setMeta := func() error {
		b, err := xml.Marshal(md)
		if err != nil {
			return err
		}
		d.Metadata = &libvirtxml.DomainMetadata{XML: string(b)}
		return nil
	}
	if err := setMeta(); err != nil {
		return DomainPlan{}, fmt.Errorf("plan domain %s metadata: %w", d.Name, err)
	}
	unsigned, err := d.Marshal()
	if err != nil {
		return DomainPlan{}, fmt.Errorf("plan domain %s: %w", d.Name, err)
	}
	sum := sha256.Sum256([]byte(unsigned))
	md.Plan = hex.EncodeToString(sum[:8])
	if err := setMeta(); err != nil {
		return DomainPlan{}, fmt.Errorf("plan domain %s metadata: %w", d.Name, err)
	}
	x, err := d.Marshal()
	if err != nil {
		return DomainPlan{}, fmt.Errorf("plan domain %s: %w", d.Name, err)
	}
	return DomainPlan{Node: n, Name: d.Name, XML: x, Digest: md.Plan}, nil
}

// kubeVolumeDisk attaches a rehearsal lab's Kubernetes volume read-only:
// every node shares the one file (qemu opens it read-only with a shared
// lock), and no node can change what the others run. The agent finds it
// by its serial.
func kubeVolumeDisk(s *spec.Spec, volume string) libvirtxml.DomainDisk {
	return libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
		Source: &libvirtxml.DomainDiskSource{Volume: &libvirtxml.DomainDiskSourceVolume{
			Pool: s.PoolName(), Volume: volume,
		}},
		Target:   &libvirtxml.DomainDiskTarget{Dev: "vdb", Bus: "virtio"},
		ReadOnly: &libvirtxml.DomainDiskReadOnly{},
		Serial:   wire.KubeVolumeSerial,
	}
}

// ParseLabMetadata returns the bootlab metadata of a domain definition, or
// nil when the domain is not bootlab's.
func ParseLabMetadata(domainXML string) *Metadata {
	var d libvirtxml.Domain
	if err := d.Unmarshal(domainXML); err != nil || d.Metadata == nil {
		return nil
	}
	if !strings.Contains(d.Metadata.XML, MetadataNamespace) {
		return nil
	}
	dec := xml.NewDecoder(strings.NewReader("<m>" + d.Metadata.XML + "</m>"))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Space != MetadataNamespace || se.Name.Local != "lab" {
			continue
		}
		var md Metadata
		if err := dec.DecodeElement(&md, &se); err != nil {
			return nil
		}
		return &md
	}
}

func uintPtr(u uint) *uint { return &u }

// hostPath is a path on the hypervisor's machine for libvirt, which resolves
// nothing relative: a local lab directory given relative is made absolute
// here; a remote one is used as written (libvirt.hostDir must be absolute).
func hostPath(s *spec.Spec, p string) string {
	if s.Remote() {
		return p
	}
	return AbsPath(p)
}

// AbsPath makes a path absolute for libvirt, which resolves nothing relative.
func AbsPath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
