package lab

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

const specDir = "../testdata/specs"

// loadFixture reads a spec fixture, substituting ${TESTDATA} with the
// absolute fixture directory, and returns the fake host facts its header
// comments declare ("# host-routes: PREFIX DEV", "# libvirt-networks: NAME PREFIX BRIDGE").
func loadFixture(t *testing.T, name string) (*Spec, []HostRoute, []NetworkInfo, error) {
	t.Helper()
	abs, err := filepath.Abs(specDir)
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(specDir, name))
	require.NoError(t, err)
	text := strings.ReplaceAll(string(raw), "${TESTDATA}", abs)
	var routes []HostRoute
	var nets []NetworkInfo
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "# host-routes:")); strings.HasPrefix(line, "# host-routes:") {
			routes = append(routes, HostRoute{Prefix: netip.MustParsePrefix(f[0]), Dev: f[1]})
		}
		if f := strings.Fields(strings.TrimPrefix(line, "# libvirt-networks:")); strings.HasPrefix(line, "# libvirt-networks:") {
			nets = append(nets, NetworkInfo{Name: f[0], Prefixes: []netip.Prefix{netip.MustParsePrefix(f[1])}, Bridge: f[2]})
		}
	}
	s, err := Parse([]byte(text), name)
	if err != nil {
		return nil, nil, nil, err
	}
	s.Defaults()
	return s, routes, nets, nil
}

func validateAll(s *Spec, routes []HostRoute, nets []NetworkInfo, source string) error {
	if err := s.Validate(); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.Source = source
		}
		return err
	}
	if err := ValidateHost(s, routes, nets); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.Source = source
		}
		return err
	}
	return nil
}

func TestValidFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(specDir, "valid-*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 5)
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			s, routes, nets, err := loadFixture(t, name)
			require.NoError(t, err)
			assert.NoError(t, validateAll(s, routes, nets, name))
		})
	}
}

// Every invalid fixture fails with exactly the message in its .err golden.
func TestInvalidFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(specDir, "invalid-*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 25, "the issue asks for at least 25 invalid fixtures")
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			s, routes, nets, err := loadFixture(t, name)
			if err == nil {
				err = validateAll(s, routes, nets, name)
			}
			require.Error(t, err, "fixture must be rejected")
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			abs, _ := filepath.Abs(specDir)
			got := strings.ReplaceAll(err.Error(), abs, "${TESTDATA}") + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, rerr := os.ReadFile(golden)
			require.NoError(t, rerr, "missing golden %s: run go test ./lab -run Fixtures -update", golden)
			assert.Equal(t, string(want), got)
		})
	}
}

func TestDefaultsDeriveAddressesAndSizes(t *testing.T) {
	s := &Spec{Name: "demo"}
	s.Defaults()
	require.NoError(t, s.Validate())
	assert.Equal(t, ProfileProbe, s.Profile)
	assert.Equal(t, NetworkIsolated, s.Network.Mode)
	assert.Equal(t, "192.168.126.1", s.Network.Gateway)
	assert.Equal(t, Topology{Masters: 3, Workers: 2}, s.Topology)
	want := map[string]string{"bootstrap": "192.168.126.10", "master-0": "192.168.126.11", "master-2": "192.168.126.13", "worker-0": "192.168.126.20", "worker-1": "192.168.126.21"}
	for name, ip := range want {
		n, ok := s.Node(name)
		require.True(t, ok, name)
		assert.Equal(t, ip, n.IP, name)
		assert.Equal(t, 256, n.MemoryMiB, name)
	}
	// Defaults are idempotent: a second pass changes nothing.
	before, _ := s.Marshal()
	s.Defaults()
	after, _ := s.Marshal()
	assert.Equal(t, string(before), string(after))
}

func TestDefaultsOpenShiftSizes(t *testing.T) {
	s := &Spec{Name: "ocp", OpenShift: OpenShift{PullSecretFile: "/x"}, Topology: Topology{Masters: 3, Workers: 1}}
	s.Defaults()
	assert.Equal(t, ProfileOpenShift, s.Profile)
	assert.Equal(t, NetworkNAT, s.Network.Mode)
	b, _ := s.Node("bootstrap")
	m, _ := s.Node("master-1")
	w, _ := s.Node("worker-0")
	assert.Equal(t, Node{Name: "bootstrap", Role: RoleBootstrap, VCPUs: 4, MemoryMiB: 16384, DiskGiB: 100, MAC: b.MAC, IP: "192.168.126.10"}, b)
	assert.Equal(t, 16384, m.MemoryMiB)
	assert.Equal(t, Node{Name: "worker-0", Role: RoleWorker, VCPUs: 2, MemoryMiB: 8192, DiskGiB: 100, MAC: w.MAC, IP: "192.168.126.20"}, w)
}

func TestDefaultsSkipTakenAddresses(t *testing.T) {
	s := &Spec{Name: "demo", Nodes: []Node{
		{Name: "bootstrap", Role: RoleBootstrap, IP: "192.168.126.11"},
		{Name: "master-0", Role: RoleMaster},
	}}
	s.Defaults()
	require.NoError(t, s.Validate())
	m, _ := s.Node("master-0")
	assert.Equal(t, "192.168.126.12", m.IP)
}

func TestDeriveMACIsStableAndDistinct(t *testing.T) {
	assert.Equal(t, DeriveMAC("a", "master-0"), DeriveMAC("a", "master-0"))
	assert.NotEqual(t, DeriveMAC("a", "master-0"), DeriveMAC("b", "master-0"))
	assert.True(t, strings.HasPrefix(DeriveMAC("a", "x"), "52:54:00:"))
}

func TestParseProcRoutes(t *testing.T) {
	text := `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	00000000	0100000A	0003	0	0	0	00000000	0	0	0
eth0	0000000A	00000000	0001	0	0	0	00FFFFFF	0	0	0
virbr0	007AA8C0	00000000	0001	0	0	0	00FFFFFF	0	0	0
`
	routes, err := parseProcRoutes(text)
	require.NoError(t, err)
	assert.Equal(t, []HostRoute{
		{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("10.0.0.0/24"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("192.168.122.0/24"), Dev: "virbr0"},
	}, routes)
}

func TestValidateHostIgnoresOwnNetworkAndDefaultRoute(t *testing.T) {
	s := &Spec{Name: "demo"}
	s.Defaults()
	routes := []HostRoute{
		{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("192.168.126.0/24"), Dev: s.Network.Bridge},
	}
	nets := []NetworkInfo{{Name: s.NetworkName(), Bridge: s.Network.Bridge, Prefixes: []netip.Prefix{netip.MustParsePrefix("192.168.126.0/24")}}}
	assert.NoError(t, ValidateHost(s, routes, nets))
}

func TestValidationErrorListsAtMost20Problems(t *testing.T) {
	var e errs
	for i := 0; i < 27; i++ {
		e.add(fmt.Sprintf("nodes[%d].mac", i), "bad")
	}
	msg := e.err().Error()
	assert.Contains(t, msg, "lab spec: 27 problems:")
	assert.Contains(t, msg, "nodes[19].mac: bad")
	assert.NotContains(t, msg, "nodes[20].mac")
	assert.True(t, strings.HasSuffix(msg, "\n  ... and 7 more"), msg)
}

func TestProbeLabWarnsAboutOpenShiftFieldsItIgnores(t *testing.T) {
	s := &Spec{Name: "p", Profile: ProfileProbe, LabDir: "/tmp/p", OpenShift: OpenShift{OCPath: "/usr/bin/oc", Mirrors: Mirrors{RHCOS: "http://m"}, Version: "4.21.2"}}
	s.Defaults()
	require.NoError(t, s.Validate(), "a version is used by a probe lab's stages; the rest is ignored, not wrong")
	var got []string
	for _, w := range s.Warnings() {
		got = append(got, w.Field)
	}
	assert.Equal(t, []string{"openshift.ocPath", "openshift.mirrors"}, got)
}

func TestStageCheckpointsDefaultOn(t *testing.T) {
	s, err := Parse([]byte("name: te\n"), "te.yaml")
	require.NoError(t, err)
	assert.True(t, s.StageCheckpoints(), "stage run checkpoints unless told not to")
	s.Defaults()
	require.NotNil(t, s.Stages.Checkpoints, "lab config prints the default")

	s, err = Parse([]byte("name: te\nstages: {checkpoints: false}\n"), "te.yaml")
	require.NoError(t, err)
	assert.False(t, s.StageCheckpoints())

	old := &Spec{Name: "recorded-before-the-field"}
	assert.True(t, old.StageCheckpoints(), "a lab state written before stages.checkpoints existed")
}
