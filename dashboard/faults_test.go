package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The trainer's view lists the faults set on each lab, behind the
// trainer's token; the learners' endpoints never carry a fault's name.
func TestTrainerViewShowsTheFaultsTheLearnersDoNotSee(t *testing.T) {
	t.Parallel()
	home, hv := fixtureHome(t, 2)
	at := time.Now().Add(-12 * time.Minute).UTC().Truncate(time.Second)
	record := `{"active":[{"name":"trainer-fault-x","at":"` + at.Format(time.RFC3339) + `"}]}`
	require.NoError(t, os.WriteFile(filepath.Join(home, "labs", "ux1", "faults.json"), []byte(record), 0o600))
	c := &Collector{Home: home, Connect: connector(hv)}
	defer c.Close()
	srv := New(Options{Source: c, TrainerToken: "trainer-secret", Faults: c})
	_, err := srv.Refresh(context.Background())
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	for _, p := range []string{"/api/labs", "/api/labs/ux1", "/api/hosts"} {
		code, body := get(t, ts.URL+p)
		require.Equal(t, http.StatusOK, code, p)
		assert.NotContains(t, body, "trainer-fault-x", "%s is the learners' view", p)
	}
	code, body := get(t, ts.URL+"/api/trainer/faults")
	assert.Equal(t, http.StatusForbidden, code, body)
	assert.NotContains(t, body, "trainer-fault-x")
	code, body = get(t, ts.URL+"/api/trainer/faults?trainer=trainer-secret")
	require.Equal(t, http.StatusOK, code, body)
	var doc struct {
		Faults []FaultView `json:"faults"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	require.Len(t, doc.Faults, 1, body)
	f := doc.Faults[0]
	assert.Equal(t, "ux1", f.Lab)
	assert.Equal(t, "trainer-fault-x", f.Name)
	assert.True(t, f.BrokenAt.Equal(at), "%s", f.BrokenAt)
	assert.GreaterOrEqual(t, f.Minutes, 12)

	// A dashboard built without the trainer's token has no such view.
	plain := httptest.NewServer(New(Options{Source: c}).Handler())
	defer plain.Close()
	code, _ = get(t, plain.URL+"/api/trainer/faults?trainer=trainer-secret")
	assert.Equal(t, http.StatusNotFound, code)
}
