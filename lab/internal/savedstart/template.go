package savedstart

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/wire"
)

// format is bumped when what a template is changes (its definition, the
// agent's wait), so older images are not used.
const format = "bootlab-saved-start/1"

// templateMAC is the template's NIC's: locally administered, never a
// node's (lab MACs are 52:54:00:...). Its driver never binds in the
// template, so no frame is sent with it.
const templateMAC = "02:62:6c:00:00:01"

// shape is a node's definition with what is each node's own taken out
// (name, UUID, description, metadata, MACs, the network and disks' sources,
// console logs, fw_cfg entries, the boot files' directory): what two nodes
// must share for one's save image to start the other.
func shape(nodeXML string) (string, error) {
	var d libvirtxml.Domain
	if err := d.Unmarshal(nodeXML); err != nil {
		return "", fmt.Errorf("parse domain definition: %w", err)
	}
	d.Name, d.UUID, d.Description, d.Metadata, d.GenID = "", "", "", nil, nil
	d.SysInfo = withoutFWCfg(d.SysInfo)
	if d.OS != nil {
		d.OS.Kernel, d.OS.Initrd = filepath.Base(d.OS.Kernel), filepath.Base(d.OS.Initrd)
	}
	if d.Devices != nil {
		for i := range d.Devices.Interfaces {
			it := &d.Devices.Interfaces[i]
			it.MAC, it.Source, it.Target = nil, nil, nil
		}
		for i := range d.Devices.Disks {
			d.Devices.Disks[i].Source, d.Devices.Disks[i].BackingStore = nil, nil
		}
		for i := range d.Devices.Serials {
			d.Devices.Serials[i].Log, d.Devices.Serials[i].Source = nil, nil
		}
		for i := range d.Devices.Consoles {
			d.Devices.Consoles[i].Log, d.Devices.Consoles[i].Source = nil, nil
		}
	}
	return d.Marshal()
}

// Key names the save image of nodes of definition nodeXML made with the
// given QEMU and libvirt.
func Key(nodeXML, qemu, libvirt string) (string, error) {
	s, err := shape(nodeXML)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(format + "\n" + qemu + "\n" + libvirt + "\n" + s))
	return hex.EncodeToString(sum[:8]), nil
}

func withoutFWCfg(in []libvirtxml.DomainSysInfo) []libvirtxml.DomainSysInfo {
	var out []libvirtxml.DomainSysInfo
	for _, s := range in {
		if s.FWCfg == nil {
			out = append(out, s)
		}
	}
	return out
}

// templateXML is node's definition made the template of its shape: named
// name, with metadata (the lab's, so `lab down` finds a template left by
// an interrupted up), its own MAC, its console to logPath, and in fw_cfg
// only the entry that tells the agent to wait (no Ignition: the template
// is no node). It keeps the node's disk, which the template never reads
// (its driver loads after the restore), and the node must be off.
func templateXML(nodeXML, name, metadata, logPath string) (string, error) {
	var d libvirtxml.Domain
	if err := d.Unmarshal(nodeXML); err != nil {
		return "", fmt.Errorf("parse domain definition: %w", err)
	}
	d.Name, d.UUID, d.GenID = name, "", nil
	d.Description = "bootlab saved-start template: lab up saves its memory, which stops it"
	d.Metadata = &libvirtxml.DomainMetadata{XML: metadata}
	d.SysInfo = append(withoutFWCfg(d.SysInfo), libvirtxml.DomainSysInfo{FWCfg: &libvirtxml.DomainSysInfoFWCfg{
		Entry: []libvirtxml.DomainSysInfoEntry{{Name: wire.SavedStartEntry, Value: "1"}},
	}})
	if d.Devices == nil || len(d.Devices.Interfaces) != 1 || len(d.Devices.Serials) != 1 {
		return "", fmt.Errorf("domain %s has not the one NIC and one serial console of a probe node", d.Name)
	}
	d.Devices.Interfaces[0].MAC = &libvirtxml.DomainInterfaceMAC{Address: templateMAC}
	log := &libvirtxml.DomainChardevLog{File: logPath, Append: "off"}
	d.Devices.Serials[0].Log = log
	for i := range d.Devices.Consoles {
		d.Devices.Consoles[i].Log = log
	}
	return d.Marshal()
}
