package endpoints

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/wire"
)

// servedConfig is a config an MCS serves a pool: a full spec-3.2 config
// carrying only files, as the host's probe configs are.
func servedConfig(t *testing.T, pool string) []byte {
	t.Helper()
	data, err := ignition.Marshal(ignition.WithFiles([]ignition.File{{Path: wire.ConfigPath, Mode: 0o644, Data: []byte(`{"clusterDomain":"ocp.lab.local"}`)},
		{Path: "/etc/bootlab/" + pool, Mode: 0o600, Data: []byte(pool)}}))
	require.NoError(t, err)
	return data
}

func TestMCSStandIn(t *testing.T) {
	t.Parallel()
	boot := &MCS{Mode: MCSBootstrap, Configs: map[string][]byte{"master": servedConfig(t, "master")}, Node: "bootstrap"}
	cluster := &MCS{Mode: MCSCluster, Configs: map[string][]byte{"worker": servedConfig(t, "worker")}}
	ign := ignition.AcceptHeader
	tests := []struct {
		name       string
		h          http.Handler
		method     string
		path       string
		accept     string
		wantCode   int
		wantInBody string
	}{
		{"healthz", boot, "GET", "/healthz", "", 200, ""},
		{"master spec 3", boot, "GET", "/config/master", ign, 200, `"version":"3.2.0"`},
		{"master head", boot, "HEAD", "/config/master", ign, 200, ""},
		{"worker refused by bootstrap", boot, "GET", "/config/worker", ign, 500, `refusing to serve bootstrap configuration to pool "worker"`},
		{"infra refused by bootstrap", boot, "GET", "/config/infra", ign, 500, `pool "infra"`},
		{"curl gets spec 2.2", boot, "GET", "/config/master", "", 200, `"version":"2.2.0"`},
		{"ignition without version gets 2.2", boot, "GET", "/config/master", "application/vnd.coreos.ignition+json", 200, `"version":"2.2.0"`},
		{"old ignition 2.2", boot, "GET", "/config/master", "application/vnd.coreos.ignition+json;version=2.2.0, */*;q=0.1", 200, `"version":"2.2.0"`},
		{"unsupported version", boot, "GET", "/config/master", "application/vnd.coreos.ignition+json;version=1.0.0", 400, "unsupported"},
		{"highest q wins", boot, "GET", "/config/master", "application/vnd.coreos.ignition+json;version=2.2.0;q=0.5, application/vnd.coreos.ignition+json;version=3.2.0", 200, `"version":"3.2.0"`},
		{"post not allowed", boot, "POST", "/config/master", ign, 405, ""},
		{"other path", boot, "GET", "/foo", ign, 404, ""},
		{"cluster serves worker", cluster, "GET", "/config/worker", ign, 200, `"version":"3.2.0"`},
		{"cluster unknown pool", cluster, "GET", "/config/infra", ign, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			assert.Equal(t, tt.wantCode, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), tt.wantInBody)
			if tt.h == boot {
				assert.Equal(t, "bootstrap", rec.Header().Get(wire.NodeHeader))
			}
			if tt.wantCode == 200 && strings.HasPrefix(tt.path, "/config/") {
				assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			}
		})
	}
	assert.Equal(t, map[string][]string{"master": {"192.0.2.1"}}, boot.Served())
}

func TestSpecFromAccept(t *testing.T) {
	t.Parallel()
	for accept, want := range map[string]int{
		"": 2, "*/*": 2, ignition.AcceptHeader: 3,
		"application/vnd.coreos.ignition+json;version=3.5.0":                                                                      3,
		"application/vnd.coreos.ignition+json; version=2.4.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1": 2,
	} {
		got, err := SpecFromAccept([]string{accept})
		require.NoError(t, err, accept)
		assert.Equal(t, want, got, accept)
	}
	_, err := SpecFromAccept([]string{"application/vnd.coreos.ignition+json;version=4.0.0"})
	assert.Error(t, err)
}
