package verify

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// fakeAPI answers GETs from a map of path -> JSON (or the raw body for
// *string); any other path is an error.
type fakeAPI map[string]string

func (f fakeAPI) Get(_ context.Context, path string, out any) error {
	body, ok := f[path]
	if !ok {
		return errors.New("GET " + path + ": HTTP 404: not found")
	}
	if s, ok := out.(*string); ok {
		*s = body
		return nil
	}
	return json.Unmarshal([]byte(body), out)
}

func states(rs []check.Result) map[string]check.State {
	out := map[string]check.State{}
	for _, r := range rs {
		out[r.Name] = r.State
	}
	return out
}

// Before stage 13 the API checks are pending and the API is not opened;
// after it they count, the masters' Ready only after stage 14 and
// kube-system/bootstrap (progress.service's) only after stage 15.
func TestAPIChecksFollowTheStages(t *testing.T) {
	t.Parallel()
	s := rehearsalSpec(t)
	lbc := loadbalancer.LabConfig(s, false)
	opened := 0
	api := fakeAPI{
		"/readyz": "ok",
		"/api/v1/namespaces/kube-system/configmaps/bootstrap": `{"metadata":{"name":"bootstrap","creationTimestamp":"2026-11-26T10:00:00Z"},"data":{"status":"complete"}}`,
		"/api/v1/nodes": `{"items":[{"metadata":{"name":"master-0"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}]}`,
	}
	open := func(context.Context) (KubeAPI, KubeAPI, error) { opened++; return api, api, nil }

	rs := apiChecks(context.Background(), s, map[int]bool{12: true}, open, lbc)
	require.Len(t, rs, 4)
	for _, r := range rs {
		assert.Equal(t, check.StatePending, r.State, r.Name)
		assert.Equal(t, HostGroup, r.Group)
		assert.Contains(t, r.Fix, "`bootlab stage run --to 1")
	}
	assert.Contains(t, rs[0].Detail, "waits for stage 13")
	assert.Contains(t, rs[2].Detail, "waits for stage 15: after .bootkube.done progress.service")
	assert.Contains(t, rs[3].Detail, "waits for stage 14")
	assert.Zero(t, opened, "nothing to read before stage 13")

	rs = apiChecks(context.Background(), s, map[int]bool{12: true, 13: true}, open, lbc)
	assert.Equal(t, map[string]check.State{"api /readyz": check.StatePassed, "api-int /readyz": check.StatePassed,
		"configmap kube-system/bootstrap": check.StatePending, "nodes Ready": check.StatePending}, states(rs))
	assert.Contains(t, rs[0].Detail, "ok, haproxy not running", "which backend serves: haproxy is not running here")
	assert.Equal(t, 1, opened, "opened once for all checks")
	rs = apiChecks(context.Background(), s, map[int]bool{13: true, 14: true, 15: true}, open, lbc)
	assert.Equal(t, "status: complete (created 2026-11-26T10:00:00Z)", rs[2].Detail)

	rs = apiChecks(context.Background(), s, map[int]bool{13: true, 14: true}, open, lbc)
	assert.Equal(t, check.StatePassed, rs[3].State, rs[3].Detail)
	assert.Equal(t, "master-0 Ready", rs[3].Detail)

	delete(api, "/api/v1/namespaces/kube-system/configmaps/bootstrap")
	api["/readyz"] = "[-]etcd failed"
	api["/api/v1/nodes"] = `{"items":[{"metadata":{"name":"master-0"},"status":{"conditions":[{"type":"Ready","status":"False"}]}}]}`
	rs = apiChecks(context.Background(), s, map[int]bool{13: true, 14: true, 15: true}, open, lbc)
	for _, r := range rs {
		assert.Equal(t, check.StateFailed, r.State, r.Name)
		assert.NotEmpty(t, r.Fix, r.Name)
	}
	assert.Contains(t, rs[0].Detail, `/readyz says "[-]etcd failed"`)
	assert.Equal(t, "not Ready: master-0 (Ready: none)", rs[3].Detail)

	broken := func(context.Context) (KubeAPI, KubeAPI, error) { return nil, nil, errors.New("ssh: no route") }
	rs = apiChecks(context.Background(), s, map[int]bool{13: true}, broken, lbc)
	assert.Equal(t, check.StateFailed, rs[0].State)
	assert.Equal(t, "cannot open the API: ssh: no route", rs[0].Detail)
	assert.Equal(t, check.StatePending, rs[3].State)
}

// The clients are opened until it works once, then kept for the run.
func TestKeepClients(t *testing.T) {
	t.Parallel()
	assert.Nil(t, keepClients(nil))
	calls := 0
	open := keepClients(func(context.Context) (KubeAPI, KubeAPI, error) {
		calls++
		if calls == 1 {
			return nil, nil, errors.New("not yet")
		}
		return fakeAPI{}, fakeAPI{}, nil
	})
	_, _, err := open(context.Background())
	require.Error(t, err)
	for range 3 {
		a, _, err := open(context.Background())
		require.NoError(t, err)
		assert.NotNil(t, a)
	}
	assert.Equal(t, 2, calls)
}
