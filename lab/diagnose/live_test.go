package diagnose

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A bootstrap gathered while it runs names no failure and says how far
// it got: not healthy, not failed.
func TestNotCompleteSaysWhereItStands(t *testing.T) {
	t.Parallel()
	r, _ := diagnoseFixture(t, inProgress(t), "in-progress.tar.gz")
	require.True(t, r.OK, r.Summary())
	assert.False(t, r.Healthy)
	assert.False(t, r.Complete)
	assert.Equal(t, "wait-for-etcd", r.Reached)
	assert.Contains(t, r.Summary(), "no check failed: the bootstrap has reached stage wait-for-etcd and bootkube.service has not completed")

	r, _ = diagnoseFixture(t, healthy(t), "healthy.tar.gz")
	assert.True(t, r.Complete)
	assert.Regexp(t, `^healthy: all \d+ checks passed$`, r.Summary())
	assert.Nil(t, r.Check("dns.names"), "a bundle has no dns.names: that check is a running lab's")
}

// stage12 is a bootlab bundle, held in memory as a live collection holds
// it, of a bootstrap at stage 12: mco-bootstrap done (the stage after it
// started), cluster-bootstrap not started, so the API frontend has no server up, whose haproxy state is
// given.
func stage12(t *testing.T, apiUp bool, lines ...string) *Bundle {
	t.Helper()
	b := NewBundle("demo")
	b.Live = true
	add := func(rel string, data []byte) { require.NoError(t, b.Add(rel, "", data)) }
	add("bootlab/lab.json", labJSON())
	status := "DOWN"
	if apiUp {
		status = "UP"
	}
	var backends []map[string]string
	for i, n := range append([]string{"bootstrap"}, masterName...) {
		ip := bootIP
		if i > 0 {
			ip = masterIPs[i-1]
		}
		backends = append(backends,
			map[string]string{"frontend": "api", "server": n, "address": ip + ":6443", "status": status, "lastCheck": "L4CON"},
			map[string]string{"frontend": "machine-config", "server": n, "address": ip + ":22623", "status": "UP", "lastCheck": "L7OK 200"})
	}
	lb, err := json.Marshal(map[string]any{"running": true, "backends": backends})
	require.NoError(t, err)
	add("bootlab/loadbalancer.json", lb)
	bk := append([]entry{start(at(1, 0))}, stagesUpTo("cco-bootstrap")...)
	add("bootstrap/services/bootkube.json", records(bk...))
	j := &journal{host: "bootstrap", ident: "bootkube.sh", pid: 2201}
	for i, l := range lines {
		j.at(at(2, i), "%s", l)
	}
	add("bootstrap/journals/bootkube.log", j.bytes())
	for _, ip := range masterIPs {
		b.AddDir("control-plane/" + ip)
	}
	return b
}

// The API frontend with no server up is not a fault before
// cluster-bootstrap starts the API; it is once it has.
func TestLoadBalancerWaitsForTheAPI(t *testing.T) {
	t.Parallel()
	r := Diagnose(stage12(t, false, "Starting etcd..."), Options{Now: gathered})
	lb := r.Check("api.lb")
	require.NotNil(t, lb)
	assert.Equal(t, Unknown, lb.State, lb.Detail)
	assert.Contains(t, lb.Detail, "no backend of the api frontend (6443) is up yet: the API starts with cluster-bootstrap")
	assert.Equal(t, "mco-bootstrap", r.Reached, "the last stage that ended in success")
	assert.True(t, r.Live)

	r = Diagnose(stage12(t, false, "Starting etcd...", "Starting cluster-bootstrap..."), Options{Now: gathered})
	lb = r.Check("api.lb")
	assert.Equal(t, Failed, lb.State, lb.Detail)
	assert.Contains(t, lb.Detail, "no backend of the api frontend (6443) is up:")

	r = Diagnose(stage12(t, true, "Starting etcd..."), Options{Now: gathered})
	assert.Equal(t, Passed, r.Check("api.lb").State, r.Check("api.lb").Detail)
}

// A bootlab bundle whose bootstrap keeps bootkube's record but none of
// release-image.service (a rehearsal bootstrap plays it as stage 02) is
// judged from the journals, as one without records; an installer's bundle
// without the record is the installer's own failure.
func TestReleaseImageWithoutItsRecord(t *testing.T) {
	t.Parallel()
	b := stage12(t, false, "Starting etcd...")
	require.NoError(t, b.Add("bootstrap/journals/release-image.log", "", []byte("May 14 10:00:05 bootstrap release-image-download.sh[100]: Pulling quay.io/openshift-release-dev/ocp-release@sha256:abc...\n")))
	c := Diagnose(b, Options{Now: gathered}).Check("service.release-image")
	assert.Equal(t, Passed, c.State, c.Detail)
	assert.Contains(t, c.Detail, "bootkube.service ran")

	f := inProgress(t)
	f.del("bootstrap/services/release-image.json")
	r, _ := diagnoseFixture(t, f, "no-release-image-record.tar.gz")
	assert.Equal(t, Failed, r.Check("service.release-image").State, "the installer's bundle: the installer's own verdict")
}

// Without bootlab/live.json (any bundle) there are no tries: no dns.names,
// and the connection rows are the logs' as before.
func TestBundleHasNoLiveChecks(t *testing.T) {
	t.Parallel()
	r := Diagnose(stage12(t, false), Options{Now: gathered})
	assert.Nil(t, r.Check("dns.names"))
	for _, u := range r.CouldNotSee {
		assert.NotContains(t, u.Why, "not tried live", fmt.Sprint(u))
	}
}

// A node read within a minute of this host passes (an emulated node's
// clock drifts that far on its own); one further off fails, ahead or
// behind.
func TestMeasuredSkewAllowsAnEmulatorsDrift(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		skew time.Duration
		want State
	}{{25 * time.Second, Passed}, {-25 * time.Second, Passed}, {2 * time.Minute, Failed}, {-2 * time.Minute, Failed}} {
		f := healthy(t)
		f.set("bootlab/clocks.json", clocksJSON(tc.skew))
		r, _ := diagnoseFixture(t, f, "skew.tar.gz")
		c := r.Check("clock.skew")
		assert.Equal(t, tc.want, c.State, "%s: %s", tc.skew, c.Detail)
	}
}
