package etcd

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// fakeEtcdctl is a stand-in etcd for unit tests, on every endpoint: its
// v3 JSON API answers member list with members.json (refuses when absent),
// a range with configmap.json, /health unhealthy when unhealthy exists;
// its etcdctl (the changes) takes member remove. Every read and etcdctl
// run is a line of calls.
func fakeEtcdctl(t *testing.T) (Etcdctl, string) {
	t.Helper()
	dir := t.TempDir()
	var mu sync.Mutex
	logCall := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, _ = f.WriteString(line + "\n")
			_ = f.Close()
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		logCall(r.Method + " " + r.Host + r.URL.Path + " " + string(body))
		read := func(name string) ([]byte, bool) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			return b, err == nil
		}
		switch r.URL.Path {
		case "/v3/cluster/member/list":
			if b, ok := read("members.json"); ok {
				_, _ = w.Write(b)
				return
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":"etcdserver: leader changed","code":14,"message":"etcdserver: leader changed"}`)
		case "/health":
			if _, unhealthy := read("unhealthy"); unhealthy {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, `{"health":"false","reason":"RAFT NO LEADER"}`)
				return
			}
			_, _ = io.WriteString(w, `{"health":"true","reason":""}`)
		case "/v3/kv/range": // the value base64-encoded; a missing key has no kvs
			if b, ok := read("configmap.json"); ok {
				_, _ = fmt.Fprintf(w, `{"header":{},"kvs":[{"value":"%s"}],"count":"1"}`, base64.StdEncoding.EncodeToString(b))
				return
			}
			_, _ = io.WriteString(w, `{"header":{}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	api := newEtcdHTTP()
	api.dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	script := `#!/bin/bash
d=$(dirname "$0")
echo "etcdctl $*" >>"$d/calls"
args=()
for a in "$@"; do case $a in --*) ;; *) args+=("$a") ;; esac; done
case "${args[0]} ${args[1]}" in
"member remove") ;;
"member promote") sed -i 's/"isLearner":true/"isLearner":false/' "$d/members.json" ;;
*) echo "unexpected: $*" >&2; exit 2 ;;
esac
`
	bin := filepath.Join(dir, "etcdctl")
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	return Etcdctl{bin: bin, endpoints: []string{"http://10.0.0.11:2379"}, api: api}, dir
}

// The bootstrap teardown, in upstream's order: EtcdRunningInCluster once
// every master is a started voting member and healthy (stage 14's
// wait-for-ceo returns on it, the bootstrap member still there); then,
// asking only for ConfigMap kube-system/bootstrap (one serializable read),
// it removes etcd-bootstrap once progress.service wrote status complete.
func TestBootstrapTeardownStep(t *testing.T) {
	t.Parallel()
	c, dir := fakeEtcdctl(t)
	write := func(name, data string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	calls := func() string { b, _ := os.ReadFile(filepath.Join(dir, "calls")); return string(b) }
	boot := `{"ID":"171","name":"etcd-bootstrap","peerURLs":["https://10.0.0.10:2380"],"clientURLs":["http://10.0.0.10:2379"]}`
	m := func(id, name string) string {
		return `{"ID":"` + id + `","name":"` + name + `","peerURLs":["https://` + name + `:2380"],"clientURLs":["http://` + name + `:2379"]}`
	}
	all := `{"members":[` + boot + `,` + m("1", "master-0") + `,` + m("2", "master-1") + `,` + m("3", "master-2") + `]}`
	ctx := context.Background()

	write("configmap.json", `{"kind":"ConfigMap","data":{"status":"complete"}}`)
	write("members.json", `{"members":[`+boot+`,`+m("1", "master-0")+`,{"ID":"2","peerURLs":["https://x:2380"],"isLearner":true}]}`)
	st, why := bootstrapTeardownStep(ctx, c, 4, false)
	assert.Equal(t, tdWaiting, st)
	assert.Contains(t, why, "every master to be a started voting member")

	write("members.json", `{"members":[`+boot+`,`+m("1", "master-0")+`,`+m("2", "master-1")+`]}`)
	st, why = bootstrapTeardownStep(ctx, c, 4, false)
	assert.Equal(t, tdWaiting, st)
	assert.Contains(t, why, "still waiting for 4 etcd members")

	write("members.json", all)
	write("unhealthy", "")
	st, why = bootstrapTeardownStep(ctx, c, 4, false)
	assert.Equal(t, tdWaiting, st)
	assert.Contains(t, why, "healthy")
	require.NoError(t, os.Remove(filepath.Join(dir, "unhealthy")))

	// Enough healthy members: running, and nothing removed even though the
	// ConfigMap says complete: the first step that finds them reports
	// EtcdRunningInCluster.
	st, why = bootstrapTeardownStep(ctx, c, 4, false)
	assert.Equal(t, tdRunning, st)
	assert.Contains(t, why, "EtcdRunningInCluster")
	assert.NotContains(t, calls(), "member remove")
	for _, m := range []string{"master-0", "master-1", "master-2"} {
		assert.Contains(t, calls(), "GET "+m+":2379/health", "each master's member is checked")
	}
	assert.NotContains(t, calls(), "10.0.0.10:2379/health", "the bootstrap's member is not checked")

	// Running, until the ConfigMap says complete: one read each step.
	write("configmap.json", `{"kind":"ConfigMap","data":{"status":"pending"}}`)
	require.NoError(t, os.Remove(filepath.Join(dir, "calls")))
	st, why = bootstrapTeardownStep(ctx, c, 4, true)
	assert.Equal(t, tdRunning, st)
	assert.Contains(t, why, "progress.service writes it after stage 15")
	assert.Equal(t, 1, strings.Count(calls(), "\n"), "one read while bootstrap is not complete: %s", calls())
	key := base64.StdEncoding.EncodeToString([]byte("/kubernetes.io/configmaps/kube-system/bootstrap"))
	assert.Contains(t, calls(), `POST 10.0.0.11:2379/v3/kv/range {"key":"`+key+`","serializable":true}`, "a serializable read of this master's member")

	write("configmap.json", `{"kind":"ConfigMap","data":{"status":"complete"}}`)
	st, why = bootstrapTeardownStep(ctx, c, 4, true)
	assert.Equal(t, tdRemoved, st)
	assert.Equal(t, "removed the etcd-bootstrap member ab", why)
	assert.Contains(t, calls(), "etcdctl --endpoints=http://10.0.0.11:2379 --dial-timeout=3s --command-timeout=5s member remove ab")

	write("members.json", `{"members":[`+m("1", "master-0")+`,`+m("2", "master-1")+`,`+m("3", "master-2")+`]}`)
	st, why = bootstrapTeardownStep(ctx, c, 4, false)
	assert.Equal(t, tdRemoved, st)
	assert.Equal(t, "the etcd-bootstrap member is removed", why)
	assert.Equal(t, 1, strings.Count(calls(), "member remove"))
}

// The master's etcd pod joins the existing cluster with every member the
// add returned, itself named for the unstarted one.
func TestWriteMasterEtcdPod(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	self := wire.NodeExpect{Name: "master-1", IP: "192.168.126.12"}
	ms := []Member{
		{Name: "etcd-bootstrap", PeerURLs: []string{"https://192.168.126.10:2380"}},
		{Name: "master-0", PeerURLs: []string{"https://192.168.126.11:2380"}},
		{PeerURLs: []string{"https://192.168.126.12:2380"}, IsLearner: true},
	}
	require.NoError(t, writeMasterEtcdPod(dir, self, ms, ""))
	pod, err := readPod(filepath.Join(dir, "etcd-pod.yaml"))
	require.NoError(t, err)
	c := pod.Spec.Containers[0]
	assert.Contains(t, c.Args, "--initial-cluster=etcd-bootstrap=https://192.168.126.10:2380,master-0=https://192.168.126.11:2380,master-1=https://192.168.126.12:2380")
	assert.Contains(t, c.Args, "--initial-cluster-state=existing")
	assert.Equal(t, ReleaseEnv(), c.Env, "a master's member gets the release's environment too")
	argv := kubelet.HostArgs(pod, c, append(c.Command, c.Args...))
	assert.Contains(t, argv, "--cert-file="+wire.EtcdAllCertsDir+"/etcd-serving-master-1.crt", "the kubelet stand-in maps the pod's mounts to the host")
	assert.Contains(t, argv, "--peer-trusted-ca-file="+wire.EtcdCABundle)
}

func readPod(p string) (corev1.Pod, error) {
	var pod corev1.Pod
	data, err := os.ReadFile(p)
	if err != nil {
		return pod, err
	}
	return pod, yaml.Unmarshal(data, &pod)
}

func TestEtcdTimeoutsFollowTheHardwareSpeed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kvm := filepath.Join(dir, "kvm")
	tcg := filepath.Join(dir, "tcg")
	require.NoError(t, os.WriteFile(kvm, []byte("kvm-clock tsc hpet acpi_pm \n"), 0o644))
	require.NoError(t, os.WriteFile(tcg, []byte("tsc-early hpet acpi_pm \n"), 0o644))
	assert.False(t, softwareEmulated(kvm), "a KVM guest has kvm-clock")
	assert.True(t, softwareEmulated(tcg), "a TCG guest has no kvm-clock")
	assert.False(t, softwareEmulated(filepath.Join(dir, "missing")), "no sysfs counts as hardware")

	env := func(slower bool) map[string]string {
		m := map[string]string{}
		for _, e := range etcdEnvFor(slower) {
			m[e.Name] = e.Value
		}
		return m
	}
	standard, slower := env(false), env(true)
	assert.Equal(t, "100", standard["ETCD_HEARTBEAT_INTERVAL"])
	assert.Equal(t, "1000", standard["ETCD_ELECTION_TIMEOUT"])
	assert.Equal(t, "500", slower["ETCD_HEARTBEAT_INTERVAL"], "the operator's Slower hardware speed")
	assert.Equal(t, "2500", slower["ETCD_ELECTION_TIMEOUT"])
	assert.Equal(t, standard["ETCD_QUOTA_BACKEND_BYTES"], slower["ETCD_QUOTA_BACKEND_BYTES"], "only the timeouts differ")
}

// The operator is a pod of the cluster: it adds no member before the
// cluster's API answers, and says what it waits for, once per reason.
func TestEtcdOperatorWaitsForTheClusterAPI(t *testing.T) {
	t.Parallel()
	var said []string
	o := &Operator{Poll: time.Millisecond, Report: func(p Progress, detail string) {
		assert.Equal(t, Waiting, p)
		said = append(said, detail)
	}}
	asks := 0
	o.APIReady = func(context.Context) error {
		asks++
		if asks < 4 {
			return errors.New("GET https://api-int.lab.example:6443/readyz: connection refused")
		}
		return nil
	}
	require.True(t, o.waitAPI(context.Background()))
	assert.Equal(t, 4, asks)
	require.Len(t, said, 1, "one report per reason: %v", said)
	assert.Contains(t, said[0], "waiting for the cluster's API (stage 13 starts the bootstrap's)")
	assert.Contains(t, said[0], "connection refused")

	long := errors.New("GET https://api-int.lab.example:6443/readyz: 500 Internal Server Error " + strings.Repeat("[+]ping ok ", 40) + "\n[-]poststarthook/rbac/bootstrap-roles failed: reason withheld")
	said = nil
	o.APIReady = func(context.Context) error { return long }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.False(t, o.waitAPI(ctx), "gives up when its context ends")
	require.Len(t, said, 1)
	assert.Less(t, len(said[0]), 500, "a long /readyz answer is cut to its first line's start: %s", said[0])
	assert.Contains(t, said[0], "500 Internal Server Error")

	o.APIReady = func(context.Context) error { return errors.New("not yet") }
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.False(t, o.waitAPI(ctx), "gives up when its context ends")

	assert.True(t, (&Operator{}).waitAPI(context.Background()), "without a wait it joins at once")
}

// A member started on an earlier boot has its pod in the static pod
// directory and member/ in its data directory; either missing is a first
// boot (the add path).
func TestStartedBeforeNeedsThePodAndTheMemberData(t *testing.T) {
	t.Parallel()
	o := &Operator{PodDir: t.TempDir(), DataDir: t.TempDir()}
	assert.False(t, o.startedBefore(), "nothing kept")
	require.NoError(t, os.WriteFile(filepath.Join(o.PodDir, etcdPodFile), []byte("kind: Pod\n"), 0o644))
	assert.False(t, o.startedBefore(), "the pod, but no member data: etcd never started")
	require.NoError(t, os.Mkdir(filepath.Join(o.DataDir, "member"), 0o700))
	assert.True(t, o.startedBefore())
	require.NoError(t, os.Remove(filepath.Join(o.PodDir, etcdPodFile)))
	assert.False(t, o.startedBefore(), "data but no pod: the operator lands the pod again")
}

// A master that went down as a learner, before its promotion, is promoted
// when it is back (nothing is added); then it reports joined.
func TestResumePromotesALearnerThatRebooted(t *testing.T) {
	t.Parallel()
	c, dir := fakeEtcdctl(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "members.json"), []byte(`{"members":[`+
		`{"ID":"1","name":"etcd-bootstrap","peerURLs":["https://10.0.0.10:2380"],"clientURLs":["https://10.0.0.10:2379"]},`+
		`{"ID":"2","name":"master-0","peerURLs":["https://10.0.0.11:2380"],"clientURLs":["https://10.0.0.11:2379"],"isLearner":true}]}`), 0o644))
	var last Progress
	var said []string
	o := &Operator{Log: slog.New(slog.DiscardHandler), Poll: time.Millisecond, Report: func(p Progress, detail string) { last, said = p, append(said, detail) }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o.Resume(ctx, wire.NodeExpect{Name: "master-0", IP: "10.0.0.11"}, c, false, nil)
	require.NoError(t, ctx.Err(), "Resume returned on its own: %v", said)
	assert.Equal(t, Joined, last)
	calls, err := os.ReadFile(filepath.Join(dir, "calls"))
	require.NoError(t, err)
	assert.Contains(t, string(calls), "member promote 2")
	assert.NotContains(t, string(calls), "member add", "nothing added")
	assert.NotContains(t, string(calls), "member remove", "nothing removed")
}
