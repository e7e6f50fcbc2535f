package engine

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/diagram"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

// graphSpec is a lab that was never built, at a fixed lab directory name
// so the pictures do not depend on the test's temporary directory.
func graphSpec(t *testing.T, masters, workers int) *spec.Spec {
	t.Helper()
	s := &spec.Spec{Name: "demo", LabDir: filepath.Join(t.TempDir(), "demo"), Topology: spec.Topology{Masters: masters, Workers: workers}}
	s.Defaults()
	require.NoError(t, s.Validate())
	return s
}

// wellFormedXML fails the test unless data parses as XML to the end.
func wellFormedXML(t *testing.T, data []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err, "the SVG is not well-formed XML")
	}
}

// The topology in every format, for the demo lab and a compact lab whose
// ingress has its own address, is the golden file under testdata/graph
// (`go test ./lab/internal/engine -run TestGraphGoldens -update` rewrites them).
func TestGraphGoldens(t *testing.T) {
	t.Parallel()
	compact := graphSpec(t, 3, 0)
	compact.Network.IngressAddress = "192.168.126.2"
	cases := []struct {
		name string
		spec *spec.Spec
	}{
		{"demo", graphSpec(t, 3, 2)},
		{"compact", compact},
	}
	ext := map[diagram.Format]string{diagram.FormatSVG: "svg", diagram.FormatDOT: "dot", diagram.FormatMermaid: "mmd"}
	for _, tc := range cases {
		topo, err := Graph(context.Background(), tc.spec, GraphOptions{})
		require.NoError(t, err)
		assert.False(t, topo.Live)
		assert.Equal(t, "Drawn from the spec: lab demo is not built.", topo.Note)
		for _, f := range diagram.Formats() {
			t.Run(tc.name+"."+ext[f], func(t *testing.T) {
				t.Parallel()
				got, err := topo.Render(f)
				require.NoError(t, err)
				if f == diagram.FormatSVG {
					wellFormedXML(t, got)
				}
				testutil.Golden(t, filepath.Join("..", "..", "..", "testdata", "graph", tc.name+"."+ext[f]), got)
			})
		}
	}
}

// The picture's load balancer is the one haproxy is configured with: 6443
// and 22623 to the bootstrap and masters, 80 and 443 to the workers, or to
// the masters when there are none; DNS names point at the API and ingress
// addresses.
func TestGraphFollowsTheLoadBalancer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		workers int
		control []string
		ingress []string
	}{
		{2, []string{"bootstrap", "master-0", "master-1", "master-2"}, []string{"worker-0", "worker-1"}},
		{0, []string{"bootstrap", "master-0", "master-1", "master-2"}, []string{"master-0", "master-1", "master-2"}},
	} {
		s := graphSpec(t, 3, tc.workers)
		s.Network.IngressAddress = "192.168.126.2"
		topo, err := Graph(context.Background(), s, GraphOptions{})
		require.NoError(t, err)
		require.Len(t, topo.Frontends, 4)
		ports := map[int][]string{}
		for _, f := range topo.Frontends {
			ports[f.Port] = f.Backends
		}
		assert.Equal(t, tc.control, ports[6443])
		assert.Equal(t, tc.control, ports[22623])
		assert.Equal(t, tc.ingress, ports[80])
		assert.Equal(t, tc.ingress, ports[443])
		assert.Equal(t, "192.168.126.2", topo.Frontends[3].Address, "443 listens on the ingress address")
		assert.Equal(t, []diagram.DNSName{
			{Name: "api.ocp.lab.local", Address: "192.168.126.1"},
			{Name: "api-int.ocp.lab.local", Address: "192.168.126.1"},
			{Name: "*.apps.ocp.lab.local", Address: "192.168.126.2"},
		}, topo.DNS)
		assert.Equal(t, "192.168.126.1/24", topo.Address)
		for i, n := range s.Nodes {
			assert.Equal(t, diagram.Node{Name: n.Name, Role: string(n.Role), IP: n.IP, MAC: n.MAC, FQDN: n.Name + ".ocp.lab.local"}, topo.Nodes[i])
		}
	}
}

// A built lab is drawn with each node's state from libvirt, and without
// the bootstrap's backends after `lab pivot`; when libvirt does not
// answer, from the spec alone, saying why.
func TestGraphOfABuiltLab(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "g", true)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	require.NoError(t, hv.DestroyDomain(ctx, s.DomainName(s.NodesByRole(spec.RoleWorker)[0])))
	require.NoError(t, UpdateState(s, false, func(st *labdir.State) error { st.BootstrapRemoved = true; return nil }))

	topo, err := Graph(ctx, s, GraphOptions{Connect: hypervisor.Shared(hv)})
	require.NoError(t, err)
	assert.True(t, topo.Live)
	states := map[string]string{}
	for _, n := range topo.Nodes {
		states[n.Name] = n.State
	}
	assert.Equal(t, map[string]string{"bootstrap": "running", "master-0": "running", "master-1": "running", "worker-0": "shut off"}, states)
	assert.Equal(t, []string{"master-0", "master-1"}, topo.Frontends[0].Backends, "pivoted: the bootstrap is out of 6443")
	assert.Contains(t, topo.Note, "lab pivot")
	svg := string(topo.SVG())
	assert.Contains(t, svg, "worker-0 (worker): shut off")
	assert.Contains(t, svg, `fill="#2da44e"`, "a running node's dot is green")

	down := func(context.Context, string, *slog.Logger) (hypervisor.Hypervisor, error) {
		return nil, errors.New("dial unix /var/run/libvirt/libvirt-sock: connect: no such file or directory")
	}
	topo, err = Graph(ctx, s, GraphOptions{Connect: down})
	require.NoError(t, err)
	assert.False(t, topo.Live)
	assert.True(t, strings.HasPrefix(topo.Note, "Drawn from the spec the lab was built with: libvirt did not say which nodes run (dial unix"), topo.Note)
	for _, n := range topo.Nodes {
		assert.Empty(t, n.State, n.Name)
	}
}
