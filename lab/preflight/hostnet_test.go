package preflight

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"
)

// The spec fixtures are checked by spec.Validate and by ValidateHost
// against the host facts each fixture's header declares.
const specDir = "../../testdata/specs"

// loadFixture reads a spec fixture, substituting ${TESTDATA} with the
// absolute fixture directory, and returns the fake host facts its header
// comments declare ("# host-routes: PREFIX DEV", "# libvirt-networks: NAME PREFIX BRIDGE").
func loadFixture(t *testing.T, name string) (*spec.Spec, []HostRoute, []hypervisor.NetworkInfo, error) {
	t.Helper()
	abs, err := filepath.Abs(specDir)
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(specDir, name))
	require.NoError(t, err)
	text := strings.ReplaceAll(string(raw), "${TESTDATA}", abs)
	var routes []HostRoute
	var nets []hypervisor.NetworkInfo
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "# host-routes:")); strings.HasPrefix(line, "# host-routes:") {
			routes = append(routes, HostRoute{Prefix: netip.MustParsePrefix(f[0]), Dev: f[1]})
		}
		if f := strings.Fields(strings.TrimPrefix(line, "# libvirt-networks:")); strings.HasPrefix(line, "# libvirt-networks:") {
			nets = append(nets, hypervisor.NetworkInfo{Name: f[0], Prefixes: []netip.Prefix{netip.MustParsePrefix(f[1])}, Bridge: f[2]})
		}
	}
	s, err := spec.Parse([]byte(text), name)
	if err != nil {
		return nil, nil, nil, err
	}
	s.Defaults()
	return s, routes, nets, nil
}

func validateAll(s *spec.Spec, routes []HostRoute, nets []hypervisor.NetworkInfo, source string) error {
	if err := s.Validate(); err != nil {
		var ve *spec.ValidationError
		if errors.As(err, &ve) {
			ve.Source = source
		}
		return err
	}
	if err := ValidateHost(s, routes, nets); err != nil {
		var ve *spec.ValidationError
		if errors.As(err, &ve) {
			ve.Source = source
		}
		return err
	}
	return nil
}

func TestValidFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(specDir, "valid-*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 5)
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, routes, nets, err := loadFixture(t, name)
			require.NoError(t, err)
			assert.NoError(t, validateAll(s, routes, nets, name))
		})
	}
}

func TestInvalidFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(specDir, "invalid-*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 25, "the issue asks for at least 25 invalid fixtures")
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, routes, nets, err := loadFixture(t, name)
			if err == nil {
				err = validateAll(s, routes, nets, name)
			}
			require.Error(t, err, "fixture must be rejected")
			var ve *spec.ValidationError
			require.ErrorAs(t, err, &ve)
			abs, _ := filepath.Abs(specDir)
			got := strings.ReplaceAll(err.Error(), abs, "${TESTDATA}") + "\n"
			testutil.Golden(t, strings.TrimSuffix(f, ".yaml")+".err", []byte(got))
		})
	}
}

func TestParseProcRoutes(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	s := &spec.Spec{Name: "demo"}
	s.Defaults()
	routes := []HostRoute{
		{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("192.168.126.0/24"), Dev: s.Network.Bridge},
	}
	nets := []hypervisor.NetworkInfo{{Name: s.NetworkName(), Bridge: s.Network.Bridge, Prefixes: []netip.Prefix{netip.MustParsePrefix("192.168.126.0/24")}}}
	assert.NoError(t, ValidateHost(s, routes, nets))
}

// A bridge name the host already has is refused unless it is this lab's
// own network's bridge (a second up of the same lab).
func TestValidateBridge(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "br"}
	s.Defaults()
	own := hypervisor.NetworkInfo{Name: s.NetworkName(), Bridge: s.Network.Bridge}
	cases := []struct {
		name   string
		bridge string
		ifaces []string
		nets   []hypervisor.NetworkInfo
		err    string
	}{
		{name: "free name", bridge: s.Network.Bridge, ifaces: []string{"lo", "eth0"}},
		{name: "this lab's own bridge exists", bridge: s.Network.Bridge, ifaces: []string{"eth0", s.Network.Bridge}, nets: []hypervisor.NetworkInfo{own}},
		{name: "host uplink", bridge: "eth0", ifaces: []string{"lo", "eth0"}, err: "network.bridge: eth0 is already an interface of this host"},
		{name: "another lab's bridge by name only", bridge: "virbr9", ifaces: []string{"virbr9"}, nets: []hypervisor.NetworkInfo{{Name: "other", Bridge: "virbr9"}}, err: "network.bridge: virbr9 is already an interface"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := *s
			c.Network.Bridge = tc.bridge
			err := ValidateBridge(&c, tc.ifaces, tc.nets)
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestHostInterfaces(t *testing.T) {
	t.Parallel()
	dev := "Inter-|   Receive\n face |bytes    packets\n    lo: 1 2 3\n  eth0: 4 5 6\nvirbr-x: 7\n"
	got, err := hostInterfaces(func(string) ([]byte, error) { return []byte(dev), nil })
	require.NoError(t, err)
	assert.Equal(t, []string{"lo", "eth0", "virbr-x"}, got)
}
