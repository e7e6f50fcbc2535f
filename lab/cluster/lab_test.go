package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

func TestLabHelpers(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	s := &spec.Spec{Name: "h", LabDir: t.TempDir()}
	s.OpenShift.PullSecretFile = "x"
	s.Defaults()
	nodes := LabNodes(s)
	require.Len(t, nodes, 5, "masters and workers; the bootstrap never registers")
	assert.Equal(t, LabNode{Name: "master-0", FQDN: "master-0.ocp.lab.local", IP: "192.168.126.11"}, nodes[0])
	assert.Len(t, MasterNodes(s), 3)

	// The MCS client trusts the root CA of master.ign and the api-int name.
	require.NoError(t, os.MkdirAll(labdir.Assets(s), 0o700))
	data, err := ignition.Marshal(ignition.Pointer(ignition.MCSURL(s.Cluster.Domain(), "master"), p.caPEM))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(labdir.Assets(s), "master.ign"), data, 0o600))
	m, err := LabMCS(s, Net{})
	require.NoError(t, err)
	assert.Equal(t, "https://api-int.ocp.lab.local:22623", m.URL)
	mcs := newFakeAPI(t, p, false)
	mcs.set("/healthz", response{code: 200})
	m.HTTP.Transport.(*http.Transport).DialContext = DialVia("127.0.0.1", nil) // the stand-in listens here, not on 192.168.126.1
	m.URL = "https://api-int.ocp.lab.local:" + mcs.port()
	require.NoError(t, m.Healthz(context.Background()), "dialled via the API address, verified as api-int")

	r, err := BootstrapSSH(s, Net{})
	require.NoError(t, err)
	cfg := r.Config()
	assert.Equal(t, "192.168.126.10", cfg.Host)
	assert.Equal(t, 22, cfg.Port)
	assert.Equal(t, "core", cfg.User)
	assert.True(t, cfg.AsUser, "lab wait reads what core may read: no sudo")
	assert.Equal(t, labdir.SSHKey(s), cfg.KeyPath)
	assert.Equal(t, labdir.KnownHosts(s), cfg.KnownHostsPath)
	assert.True(t, cfg.OwnKnownHosts, "the lab's own known_hosts: made when missing")

	_, err = LabClient(s, Net{})
	assert.ErrorContains(t, err, "kubeconfig")
}

// A remote lab's network is reached through its hypervisor host: the
// clients dial lab addresses with Net.Dial, the bootstrap's SSH goes Via.
func TestLabNetThroughTheHypervisor(t *testing.T) {
	t.Parallel()
	var got []string
	dial := func(_ context.Context, network, addr string) (net.Conn, error) {
		got = append(got, network+" "+addr)
		return nil, errors.New("tunnel closed")
	}
	_, err := DialVia("192.168.126.1", dial)(context.Background(), "tcp", "api.ocp.lab.local:6443")
	assert.ErrorContains(t, err, "tunnel closed")
	assert.Equal(t, []string{"tcp 192.168.126.1:6443"}, got)

	s := &spec.Spec{Name: "n", Profile: spec.ProfileOpenShift, LabDir: t.TempDir()}
	s.Defaults()
	via := &sshc.Client{}
	r, err := BootstrapSSH(s, Net{Via: via})
	require.NoError(t, err)
	assert.Same(t, via, r.Config().Via)
}

// runnerStandIn answers every command with out and code.
type runnerStandIn struct {
	out, errOut string
	code        int
	ran         []string
}

func (r *runnerStandIn) Run(_ context.Context, cmd string, _ io.Reader, stdout, stderr io.Writer) (int, error) {
	r.ran = append(r.ran, cmd)
	_, _ = io.WriteString(stdout, r.out)
	_, _ = io.WriteString(stderr, r.errOut)
	return r.code, nil
}

func (r *runnerStandIn) String() string { return "core@192.168.126.10" }

// A rehearsal lab's admin kubeconfig is read from the bootstrap; it must
// be inline there, and a bootstrap without it says what to check.
func TestNodeKubeconfig(t *testing.T) {
	p := newTestPKI(t)
	data, err := os.ReadFile(writeKubeconfig(t, p, "https://api.ocp.lab.local:6443"))
	require.NoError(t, err)
	r := &runnerStandIn{out: string(data)}
	k, err := nodeKubeconfig(context.Background(), r, RehearsalKubeconfigPath)
	require.NoError(t, err)
	assert.Equal(t, []string{"sudo -n cat " + RehearsalKubeconfigPath}, r.ran)
	assert.Equal(t, "https://api.ocp.lab.local:6443", k.Server)
	assert.Equal(t, p.clientPEM, k.CertData)

	withFile := strings.Replace(string(data), "client-key-data:", "client-key: /etc/admin.key\n    x-key-data:", 1)
	_, err = nodeKubeconfig(context.Background(), &runnerStandIn{out: withFile}, RehearsalKubeconfigPath)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must carry its certificates inline")

	_, err = nodeKubeconfig(context.Background(), &runnerStandIn{code: 1, errOut: "cat: /opt/openshift/auth/kubeconfig: No such file or directory"}, RehearsalKubeconfigPath)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "No such file")
	assert.Contains(t, err.Error(), "bootlab lab status")
}
