package labcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certv1 "k8s.io/api/certificates/v1"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/cluster"
)

// `lab up` refuses a malformed or missing pull secret before anything runs:
// no libvirt connection, no preflight, no lab key, no lab directory.
func TestUpRejectsBadPullSecretBeforeAnything(t *testing.T) {
	s, dir := fakeLab(t)
	s.Libvirt.URI = "test:///default"
	data, err := s.Marshal()
	require.NoError(t, err)
	specFile := filepath.Join(dir, "bootlab.yaml")
	require.NoError(t, os.WriteFile(specFile, data, 0o644))
	calls := filepath.Join(dir, "calls")
	t.Setenv("FAKE_INSTALLER_LOG", calls)

	for name, c := range map[string]struct{ content, want string }{
		"malformed": {`{"auths":{"quay.io":{"auth":"bm9jb2xvbg=="}}}`, `does not decode to "user:password"`},
		"truncated": {`{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}`, "is not valid JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(s.OpenShift.PullSecretFile, []byte(c.content), 0o600))
			var errOut bytes.Buffer
			f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &bytes.Buffer{}, ErrOut: &errOut}, Status: status.New(&errOut, false)}
			cmd := NewCmdUp(f, nil)
			cmd.SetArgs([]string{"-f", specFile, "--no-preflight"})
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), s.OpenShift.PullSecretFile, "the error names the file")
			assert.NotContains(t, err.Error(), "dXNlcjpwYXNz", "the error never quotes the secret")
			assert.Equal(t, cmdutil.ExitInvalid, cmdutil.ExitCodeOf(err))
			assert.NoDirExists(t, s.LabDir, "no lab key, no lab directory")
			assert.NoFileExists(t, calls, "openshift-install never ran")
			assert.Empty(t, errOut.String(), "no step started")
		})
	}
}

// `approve-csrs --watch` outlives the API going away for a while (it does,
// while the control plane rolls out): it says so once and keeps looking.
func TestApproveCSRsWatchSurvivesAPIErrors(t *testing.T) {
	list := certv1.CertificateSigningRequestList{Items: []certv1.CertificateSigningRequest{
		csrObject(t, "csr-w0", cluster.SignerKubeletClient, cluster.NodeBootstrapper, "system:node:worker-0", []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth}),
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	lists, puts := 0, 0
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPut {
			puts++
			io.Copy(w, r.Body)
			list.Items[0].Status.Conditions = []certv1.CertificateSigningRequestCondition{{Type: certv1.CertificateApproved, Status: "True"}}
			return
		}
		if puts > 0 {
			cancel() // approved and listed: the watch may end
		}
		lists++
		if lists <= 2 {
			http.Error(w, `{"message":"the server is currently unable to handle the request"}`, http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(list)
	}))
	defer ts.Close()
	api := &cluster.Client{Server: ts.URL, HTTP: ts.Client()}
	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &out, ErrOut: &errOut}, Status: status.New(&errOut, false)}
	nodes := []cluster.LabNode{{Name: "worker-0", FQDN: "worker-0.ocp.lab.local", IP: "192.168.126.20"}}
	err := approveCSRs(ctx, f, &ApproveCSRsOptions{Output: "table", Watch: true, Interval: time.Millisecond}, clusterCSRs{api, nodes})
	require.NoError(t, err, errOut.String())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, puts, "the CSR was approved once the API answered")
	assert.Equal(t, 1, strings.Count(errOut.String(), "still watching"), "the same error is told once: %s", errOut.String())
	assert.Contains(t, errOut.String(), "HTTP 503")
	assert.Regexp(t, `csr-w0\s+.*approved`, out.String())

	// Without --watch an API error is the command's error.
	lists = 0
	mu.Unlock()
	err = approveCSRs(context.Background(), f, &ApproveCSRsOptions{Output: "table"}, clusterCSRs{api, nodes})
	mu.Lock()
	assert.ErrorContains(t, err, "HTTP 503")
}
