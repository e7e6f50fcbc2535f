package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/internal/testutil/dnstest"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/diagnose"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// tcpTry answers the connection tries of a live collection (bash's
// /dev/tcp under timeout) from answers by "ip:port": "0" connected, "124"
// no answer, "1 Connection refused"; a port not listed is refused.
var tcpTry = regexp.MustCompile(`/dev/tcp/([0-9.]+)/(\d+)'`)

func (f *fakeNode) tries(cmd string, stdout io.Writer) {
	for _, m := range tcpTry.FindAllStringSubmatch(cmd, -1) {
		ans, ok := f.tcp[m[1]+":"+m[2]]
		if !ok {
			ans = "1 Connection refused"
		}
		fmt.Fprintf(stdout, "%s %s %s\n", m[1], m[2], ans)
	}
}

// liveLab is a live rehearsal lab of fakes: the bootstrap answers over
// SSH, the masters run no SSH server but report on their consoles, the
// lab's DNS answers from records, the load balancer accepts.
type liveLab struct {
	s       *spec.Spec
	nodes   map[string]*fakeNode
	records map[string][]string
	lbDown  bool
	// fetch is each master's Ignition fetch as its agent reports it.
	fetch bool
}

func newLiveLab(t *testing.T) *liveLab {
	s := gatherSpec(t)
	l := &liveLab{s: s, records: map[string][]string{}, fetch: true}
	boot := healthyBootstrap(t, s, true)
	boot.tcp = map[string]string{}
	for _, m := range s.NodesByRole(spec.RoleMaster) {
		for _, p := range []string{"2379", "2380", "6443"} {
			boot.tcp[m.IP+":"+p] = "0 "
		}
	}
	l.nodes = map[string]*fakeNode{s.NodesByRole(spec.RoleBootstrap)[0].Name: boot}
	dom := s.Cluster.Domain()
	l.records["api."+dom] = []string{s.Network.APIAddress}
	l.records["api-int."+dom] = []string{s.Network.APIAddress}
	l.records["bootlab-diagnose.apps."+dom] = []string{s.Network.IngressAddress}
	for _, n := range s.Nodes {
		l.records[s.FQDN(n)] = []string{n.IP}
		l.records[reverseName(n.IP)] = []string{s.FQDN(n)}
	}
	return l
}

// reverseName is an address's in-addr.arpa name.
func reverseName(ip string) string {
	a := netip.MustParseAddr(ip).As4()
	return fmt.Sprintf("%d.%d.%d.%d.in-addr.arpa", a[3], a[2], a[1], a[0])
}

func (l *liveLab) sources() GatherSources {
	src := fakeSources(l.s, l.nodes, healthyAPI(l.s))
	src.Verify = nil
	src.Dial = func(_ context.Context, n spec.Node) (GatherNode, func(), error) {
		if f := l.nodes[n.Name]; f != nil {
			return f, func() {}, nil
		}
		return nil, nil, fmt.Errorf("lab ssh %s: ssh core@%s:22: dial tcp %s:22: connect: connection refused", n.Name, n.IP, n.IP)
	}
	src.Console = func(_ context.Context, n spec.Node, w io.Writer) error {
		rep := &wire.Report{Node: n.Name, Seq: 7, Checks: []wire.Check{{Name: "ignition-fetch", OK: l.fetch, Detail: "fetched https://api-int:22623/config/master"}}}
		_, err := w.Write(append([]byte("[    1.0] kernel line\n"), rep.Line()...))
		return err
	}
	src.DialHost = func(ctx context.Context, _, addr string) (net.Conn, error) {
		host, port, _ := net.SplitHostPort(addr)
		switch {
		case port == "53" && host == l.s.Network.Gateway:
			c, srv := net.Pipe()
			go dnstest.Serve(srv, func(name string, _ dnsmessage.Type) []string { return l.records[name] })
			return c, nil
		case host == l.s.Network.APIAddress && !l.lbDown:
			c, srv := net.Pipe()
			srv.Close()
			return c, nil
		}
		return nil, fmt.Errorf("dial tcp %s: connect: connection refused", addr)
	}
	return src
}

// diagnose collects the live lab and walks the tree; the progress lines
// go to errOut.
func (l *liveLab) diagnose(t *testing.T) (*diagnose.Report, *diagnose.Bundle, string) {
	t.Helper()
	var errOut bytes.Buffer
	b := diagnose.NewBundle(l.s.Name)
	b.Live = true
	o := GatherOptions{Status: status.New(&errOut, false), Sources: l.sources()}
	require.NoError(t, CollectLive(context.Background(), l.s, &labdir.State{Name: l.s.Name, Spec: l.s}, o, b, diagnose.LiveReads))
	return diagnose.Diagnose(b, diagnose.Options{}), b, errOut.String()
}

func evidenceText(c *diagnose.Check) string {
	var out []string
	for _, e := range c.Evidence {
		out = append(out, e.Where()+" "+e.Text)
	}
	return strings.Join(out, "\n")
}

// A healthy live lab: no check fails; the bootstrap's tries and the DNS
// answers are the evidence; what bootlab cannot try from the masters is
// said, never passed; nothing is written to disk, and no credential the
// bootstrap holds is kept.
func TestCollectLiveHealthy(t *testing.T) {
	t.Parallel()
	l := newLiveLab(t)
	r, b, progress := l.diagnose(t)
	var text bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	require.True(t, r.OK, text.String())
	assert.True(t, r.Live)
	assert.Contains(t, text.String(), "lab     gl (live, as of 2025-05-14 10:30:00 UTC")
	assert.Contains(t, progress, "read bootstrap (")

	m0 := l.s.NodesByRole(spec.RoleMaster)[0]
	etcd := r.Check("conn.bootstrap-masters.etcd")
	require.NotNil(t, etcd)
	assert.Equal(t, diagnose.Passed, etcd.State, etcd.Detail)
	assert.Contains(t, evidenceText(etcd), "on bootstrap: timeout 10 bash -c 'exec 3<>/dev/tcp/"+m0.IP+"/2379' -> connected")
	dns := r.Check("api.dns")
	assert.Equal(t, diagnose.Passed, dns.State, dns.Detail)
	assert.Contains(t, evidenceText(dns), "from the host: dig @"+l.s.Network.Gateway+" api-int."+l.s.Cluster.Domain()+" +short -> "+l.s.Network.APIAddress)
	names := r.Check("dns.names")
	require.NotNil(t, names, "a live lab has dns.names")
	assert.Equal(t, diagnose.Passed, names.State, names.Detail)
	assert.Contains(t, names.Detail, fmt.Sprintf("all %d names", 1+2*len(l.s.Nodes)))
	ign := r.Check("masters.ignition")
	assert.Equal(t, diagnose.Passed, ign.State, ign.Detail)
	assert.Contains(t, evidenceText(ign), "bootlab lab console "+m0.Name+" the agent's report 7: ignition-fetch ok")

	// The masters' own tries could not be made: said, with why.
	unseen := map[string]string{}
	for _, u := range r.CouldNotSee {
		unseen[u.Check] += u.Why
	}
	assert.Contains(t, unseen["conn.masters-masters.api"], "a probe or rehearsal lab's masters run no SSH server")
	assert.Contains(t, unseen["api.lb"], "whether 22623 is closed to machines outside the lab")
	assert.False(t, r.Healthy, "what could not be tried is never healthy")

	assert.NoDirExists(t, labdir.Gather(l.s), "a live diagnosis writes no bundle")
	entries, err := os.ReadDir(l.s.LabDir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is written in the lab directory")
	for _, pat := range []string{"*", "*/*", "*/*/*", "*/*/*/*", "*/*/*/*/*"} {
		for _, f := range b.Glob(pat) {
			assert.NotContains(t, f.Text(), "PRIVATE KEY", f.Name)
			assert.NotContains(t, f.Text(), fakeToken, f.Name)
			assert.False(t, strings.HasSuffix(f.Name, ".inspect"), "%s: only what the checks read is collected", f.Name)
		}
	}
	ran := strings.Join(l.nodes[l.s.NodesByRole(spec.RoleBootstrap)[0].Name].ran, "\n")
	assert.NotContains(t, ran, "crictl inspect", "commands whose output no check reads are not run")
}

// A bootstrap without tar (a rehearsal one): its records and only its
// certificates are read, with bash's cat.
func TestCollectLiveWithoutTar(t *testing.T) {
	t.Parallel()
	l := newLiveLab(t)
	boot := l.nodes[l.s.NodesByRole(spec.RoleBootstrap)[0].Name]
	boot.noTar = true
	r, b, _ := l.diagnose(t)
	assert.NotNil(t, b.File("bootstrap/services/bootkube.json"))
	assert.NotNil(t, b.File("rendered-assets/openshift/tls/root-ca.crt"))
	assert.Equal(t, diagnose.Passed, r.Check("certs.valid").State, r.Check("certs.valid").Detail)
	assert.Contains(t, strings.Join(boot.ran, "\n"), "for f in **/*.crt;", "only the certificates are read of /opt/openshift")
}

// api-int answering the wrong address (lab break api-int-wrong-address):
// api.dns is the first failure, with the question and the answer.
func TestCollectLiveAPIIntWrong(t *testing.T) {
	t.Parallel()
	l := newLiveLab(t)
	dom := l.s.Cluster.Domain()
	l.records["api-int."+dom] = []string{"192.168.126.99"}
	r, _, _ := l.diagnose(t)
	require.Equal(t, "api.dns", r.FirstFailure, r.Summary())
	assert.Contains(t, evidenceText(r.First()), "from the host: dig @"+l.s.Network.Gateway+" api-int."+dom+" +short -> 192.168.126.99, expected "+l.s.Network.APIAddress)
}

// A port the path drops fails its row with the command and "no answer";
// one refused (nothing listens yet: a master's etcd before stage 13) is
// not known, never failed.
func TestCollectLiveConnections(t *testing.T) {
	t.Parallel()
	l := newLiveLab(t)
	boot := l.nodes[l.s.NodesByRole(spec.RoleBootstrap)[0].Name]
	m1 := l.s.NodesByRole(spec.RoleMaster)[1]
	for _, m := range l.s.NodesByRole(spec.RoleMaster) {
		delete(boot.tcp, m.IP+":6443") // refused
	}
	r, _, _ := l.diagnose(t)
	api := r.Check("conn.bootstrap-masters.api")
	assert.Equal(t, diagnose.Unknown, api.State, api.Detail)
	assert.Contains(t, api.Detail, "nothing listens there yet")
	assert.Contains(t, evidenceText(api), "-> Connection refused")
	assert.True(t, r.OK, r.Summary())

	boot.tcp[m1.IP+":2380"] = "124 "
	r, _, _ = l.diagnose(t)
	require.Equal(t, "conn.bootstrap-masters.etcd", r.FirstFailure, r.Summary())
	assert.Contains(t, evidenceText(r.First()), "on bootstrap: timeout 10 bash -c 'exec 3<>/dev/tcp/"+m1.IP+"/2380' -> no answer in 10s")

	l.lbDown = true
	delete(boot.tcp, m1.IP+":2380")
	boot.tcp[m1.IP+":2380"] = "0 "
	r, _, _ = l.diagnose(t)
	require.Equal(t, "api.lb", r.FirstFailure, r.Summary())
	assert.Contains(t, evidenceText(r.First()), "from the host: a TCP connection from the host to "+l.s.Network.APIAddress+":6443")
}

// A master whose agent still fails to fetch its config while the MCS
// runs is where the masters stop; an OpenShift lab is diagnosed from its
// bundle, which the error says how to make.
func TestCollectLiveMastersAndOpenShift(t *testing.T) {
	t.Parallel()
	l := newLiveLab(t)
	l.fetch = false
	r, _, _ := l.diagnose(t)
	require.Equal(t, "masters.ignition", r.FirstFailure, r.Summary())
	assert.Contains(t, evidenceText(r.First()), "ignition-fetch failed")

	s := gatherSpec(t)
	s.Profile = spec.ProfileOpenShift
	err := CollectLive(context.Background(), s, &labdir.State{Name: s.Name, Spec: s}, GatherOptions{}, diagnose.NewBundle(s.Name), diagnose.LiveReads)
	var in *InputError
	require.True(t, errors.As(err, &in), "%v", err)
	assert.Contains(t, err.Error(), "bootlab lab diagnose --bundle")
}
