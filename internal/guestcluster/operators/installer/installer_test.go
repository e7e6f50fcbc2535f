package installer

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/pki"
)

// A missing object fails the install with its name and what creates it,
// and nothing lands in the manifests directory.
func TestInstallerNamesTheMissingObject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	inst := &Installer{Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Operand: controlplane.KubeAPIServerOperand, Source: mapSource{},
		StaticPodDir: filepath.Join(dir, "manifests"), Input: controlplane.MasterInput{ResourcesDir: dir}}
	err := inst.Install(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kube-apiserver installer stand-in: read configmaps openshift-kube-apiserver/etcd-serving-ca (the master's served config lays it down)")
	_, err = os.Stat(filepath.Join(dir, "manifests", "kube-apiserver-pod.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	inst.Operand = controlplane.KubeControllerManagerOperand
	err = inst.Install(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kube-controller-manager installer stand-in: read configmaps openshift-kube-controller-manager/controller-manager-kubeconfig (stage 13 creates it from /opt/openshift/manifests)")
	_, err = os.Stat(filepath.Join(dir, "manifests", "kube-controller-manager-pod.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

type mapSource map[string]map[string][]byte

func (m mapSource) Data(_ context.Context, kind, ns, name string) (map[string][]byte, error) {
	d, ok := m[kind+"/"+ns+"/"+name]
	if !ok {
		return nil, fmt.Errorf("%s %q not found", kind, name)
	}
	return d, nil
}

// Sources takes an object from the first source that has it: the node's
// etcd files before the API, the API for everything else, and its error
// (not "not here") when the API lacks it.
func TestSourcesTakeTheNodesEtcdFilesFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{"ca", "crt", "key"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("file "+n), 0o600))
	}
	api := mapSource{"configmaps/openshift-kube-apiserver/client-ca": {"ca-bundle.crt": []byte("api ca")},
		"secrets/openshift-kube-apiserver/etcd-client": {"tls.crt": []byte("api's, not taken")}}
	src := Sources{MasterEtcdFiles(filepath.Join(dir, "ca"), filepath.Join(dir, "crt"), filepath.Join(dir, "key")), api}
	ctx := context.Background()
	for _, tc := range []struct {
		kind, name string
		want       map[string][]byte
		err        string
	}{
		{"secrets", "etcd-client", map[string][]byte{"tls.crt": []byte("file crt"), "tls.key": []byte("file key")}, ""},
		{"configmaps", "etcd-serving-ca", map[string][]byte{"ca-bundle.crt": []byte("file ca")}, ""},
		{"configmaps", "client-ca", map[string][]byte{"ca-bundle.crt": []byte("api ca")}, ""},
		{"secrets", "kubelet-client", nil, `secrets "kubelet-client" not found`},
	} {
		got, err := src.Data(ctx, tc.kind, controlplane.MasterNamespace, tc.name)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

// A master's installer stand-in reads the cluster's networks from the
// API's Network config (what stage 13 created from the installer's
// manifest) and the gates of its FeatureGate, as the operators observe
// them; an API without them says so.
func TestAPISourceReadsTheNetworkAndFeatureGates(t *testing.T) {
	t.Parallel()
	ca, err := pki.NewCA("test")
	require.NoError(t, err)
	serving, err := pki.NewLeaf(ca, "api", nil, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	client, err := pki.NewClient(ca, "system:serviceaccount:openshift-kube-apiserver-operator:kube-apiserver-operator", []string{"system:masters"})
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	require.NoError(t, err)
	var served atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !served.Load():
			http.NotFound(w, r)
		case r.URL.Path == "/apis/config.openshift.io/v1/networks/cluster":
			fmt.Fprint(w, `{"apiVersion":"config.openshift.io/v1","kind":"Network","metadata":{"name":"cluster"},`+
				`"spec":{"clusterNetwork":[{"cidr":"10.132.0.0/14","hostPrefix":23}],"networkType":"OVNKubernetes","serviceNetwork":["172.31.0.0/16"]}}`)
		case r.URL.Path == "/apis/config.openshift.io/v1/featuregates/cluster":
			fmt.Fprint(w, `{"apiVersion":"config.openshift.io/v1","kind":"FeatureGate","metadata":{"name":"cluster"},`+
				`"status":{"featureGates":[{"version":"4.18.3","enabled":[{"name":"Old"}]},`+
				`{"version":"4.19.6","enabled":[{"name":"GatewayAPI"}],"disabled":[{"name":"DynamicResourceAllocation"}]}]}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	b64 := base64.StdEncoding.EncodeToString
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q, certificate-authority-data: %s}\n"+
		"users:\n- name: u\n  user: {client-certificate-data: %s, client-key-data: %s}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
		srv.URL, b64(ca.CertPEM), b64(client.CertPEM), b64(client.KeyPEM))), 0o600))
	src, err := NewAPISource(kc, nil)
	require.NoError(t, err)

	_, err = src.Network(context.Background())
	assert.ErrorContains(t, err, "404", "no Network before stage 13")
	served.Store(true)
	n, err := src.Network(context.Background())
	require.NoError(t, err)
	assert.Equal(t, controlplane.Network{ServiceCIDR: "172.31.0.0/16", ClusterCIDR: "10.132.0.0/14"}, n)

	// The gates are the status entry of the master's release, as the
	// operators' feature-gate accessor reads them; a release the status
	// does not list yet is an error the installer waits out.
	fg, err := src.FeatureGates(context.Background(), "4.19.6")
	require.NoError(t, err)
	assert.Equal(t, controlplane.FeatureGates{Enabled: []string{"GatewayAPI"}, Disabled: []string{"DynamicResourceAllocation"}}, fg)
	_, err = src.FeatureGates(context.Background(), "4.20.1")
	assert.ErrorContains(t, err, "no status.featureGates entry for version 4.20.1")
}
