package spec

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

func openShiftSpec(t *testing.T, masters, workers int) *Spec {
	t.Helper()
	ps := filepath.Join(t.TempDir(), "ps.json")
	require.NoError(t, os.WriteFile(ps, []byte(`{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}`), 0o600))
	s := &Spec{Name: "ocp", Topology: Topology{Masters: masters, Workers: workers}, mastersGiven: true,
		OpenShift: OpenShift{PullSecretFile: ps}, LabDir: t.TempDir(), Image: Image{Path: filepath.Join(specDir, "images", "tiny.qcow2")}}
	abs, err := filepath.Abs(s.Image.Path)
	require.NoError(t, err)
	s.Image.Path = abs
	s.Defaults()
	return s
}

func TestDefaultsOpenShiftNetworksAreTheInstallers(t *testing.T) {
	t.Parallel()
	s := openShiftSpec(t, 3, 2)
	assert.Equal(t, []ClusterNetwork{{CIDR: "10.128.0.0/14", HostPrefix: 23}}, s.OpenShift.ClusterNetwork)
	assert.Equal(t, []string{"172.30.0.0/16"}, s.OpenShift.ServiceNetwork)

	p := &Spec{Name: "demo"}
	p.Defaults()
	assert.Empty(t, p.OpenShift.ClusterNetwork, "a probe lab renders no install-config: nothing to default")
	assert.Empty(t, p.OpenShift.ServiceNetwork)
	require.NoError(t, p.Validate())
	assert.Empty(t, p.Warnings())
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	for workers, want := range map[int]bool{0: false, 1: true, 2: false} {
		s := openShiftSpec(t, 3, workers)
		require.NoError(t, s.Validate(), "%d workers is valid", workers)
		w := s.Warnings()
		if !want {
			assert.Empty(t, w, "%d workers", workers)
			continue
		}
		require.Len(t, w, 1)
		assert.Equal(t, "topology.workers", w[0].Field)
		assert.Contains(t, w[0].Msg, "Degraded", "it says why")
		assert.Contains(t, w[0].Msg, "use 2 workers, or 0", "and what to do")
	}

	p := &Spec{Name: "demo", OpenShift: OpenShift{ClusterNetwork: []ClusterNetwork{{CIDR: "10.128.0.0/14", HostPrefix: 23}}, ServiceNetwork: []string{"172.30.0.0/16"}}}
	p.Defaults()
	require.NoError(t, p.Validate())
	w := p.Warnings()
	require.Len(t, w, 2)
	assert.Equal(t, "openshift.clusterNetwork", w[0].Field)
	assert.Equal(t, "openshift.serviceNetwork", w[1].Field)
	assert.Contains(t, w[0].Msg, "probe profile")

	// A rehearsal lab renders an install-config with both networks: no
	// warning.
	p.OpenShift.ManualBootstrap = true
	require.True(t, p.Rehearsal())
	assert.Empty(t, p.Warnings())
}

// Before 4.14 new clusters got the /29 masquerade subnet; from 4.14 the /17.
func TestOVNInternalSubnetsByRelease(t *testing.T) {
	t.Parallel()
	masq := func(minor int) netip.Prefix {
		for _, o := range ovnInternalSubnets(minor) {
			if o.name == "masquerade subnet" {
				return o.prefix
			}
		}
		t.Fatalf("no masquerade subnet for 4.%d", minor)
		return netip.Prefix{}
	}
	assert.Equal(t, "169.254.169.0/29", masq(13).String())
	assert.Equal(t, "169.254.0.0/17", masq(14).String())
	assert.Equal(t, "169.254.0.0/17", masq(19).String())
	s := openShiftSpec(t, 3, 2)
	_, bad := s.ovnOverlap(netip.MustParsePrefix("169.254.100.0/24"))
	assert.True(t, bad, "inside the /17 of 4.19")
	_, bad = s.ovnOverlap(netip.MustParsePrefix("100.72.0.0/16"))
	assert.False(t, bad, "between join and transit")
}

// Node subnets of all blocks add up: two /24s cut into /25s hold 4 nodes.
func TestClusterNetworkCapacityCountsEveryBlock(t *testing.T) {
	t.Parallel()
	s := openShiftSpec(t, 3, 1)
	s.OpenShift.ClusterNetwork = []ClusterNetwork{{CIDR: "10.128.0.0/24", HostPrefix: 25}, {CIDR: "10.128.1.0/24", HostPrefix: 25}}
	require.NoError(t, s.Validate())
	s.OpenShift.ClusterNetwork = s.OpenShift.ClusterNetwork[:1]
	assert.ErrorContains(t, s.Validate(), "has room for 2 node pod subnet(s), fewer than the 4 nodes")
	s.OpenShift.ClusterNetwork = []ClusterNetwork{{CIDR: "10.128.0.0/14"}}
	assert.ErrorContains(t, s.Validate(), "openshift.clusterNetwork[0].hostPrefix: is missing")
	s.OpenShift.ClusterNetwork = []ClusterNetwork{{CIDR: "10.128.0.0/14", HostPrefix: 30}}
	assert.ErrorContains(t, s.Validate(), "use at most 28")
	// Found by FuzzParseValidate: a length past 32 panicked (negative shift).
	s.OpenShift.ClusterNetwork = []ClusterNetwork{{CIDR: "10.128.0.0/14", HostPrefix: 70}}
	assert.ErrorContains(t, s.Validate(), "openshift.clusterNetwork[0].hostPrefix: 70 is not a prefix length")
	s.OpenShift.ClusterNetwork = []ClusterNetwork{{CIDR: "10.128.0.1/14", HostPrefix: 23}}
	assert.ErrorContains(t, s.Validate(), "did you mean 10.128.0.0/14?")
}

func TestCheckSSHPublicKey(t *testing.T) {
	t.Parallel()
	ed, err := os.ReadFile(filepath.Join(specDir, "images", "id_ed25519.pub"))
	require.NoError(t, err)
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	pub, err := ssh.NewPublicKey(&k.PublicKey)
	require.NoError(t, err)
	ec := string(ssh.MarshalAuthorizedKey(pub))

	assert.NoError(t, CheckSSHPublicKey(string(ed)))
	assert.NoError(t, CheckSSHPublicKey(ec))
	assert.NoError(t, CheckSSHPublicKey("# mine\n"+string(ed)+"\n"+ec), "several keys and comments, as authorized_keys")
	assert.ErrorContains(t, CheckSSHPublicKey(""), "holds no key")
	assert.ErrorContains(t, CheckSSHPublicKey("-----BEGIN OPENSSH PRIVATE KEY-----"), "is not an OpenSSH public key")
	assert.ErrorContains(t, CheckSSHPublicKey("ssh-ed25519 AAAAnotbase64 x"), "is not an OpenSSH public key")
	dsa, err := os.ReadFile(filepath.Join(specDir, "images", "id_dsa.pub"))
	require.NoError(t, err)
	assert.ErrorContains(t, CheckSSHPublicKey(string(ed)+string(dsa)), "DSA")
}

func TestCheckPullSecretNeverQuotesIt(t *testing.T) {
	t.Parallel()
	for _, data := range []string{
		`{"auths":{"quay.io":{"auth":"SECRET!"}}}`,
		`{"auths":{"quay.io":{"username":"SECRET","password":"SECRET"}}}`,
		`{"auths":{"quay.io":{"auth":"SECRET"}`,
	} {
		_, err := CheckPullSecret([]byte(data))
		require.Error(t, err, data)
		assert.False(t, strings.Contains(err.Error(), "SECRET"), err.Error())
	}
	compact, err := CheckPullSecret([]byte("{\"auths\": {\"quay.io\": {\"credsStore\": \"secretservice\"}}}\n"))
	require.NoError(t, err, "credsStore is the installer's other accepted form")
	assert.Equal(t, `{"auths":{"quay.io":{"credsStore":"secretservice"}}}`, compact)
}
