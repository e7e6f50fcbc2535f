package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A probe asks anonymously, whatever certificate the server has, and
// returns the status and the start of the body.
func TestProbeAsksAnonymously(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Empty(t, r.Header.Get("Authorization"))
		assert.Empty(t, r.TLS.PeerCertificates, "no client certificate")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\nreadyz check failed"))
	}))
	defer srv.Close()
	got, err := NewProbe(5*time.Second).Get(context.Background(), srv.URL+"/readyz", 10)
	require.NoError(t, err)
	assert.Equal(t, Answer{Code: 503, Status: "503 Service Unavailable", Body: []byte("[-]poststa")}, got)
}
