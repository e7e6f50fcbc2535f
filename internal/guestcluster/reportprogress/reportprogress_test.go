package reportprogress

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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil"
)

// fakeAPI answers the objects wait-for-ha-api.sh reads from what the test
// sets, and records the ConfigMap report-progress.sh creates.
type fakeAPI struct {
	mu        sync.Mutex
	addresses []string
	revisions int
	created   bool
	// polls counts the rounds of the HA wait (its topology reads).
	polls int
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/apis/config.openshift.io/v1/infrastructures/cluster":
		f.polls++
		fmt.Fprint(w, `{"status":{"controlPlaneTopology":"HighlyAvailable"}}`)
	case "/api/v1/namespaces/default/endpoints/kubernetes":
		addrs := ""
		for i, a := range f.addresses {
			if i > 0 {
				addrs += ","
			}
			addrs += fmt.Sprintf(`{"ip":%q}`, a)
		}
		fmt.Fprintf(w, `{"subsets":[{"addresses":[%s],"ports":[{"port":6443}]}]}`, addrs)
	case "/apis/operator.openshift.io/v1/kubeapiservers/cluster":
		st := ""
		for i := 0; i < f.revisions; i++ {
			if i > 0 {
				st += ","
			}
			st += fmt.Sprintf(`{"nodeName":"master-%d","currentRevision":1}`, i)
		}
		fmt.Fprintf(w, `{"status":{"nodeStatuses":[%s]}}`, st)
	case "/api/v1/namespaces/kube-system/configmaps":
		f.created = true
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{}`)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAPI) set(fn func(*fakeAPI)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeAPI) rounds() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polls
}

func (f *fakeAPI) wasCreated() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.created
}

// startFake serves f over TLS and writes the assets report-progress.sh
// reads: auth/kubeconfig and .bootkube.done.
func startFake(t *testing.T, f *fakeAPI) string {
	t.Helper()
	ca, err := pki.NewCA("test")
	require.NoError(t, err)
	serving, err := pki.NewLeaf(ca, "api", nil, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	client, err := pki.NewClient(ca, "admin", []string{"system:masters"})
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(f)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	assets := t.TempDir()
	b64 := base64.StdEncoding.EncodeToString
	require.NoError(t, os.MkdirAll(filepath.Join(assets, "auth"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(assets, "auth", "kubeconfig"), []byte(fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q, certificate-authority-data: %s}\n"+
		"users:\n- name: u\n  user: {client-certificate-data: %s, client-key-data: %s}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
		srv.URL, b64(ca.CertPEM), b64(client.CertPEM), b64(client.KeyPEM))), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(assets, ".bootkube.done"), nil, 0o644))
	return assets
}

// Each release's wait-for-ha-api.sh waits for its own signal and ignores
// the other's: 4.16 and 4.17 for two addresses in the default/kubernetes
// endpoints, 4.18 on for two masters with a current kube-apiserver
// revision.
func TestTheReleaseDecidesWhatTheHAWaitCounts(t *testing.T) {
	t.Parallel()
	twoAddresses := func(f *fakeAPI) { f.addresses = []string{"192.168.126.11", "192.168.126.12"} }
	twoRevisions := func(f *fakeAPI) { f.revisions = 2 }
	for _, tc := range []struct {
		release      string
		decoy, ready func(*fakeAPI)
		says         string
	}{
		{"4.16.20", twoRevisions, twoAddresses, "Waiting for at least 2 available IP addresses for the default/kubernetes service"},
		{"4.17.12", twoRevisions, twoAddresses, "Waiting for at least 2 available IP addresses for the default/kubernetes service"},
		{"4.18.3", twoAddresses, twoRevisions, "waiting for the API on two masters"},
		{"4.19.6", twoAddresses, twoRevisions, "waiting for the API on two masters"},
	} {
		t.Run(tc.release, func(t *testing.T) {
			t.Parallel()
			f := &fakeAPI{addresses: []string{"192.168.126.11"}, revisions: 1}
			f.set(tc.decoy)
			var log testutil.SyncBuffer
			s := Service{Assets: startFake(t, f), Poll: 5 * time.Millisecond, Release: tc.release, Log: slog.New(slog.NewTextHandler(&log, nil))}
			done := make(chan error, 1)
			go func() { done <- s.Run(context.Background()) }()
			// The other release's signal alone ends nothing: twenty rounds
			// of the wait, and no ConfigMap.
			for f.rounds() < 20 {
				select {
				case err := <-done:
					t.Fatalf("%s: the wait ended on the other release's signal (%v):\n%s", tc.release, err, log.String())
				case <-time.After(5 * time.Millisecond):
				}
			}
			assert.False(t, f.wasCreated(), "%s:\n%s", tc.release, log.String())
			assert.Contains(t, log.String(), tc.says)
			f.set(tc.ready)
			require.NoError(t, <-done)
			assert.True(t, f.wasCreated(), "%s: kube-system/bootstrap created once its signal is there", tc.release)
		})
	}
}
