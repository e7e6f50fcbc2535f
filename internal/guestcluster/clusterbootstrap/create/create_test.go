package create

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A kind that is never served is retried every round until the deadline;
// the error keeps the reason it was waiting for, not the deadline's, and
// an unchanged reason is reported once, not every round.
func TestCreateRetriesUntilTheDeadline(t *testing.T) {
	t.Parallel()
	var discoveries atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis/late.example/v1" {
			discoveries.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"the server could not find the requested resource"}`))
	}))
	defer srv.Close()
	_, client := testPKI(t)
	c, err := kube.NewClient(kube.Config{Server: srv.URL, CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
		CertPEM: client.CertPEM, KeyPEM: client.KeyPEM})
	require.NoError(t, err)
	ms, err := Parse("gadget.yaml", []byte("apiVersion: late.example/v1\nkind: Gadget\nmetadata: {name: g}\n"))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var log strings.Builder
	res, err := Create(ctx, c, ms, Options{Interval: 50 * time.Millisecond, Log: &log})
	var inc *IncompleteError
	require.ErrorAs(t, err, &inc)
	assert.True(t, errors.Is(inc.Cause, context.DeadlineExceeded), "%v", inc.Cause)
	require.Len(t, inc.Failed, 1)
	want := "the API does not serve late.example/v1 (kind Gadget) yet: no CRD among the manifests defines it (another component must)"
	assert.Equal(t, want, inc.Failed[0].Reason)
	assert.Contains(t, err.Error(), `"gadget.yaml": `+want)
	assert.Greater(t, res.Rounds, 5, "retried every 50 ms for a second")
	// The round the deadline cut may not have reached the server.
	assert.InDelta(t, res.Rounds, int(discoveries.Load()), 1, "discovery asked again each round")
	assert.Equal(t, 1, strings.Count(log.String(), "failed to create some manifests"), "an unchanged round is not reported again:\n%s", log.String())
	assert.Equal(t, 1, res.Count(Failed))
}

func testPKI(t *testing.T) (ca, client pki.Pair) {
	t.Helper()
	ca, err := pki.NewCA("kubecreate-test")
	require.NoError(t, err)
	client, err = pki.NewClient(ca, "system:admin", []string{"system:masters"})
	require.NoError(t, err)
	return ca, client
}
