package lab

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The -update flag (spec_test.go) rewrites these goldens:
// go test ./lab -run Plan -update

func xmlUnmarshalString(x string, v any) error { return xml.Unmarshal([]byte(x), v) }

func planSpecs() map[string]struct {
	spec *Spec
	in   PlanInput
} {
	probe := &Spec{Name: "probe1", Profile: ProfileProbe, LabDir: "/var/lib/bootlab/labs/probe1",
		Topology: Topology{Masters: 2, Workers: 1},
		Network:  Network{CIDR: "10.77.0.0/24"},
		Image:    Image{Kernel: "/var/cache/bootlab/probe/vmlinuz", Initrd: "/var/cache/bootlab/probe/initrd.img", Cmdline: "console=ttyS0 quiet"}}
	probe.Defaults()
	ocp := &Spec{Name: "ocp1", Profile: ProfileOpenShift, LabDir: "/var/lib/bootlab/labs/ocp1",
		Topology: Topology{Masters: 3, Workers: 2},
		Network:  Network{CIDR: "192.168.130.0/24", IngressAddress: "192.168.130.2"},
		Image:    Image{Path: "/var/cache/bootlab/rhcos.qcow2"}}
	ocp.Defaults()
	return map[string]struct {
		spec *Spec
		in   PlanInput
	}{
		"probe-tcg": {probe, PlanInput{Accelerator: AccelTCG}},
		"openshift-kvm": {ocp, PlanInput{Accelerator: AccelKVM,
			Base: &ImageInfo{Format: "qcow2", FileSize: 1 << 30, VirtualSize: 16 << 30}}},
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got+"\n"), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden missing: run go test ./lab -run Plan -update")
	assert.Equal(t, string(want), got+"\n", "golden %s differs (go test ./lab -run Plan -update)", path)
}

func TestPlanGoldens(t *testing.T) {
	for name, tc := range planSpecs() {
		t.Run(name, func(t *testing.T) {
			p, err := NewPlan(tc.spec, tc.in)
			require.NoError(t, err)
			dir := filepath.Join("..", "testdata", "plan", name)
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
		})
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	for name, tc := range planSpecs() {
		a, err := NewPlan(tc.spec, tc.in)
		require.NoError(t, err)
		b, err := NewPlan(tc.spec, tc.in)
		require.NoError(t, err)
		assert.Equal(t, a, b, name)
	}
}

func TestPlanMetadataRoundTrip(t *testing.T) {
	tc := planSpecs()["openshift-kvm"]
	p, err := NewPlan(tc.spec, tc.in)
	require.NoError(t, err)
	for _, d := range p.Domains {
		md := ParseLabMetadata(d.XML)
		require.NotNil(t, md, d.Name)
		assert.Equal(t, LabMetadata{XMLName: md.XMLName, Name: "ocp1", Role: d.Node.Role, Node: d.Node.Name, Plan: d.Digest}, *md)
	}
	assert.Nil(t, ParseLabMetadata(`<domain type="qemu"><name>other</name></domain>`))
	assert.Nil(t, ParseLabMetadata(`<domain type="qemu"><name>x</name><metadata><lab xmlns="https://example.com/other" name="ocp1"/></metadata></domain>`))
}

func TestPlanDigestFollowsSpec(t *testing.T) {
	tc := planSpecs()["probe-tcg"]
	a, err := NewPlan(tc.spec, tc.in)
	require.NoError(t, err)
	s2 := *tc.spec
	s2.Nodes = append([]Node(nil), tc.spec.Nodes...)
	s2.Nodes[1].MemoryMiB = 512
	b, err := NewPlan(&s2, tc.in)
	require.NoError(t, err)
	assert.Equal(t, a.Domains[0].Digest, b.Domains[0].Digest, "an untouched node keeps its digest")
	assert.NotEqual(t, a.Domains[1].Digest, b.Domains[1].Digest, "a resized node gets a new digest")
}

func TestPlanNATOnlyInNATMode(t *testing.T) {
	for name, tc := range planSpecs() {
		p, err := NewPlan(tc.spec, tc.in)
		require.NoError(t, err)
		if tc.spec.Network.Mode == NetworkNAT {
			assert.Contains(t, p.Network.XML, `<forward mode="nat">`, name)
		} else {
			assert.NotContains(t, p.Network.XML, `<forward`, name)
		}
	}
}

func TestPlanRejectsUnchosenAccelerator(t *testing.T) {
	tc := planSpecs()["probe-tcg"]
	_, err := NewPlan(tc.spec, PlanInput{Accelerator: AccelAuto})
	assert.ErrorContains(t, err, "accelerator must be kvm or tcg")
}

// A rehearsal lab (probe + manualBootstrap) boots its bootstrap from the
// rehearsal initrd with 512 MiB and its masters (real etcd members) with
// 384 MiB; workers keep the small initrd and the probe size, and a plain
// probe lab ignores RehearsalInitrd.
func TestPlanRehearsalBootstrap(t *testing.T) {
	mk := func(manual bool) *Spec {
		s := &Spec{Name: "reh1", Profile: ProfileProbe, LabDir: "/var/lib/bootlab/labs/reh1",
			Topology:  Topology{Masters: 1, Workers: 1},
			OpenShift: OpenShift{ManualBootstrap: manual},
			Image: Image{Kernel: "/c/vmlinuz", Initrd: "/c/initramfs.img", RehearsalInitrd: "/c/rehearsal.img",
				Cmdline: "console=ttyS0"}}
		s.Defaults()
		return s
	}
	for _, manual := range []bool{true, false} {
		s := mk(manual)
		assert.Equal(t, manual, s.Rehearsal())
		p, err := NewPlan(s, PlanInput{Accelerator: AccelTCG})
		require.NoError(t, err)
		for _, d := range p.Domains {
			var dom struct {
				Memory  int    `xml:"memory"`
				Initrd  string `xml:"os>initrd"`
				Cmdline string `xml:"os>cmdline"`
			}
			require.NoError(t, xmlUnmarshalString(d.XML, &dom))
			if manual {
				assert.Equal(t, "console=ttyS0 bootlab.rehearsal", dom.Cmdline, d.Name)
			} else {
				assert.Equal(t, "console=ttyS0", dom.Cmdline, d.Name)
			}
			if manual && d.Node.Role == RoleBootstrap {
				assert.Equal(t, "/c/rehearsal.img", dom.Initrd, d.Name)
				assert.Equal(t, 512, d.Node.MemoryMiB, d.Name)
				continue
			}
			if manual && d.Node.Role == RoleMaster {
				assert.Equal(t, "/c/rehearsal.img", dom.Initrd, d.Name, "masters run real etcd too")
				assert.Equal(t, 384, d.Node.MemoryMiB, d.Name)
				continue
			}
			assert.Equal(t, "/c/initramfs.img", dom.Initrd, d.Name)
			assert.Equal(t, 256, d.Node.MemoryMiB, d.Name)
		}
	}
}
