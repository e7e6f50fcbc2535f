package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/labdir"
)

// The -update flag (internal/testutil) rewrites these goldens:
// go test ./lab/internal/engine -run Plan -update

func xmlUnmarshalString(x string, v any) error { return xml.Unmarshal([]byte(x), v) }

func planSpecs() map[string]struct {
	spec *spec.Spec
	in   PlanInput
} {
	probe := &spec.Spec{Name: "probe1", Profile: spec.ProfileProbe, LabDir: "/var/lib/bootlab/labs/probe1",
		Topology: spec.Topology{Masters: 2, Workers: 1},
		Network:  spec.Network{CIDR: "10.77.0.0/24"},
		Image:    spec.Image{Kernel: "/var/cache/bootlab/probe/vmlinuz", Initrd: "/var/cache/bootlab/probe/initrd.img", Cmdline: "console=ttyS0 quiet"}}
	probe.Defaults()
	ocp := &spec.Spec{Name: "ocp1", Profile: spec.ProfileOpenShift, LabDir: "/var/lib/bootlab/labs/ocp1",
		Topology: spec.Topology{Masters: 3, Workers: 2},
		Network:  spec.Network{CIDR: "192.168.130.0/24", IngressAddress: "192.168.130.2"},
		Image:    spec.Image{Path: "/var/cache/bootlab/rhcos.qcow2"}}
	ocp.Defaults()
	return map[string]struct {
		spec *spec.Spec
		in   PlanInput
	}{
		"probe-tcg": {probe, PlanInput{Accelerator: spec.AccelTCG, Boot: fakeBoot(probe)}},
		"openshift-kvm": {ocp, PlanInput{Accelerator: spec.AccelKVM,
			Base: &ImageInfo{Format: "qcow2", FileSize: 1 << 30, VirtualSize: 16 << 30},
			Boot: fakeBoot(ocp), QEMUOwner: &VolumeOwner{UID: 64055, GID: 108}}},
		// The same lab on a host without KVM: RHCOS under TCG needs an
		// x86-64-v2 CPU (domainCPU).
		"openshift-tcg": {ocp, PlanInput{Accelerator: spec.AccelTCG,
			Base: &ImageInfo{Format: "qcow2", FileSize: 1 << 30, VirtualSize: 16 << 30},
			Boot: fakeBoot(ocp), QEMUOwner: &VolumeOwner{UID: 64055, GID: 108}}},
	}
}

// fakeBoot stands in for ReadBootFiles: every file the spec names, with
// its path's digest, and an Ignition file for every node.
func fakeBoot(s *spec.Spec) BootFiles {
	f := func(p string) *BootFile {
		if p == "" {
			return nil
		}
		sum := sha256.Sum256([]byte(p))
		return &BootFile{Source: p, Size: int64(len(p)) * 1000, Digest: hex.EncodeToString(sum[:])[:16]}
	}
	b := BootFiles{Kernel: f(s.Image.Kernel), Initrd: f(s.Image.Initrd), RehearsalInitrd: f(s.Image.RehearsalInitrd), Ignition: map[string]*BootFile{}}
	if b.KubeVolume = f(s.Image.KubeVolume); b.KubeVolume != nil {
		b.KubeVolume.VirtualSize = 136 << 20
	}
	for _, n := range s.Nodes {
		b.Ignition[n.Name] = f(labdir.Ignition(s, n))
	}
	return b
}

// golden compares one XML document of a plan with its golden (a file ends
// with a newline, the XML does not).
func golden(t *testing.T, path, got string) {
	t.Helper()
	testutil.Golden(t, path, []byte(got+"\n"))
}

func TestPlanGoldens(t *testing.T) {
	t.Parallel()
	for name, tc := range planSpecs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := NewPlan(tc.spec, tc.in)
			require.NoError(t, err)
			dir := filepath.Join("..", "..", "..", "testdata", "plan", name)
			golden(t, filepath.Join(dir, "network.xml"), p.Network.XML)
			golden(t, filepath.Join(dir, "pool.xml"), p.Pool.XML)
			if p.BaseVolume != nil {
				golden(t, filepath.Join(dir, "volume-base.xml"), p.BaseVolume.XML)
			}
			for _, v := range p.Overlays {
				golden(t, filepath.Join(dir, "volume-"+v.Node+".xml"), v.XML)
			}
			for _, d := range p.Domains {
				golden(t, filepath.Join(dir, "domain-"+d.Node.Name+".xml"), d.XML)
			}
			var boot []string
			for _, v := range p.BootVolumes {
				boot = append(boot, v.XML)
			}
			golden(t, filepath.Join(dir, "boot-volumes.xml"), strings.Join(boot, "\n"))
		})
	}
}

func bootVolumePath(s *spec.Spec, kind string, f *BootFile) string {
	return path.Join(s.Storage.PoolDir, BootVolumePrefix+kind+"-"+f.Digest)
}

// Every file a VM reads is a volume of the lab pool, named by its content:
// the kernel and initrd once for all nodes, an Ignition per node.
func TestPlanBootFilesAreVolumes(t *testing.T) {
	t.Parallel()
	tc := planSpecs()["probe-tcg"]
	s := tc.spec
	p, err := NewPlan(s, tc.in)
	require.NoError(t, err)
	var names []string
	for _, v := range p.BootVolumes {
		names = append(names, v.Name)
		assert.True(t, strings.HasPrefix(v.Name, BootVolumePrefix), v.Name)
	}
	assert.Len(t, names, 2+len(s.Nodes), "kernel, initrd, one Ignition per node: %v", names)
	for _, d := range p.Domains {
		var dom struct {
			Kernel string `xml:"os>kernel"`
			Initrd string `xml:"os>initrd"`
		}
		require.NoError(t, xmlUnmarshalString(d.XML, &dom))
		assert.Equal(t, bootVolumePath(s, "kernel", tc.in.Boot.Kernel), dom.Kernel)
		assert.Equal(t, bootVolumePath(s, "initrd", tc.in.Boot.Initrd), dom.Initrd)
		assert.Contains(t, d.XML, `file="`+bootVolumePath(s, d.Node.Name, tc.in.Boot.Ignition[d.Node.Name])+`.ign"`)
	}

	// A node without Ignition gets no fw_cfg entry; a kernel not read is an error.
	in := tc.in
	in.Boot.Ignition = nil
	p, err = NewPlan(s, in)
	require.NoError(t, err)
	assert.NotContains(t, p.Domains[0].XML, "opt/com.coreos/config")
	in.Boot.Kernel = nil
	_, err = NewPlan(s, in)
	assert.ErrorContains(t, err, "image.kernel")
}

// No domain of a lab on a remote hypervisor names a path of this machine:
// not the lab directory, not the image cache, not the working directory.
func TestPlanRemoteLabNamesNoWorkstationPath(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	require.NoError(t, err)
	for name, tc := range planSpecs() {
		s := *tc.spec
		s.Libvirt.URI = "qemu+ssh://root@classroom/system"
		s.LabDir = "/home/trainer/.local/share/bootlab/labs/" + s.Name
		s.Image.Kernel = strings.Replace(s.Image.Kernel, "/var/cache/bootlab", "/home/trainer/.cache/bootlab", 1)
		s.Image.Initrd = strings.Replace(s.Image.Initrd, "/var/cache/bootlab", "/home/trainer/.cache/bootlab", 1)
		s.Image.Path = strings.Replace(s.Image.Path, "/var/cache/bootlab", "/home/trainer/.cache/bootlab", 1)
		in := tc.in
		in.Boot = fakeBoot(&s)
		p, err := NewPlan(&s, in)
		require.NoError(t, err, name)
		require.NotEmpty(t, p.Domains)
		for _, d := range p.Domains {
			for _, prefix := range []string{s.LabDir, "/home/trainer", wd} {
				assert.NotContains(t, d.XML, prefix, "%s: domain %s names a workstation path", name, d.Name)
			}
			assert.Contains(t, d.XML, "/var/lib/bootlab/labs/"+s.Name+"/console/", "%s: the console log is on the hypervisor", name)
		}
		for _, v := range p.Overlays {
			assert.NotContains(t, v.XML, "/home/trainer", name)
		}
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	t.Parallel()
	for name, tc := range planSpecs() {
		a, err := NewPlan(tc.spec, tc.in)
		require.NoError(t, err)
		b, err := NewPlan(tc.spec, tc.in)
		require.NoError(t, err)
		assert.Equal(t, a, b, name)
	}
}

func TestPlanMetadataRoundTrip(t *testing.T) {
	t.Parallel()
	tc := planSpecs()["openshift-kvm"]
	p, err := NewPlan(tc.spec, tc.in)
	require.NoError(t, err)
	for _, d := range p.Domains {
		md := ParseLabMetadata(d.XML)
		require.NotNil(t, md, d.Name)
		assert.Equal(t, Metadata{XMLName: md.XMLName, Name: "ocp1", Role: d.Node.Role, Node: d.Node.Name, Plan: d.Digest}, *md)
	}
	assert.Nil(t, ParseLabMetadata(`<domain type="qemu"><name>other</name></domain>`))
	assert.Nil(t, ParseLabMetadata(`<domain type="qemu"><name>x</name><metadata><lab xmlns="https://example.com/other" name="ocp1"/></metadata></domain>`))
}

func TestPlanDigestFollowsSpec(t *testing.T) {
	t.Parallel()
	tc := planSpecs()["probe-tcg"]
	a, err := NewPlan(tc.spec, tc.in)
	require.NoError(t, err)
	s2 := *tc.spec
	s2.Nodes = append([]spec.Node(nil), tc.spec.Nodes...)
	s2.Nodes[1].MemoryMiB = 512
	b, err := NewPlan(&s2, tc.in)
	require.NoError(t, err)
	assert.Equal(t, a.Domains[0].Digest, b.Domains[0].Digest, "an untouched node keeps its digest")
	assert.NotEqual(t, a.Domains[1].Digest, b.Domains[1].Digest, "a resized node gets a new digest")
}

func TestPlanNATOnlyInNATMode(t *testing.T) {
	t.Parallel()
	for name, tc := range planSpecs() {
		p, err := NewPlan(tc.spec, tc.in)
		require.NoError(t, err)
		if tc.spec.Network.Mode == spec.NetworkNAT {
			assert.Contains(t, p.Network.XML, `<forward mode="nat">`, name)
		} else {
			assert.NotContains(t, p.Network.XML, `<forward`, name)
		}
	}
}

func TestPlanRejectsUnchosenAccelerator(t *testing.T) {
	t.Parallel()
	tc := planSpecs()["probe-tcg"]
	_, err := NewPlan(tc.spec, PlanInput{Accelerator: spec.AccelAuto})
	assert.ErrorContains(t, err, "accelerator must be kvm or tcg")
}

// A rehearsal lab (probe + manualBootstrap) boots its bootstrap from the
// rehearsal initrd with 1.5 GiB and its masters (real etcd members and
// kube-apiservers) with 1 GiB; workers keep the small initrd and the probe size, and a plain
// probe lab ignores RehearsalInitrd.
func TestPlanRehearsalBootstrap(t *testing.T) {
	t.Parallel()
	mk := func(manual bool) *spec.Spec {
		s := &spec.Spec{Name: "reh1", Profile: spec.ProfileProbe, LabDir: "/var/lib/bootlab/labs/reh1",
			Topology:  spec.Topology{Masters: 1, Workers: 1},
			OpenShift: spec.OpenShift{ManualBootstrap: manual},
			Image: spec.Image{Kernel: "/c/vmlinuz", Initrd: "/c/initramfs.img", RehearsalInitrd: "/c/rehearsal.img",
				Cmdline: "console=ttyS0"}}
		s.Defaults()
		return s
	}
	for _, manual := range []bool{true, false} {
		s := mk(manual)
		assert.Equal(t, manual, s.Rehearsal())
		p, err := NewPlan(s, PlanInput{Accelerator: spec.AccelTCG, Boot: fakeBoot(s)})
		require.NoError(t, err)
		for _, d := range p.Domains {
			var dom struct {
				Memory  int    `xml:"memory"`
				Initrd  string `xml:"os>initrd"`
				Cmdline string `xml:"os>cmdline"`
			}
			require.NoError(t, xmlUnmarshalString(d.XML, &dom))
			assert.Equal(t, "console=ttyS0", dom.Cmdline, d.Name)
			if manual && d.Node.Role == spec.RoleBootstrap {
				assert.Equal(t, bootVolumePath(s, "initrd", fakeBoot(s).RehearsalInitrd), dom.Initrd, d.Name)
				assert.Equal(t, spec.RehearsalBootstrapMemoryMiB, d.Node.MemoryMiB, d.Name)
				continue
			}
			if manual && d.Node.Role == spec.RoleMaster {
				assert.Equal(t, bootVolumePath(s, "initrd", fakeBoot(s).RehearsalInitrd), dom.Initrd, d.Name, "masters run real etcd too")
				assert.Equal(t, spec.RehearsalMasterMemoryMiB, d.Node.MemoryMiB, d.Name)
				continue
			}
			assert.Equal(t, bootVolumePath(s, "initrd", fakeBoot(s).Initrd), dom.Initrd, d.Name)
			assert.Equal(t, 256, d.Node.MemoryMiB, d.Name)
		}
	}
}

// A rehearsal lab's Kubernetes volume is one qcow2 volume in the pool,
// sized as the guest sees it, attached read-only (with the serial the
// agent looks for) to the bootstrap and every master, never to a worker;
// a plain probe lab gets neither the volume nor the disk.
func TestPlanKubeVolumeReadOnlyOnBootstrapAndMasters(t *testing.T) {
	t.Parallel()
	for _, manual := range []bool{true, false} {
		s := &spec.Spec{Name: "reh1", Profile: spec.ProfileProbe, LabDir: "/var/lib/bootlab/labs/reh1",
			Topology:  spec.Topology{Masters: 3, Workers: 1},
			OpenShift: spec.OpenShift{ManualBootstrap: manual},
			Image: spec.Image{Kernel: "/c/vmlinuz", Initrd: "/c/initramfs.img", RehearsalInitrd: "/c/rehearsal.img",
				KubeVolume: "/c/kube-volume/1.32.13-0123456789abcdef/kubernetes-v1.qcow2"}}
		s.Defaults()
		boot := fakeBoot(s)
		p, err := NewPlan(s, PlanInput{Accelerator: spec.AccelTCG, Boot: boot})
		require.NoError(t, err)
		var kube []BootVolume
		for _, v := range p.BootVolumes {
			if strings.HasPrefix(v.Name, BootVolumePrefix+"kube-") {
				kube = append(kube, v)
			}
		}
		if !manual {
			assert.Empty(t, kube, "a plain probe lab uploads no Kubernetes volume")
		} else {
			require.Len(t, kube, 1, "one volume shared by every node")
			assert.Equal(t, BootVolumePrefix+"kube-"+boot.KubeVolume.Digest+".qcow2", kube[0].Name)
			var vol libvirtxml.StorageVolume
			require.NoError(t, vol.Unmarshal(kube[0].XML))
			assert.Equal(t, "qcow2", vol.Target.Format.Type)
			assert.Equal(t, uint64(136<<20), vol.Capacity.Value, "the capacity is the disk the guest sees")
			assert.Equal(t, boot.KubeVolume.Size, kube[0].File.Size, "the upload is the file as it is")
		}
		for _, d := range p.Domains {
			var dom libvirtxml.Domain
			require.NoError(t, dom.Unmarshal(d.XML))
			var disk *libvirtxml.DomainDisk
			for i := range dom.Devices.Disks {
				if dom.Devices.Disks[i].Target.Dev == "vdb" {
					disk = &dom.Devices.Disks[i]
				}
			}
			if !manual || d.Node.Role == spec.RoleWorker {
				assert.Nil(t, disk, d.Name)
				assert.Empty(t, dom.Devices.Disks[0].Serial, "%s: a node that keeps nothing has no node disk serial", d.Name)
				continue
			}
			assert.Equal(t, wire.NodeDiskSerial, dom.Devices.Disks[0].Serial, "%s: its own disk is the node disk", d.Name)
			assert.Equal(t, "vda", dom.Devices.Disks[0].Target.Dev, d.Name)
			require.NotNil(t, disk, d.Name)
			assert.NotNil(t, disk.ReadOnly, "%s: the volume is read-only", d.Name)
			assert.Equal(t, "qcow2", disk.Driver.Type, d.Name)
			assert.Equal(t, kube[0].Name, disk.Source.Volume.Volume, d.Name)
			assert.Equal(t, s.PoolName(), disk.Source.Volume.Pool, d.Name)
			assert.Equal(t, wire.KubeVolumeSerial, disk.Serial, d.Name)
			assert.Contains(t, d.XML, "<readonly></readonly>", d.Name)
		}
	}
}

// Under TCG a node that boots RHCOS gets every x86-64-v2 feature (RHEL 9's
// glibc stops on a CPU without them), on qemu64; bootlab's own kernel keeps
// libvirt's default CPU; under KVM every node has the host's.
func TestPlanCPU(t *testing.T) {
	t.Parallel()
	specs := planSpecs()
	for _, tc := range []struct {
		name     string
		mode     string
		features []string
	}{
		{"probe-tcg", "", nil},
		{"openshift-kvm", "host-passthrough", nil},
		{"openshift-tcg", "custom", []string{"cx16", "lahf_lm", "popcnt", "sse4.1", "sse4.2", "ssse3"}},
	} {
		p, err := NewPlan(specs[tc.name].spec, specs[tc.name].in)
		require.NoError(t, err, tc.name)
		require.NotEmpty(t, p.Domains, tc.name)
		for _, dp := range p.Domains {
			var d libvirtxml.Domain
			require.NoError(t, d.Unmarshal(dp.XML), tc.name)
			if tc.mode == "" {
				assert.Nil(t, d.CPU, "%s %s: libvirt's default CPU", tc.name, dp.Node.Name)
				continue
			}
			require.NotNil(t, d.CPU, "%s %s", tc.name, dp.Node.Name)
			assert.Equal(t, tc.mode, d.CPU.Mode, "%s %s", tc.name, dp.Node.Name)
			var required []string
			for _, f := range d.CPU.Features {
				if f.Policy == "require" {
					required = append(required, f.Name)
				}
			}
			assert.Equal(t, tc.features, required, "%s %s", tc.name, dp.Node.Name)
			if tc.mode == "custom" {
				require.NotNil(t, d.CPU.Model)
				assert.Equal(t, "qemu64", d.CPU.Model.Value)
				assert.Equal(t, "forbid", d.CPU.Model.Fallback, "a libvirt that lacks the model must refuse, not boot a CPU RHCOS cannot run on")
			}
		}
	}
}
