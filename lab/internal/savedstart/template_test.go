package savedstart

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/wire"
)

// nodeXML is a probe node's definition as libvirt 9.0 gives it for a save
// image (`virsh dumpxml --inactive --migratable`).
func nodeXML(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/node.xml")
	require.NoError(t, err)
	return string(data)
}

func edit(t *testing.T, x string, f func(d *libvirtxml.Domain)) string {
	t.Helper()
	var d libvirtxml.Domain
	require.NoError(t, d.Unmarshal(x))
	f(&d)
	out, err := d.Marshal()
	require.NoError(t, err)
	return out
}

func TestKeyIgnoresWhatIsEachNodesOwn(t *testing.T) {
	x := nodeXML(t)
	base, err := Key(x, "qemu", "9.0.0")
	require.NoError(t, err)
	other := edit(t, x, func(d *libvirtxml.Domain) {
		d.Name, d.UUID, d.Description = "bootlab-other-bootstrap", "2b3c8f4e-0d7a-4c43-9a51-0c5b6b1f0a11", "another lab"
		d.Metadata.XML = `<lab xmlns="https://bootlab.dev/xmlns/lab/v1" name="other" node="bootstrap"/>`
		d.SysInfo[0].FWCfg.Entry[0].File = "/var/lib/other/pool/boot-bootstrap-1.ign"
		d.OS.Kernel = "/var/lib/other/pool/boot-kernel-dad21c4906b80c41"
		d.OS.Initrd = "/var/lib/other/pool/boot-initrd-5836a497465e5725"
		d.Devices.Interfaces[0].MAC.Address = "52:54:00:11:22:33"
		d.Devices.Interfaces[0].Source.Network.Network = "bootlab-other"
		d.Devices.Disks[0].Source.Volume.Pool = "bootlab-other"
		d.Devices.Serials[0].Log.File = "/var/lib/other/console/bootstrap.log"
	})
	k, err := Key(other, "qemu", "9.0.0")
	require.NoError(t, err)
	assert.Equal(t, base, k, "another lab's node of the same shape shares the image")

	for name, changed := range map[string]string{
		"memory":  edit(t, x, func(d *libvirtxml.Domain) { d.Memory.Value *= 2; d.CurrentMemory.Value *= 2 }),
		"initrd":  edit(t, x, func(d *libvirtxml.Domain) { d.OS.Initrd = "/tmp/ck2/pool/boot-initrd-0000000000000000" }),
		"cmdline": edit(t, x, func(d *libvirtxml.Domain) { d.OS.Cmdline += " debug" }),
		"a device's address": edit(t, x, func(d *libvirtxml.Domain) {
			d.Devices.Interfaces[0].Address.PCI.Bus = d.Devices.Disks[0].Address.PCI.Bus
		}),
		"a second disk": edit(t, x, func(d *libvirtxml.Domain) { d.Devices.Disks = append(d.Devices.Disks, d.Devices.Disks[0]) }),
	} {
		k, err := Key(changed, "qemu", "9.0.0")
		require.NoError(t, err, name)
		assert.NotEqual(t, base, k, "a node with another %s needs another image", name)
	}
	k1, _ := Key(x, "qemu 2", "9.0.0")
	k2, _ := Key(x, "qemu", "10.0.0")
	assert.NotEqual(t, base, k1, "another QEMU")
	assert.NotEqual(t, base, k2, "another libvirt")

	_, err = Key("<domain", "qemu", "9.0.0")
	assert.Error(t, err)
}

func TestTemplateIsTheNodesShapeWithoutItsIdentity(t *testing.T) {
	x := nodeXML(t)
	md := `<lab xmlns="https://bootlab.dev/xmlns/lab/v1" name="ck2" node="saved_start" uuid="u"></lab>`
	tx, err := templateXML(x, "bootlab-ck2-saved_start", md, "/labs/ck2/console/saved_start.log")
	require.NoError(t, err)

	ts, err := shape(tx)
	require.NoError(t, err)
	ns, err := shape(x)
	require.NoError(t, err)
	assert.Equal(t, ns, ts, "the template has the node's shape, so its image starts the node")

	var d libvirtxml.Domain
	require.NoError(t, d.Unmarshal(tx))
	assert.Equal(t, "bootlab-ck2-saved_start", d.Name)
	assert.Empty(t, d.UUID, "libvirt gives the template its own UUID")
	assert.Contains(t, d.Metadata.XML, `node="saved_start"`)
	assert.Equal(t, templateMAC, d.Devices.Interfaces[0].MAC.Address)
	assert.Equal(t, "/labs/ck2/console/saved_start.log", d.Devices.Serials[0].Log.File)
	assert.Equal(t, "off", d.Devices.Serials[0].Log.Append, "a template's log starts empty")
	var entries []string
	for _, si := range d.SysInfo {
		if si.FWCfg != nil {
			for _, e := range si.FWCfg.Entry {
				entries = append(entries, e.Name+"="+e.Value+e.File)
			}
		}
	}
	assert.Equal(t, []string{wire.SavedStartEntry + "=1"}, entries, "no Ignition: the template is no node")
	assert.False(t, strings.Contains(tx, ".ign"), "the node's Ignition file is not named")

	_, err = templateXML(edit(t, x, func(d *libvirtxml.Domain) { d.Devices.Interfaces = nil }), "t", md, "l")
	assert.ErrorContains(t, err, "one NIC")
}
