package kubelet

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/bootlab/bootlab/internal/guestcluster/journal"
)

// testKubelet is a kubelet stand-in watching dir, its state and pod logs
// in directories of the test's own.
func testKubelet(t *testing.T, dir string) *Kubelet {
	t.Helper()
	return &Kubelet{log: slog.New(slog.DiscardHandler), dir: dir, state: filepath.Join(t.TempDir(), "kubelet.json"), logs: t.TempDir(), pods: map[string]*runningPod{}}
}

// A manifest that lands starts its program, one removed stops it; a pod
// whose program the node lacks is recorded as not run.
func TestKubeletStandIn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := testKubelet(t, dir)
	pod := `apiVersion: v1
kind: Pod
metadata: {name: sleeper, namespace: test}
spec:
  hostNetwork: true
  containers:
  - name: sleep
    image: example
    command: ["sleep"]
    args: ["300"]
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sleeper.yaml"), []byte(pod), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.yaml"), []byte(strings.ReplaceAll(pod, `["sleep"]`, `["no-such-program"]`)), 0o644))
	k.sync()
	rp := k.pods[filepath.Join(dir, "sleeper.yaml")]
	require.NotNil(t, rp)
	require.True(t, rp.state.Running, rp.state.Detail)
	pid := rp.state.PID
	other := k.pods[filepath.Join(dir, "other.yaml")]
	require.NotNil(t, other)
	assert.False(t, other.state.Running)
	assert.Contains(t, other.state.Detail, "not run")

	require.NoError(t, os.Remove(filepath.Join(dir, "sleeper.yaml")))
	k.sync()
	assert.Nil(t, k.pods[filepath.Join(dir, "sleeper.yaml")])
	assert.Error(t, syscall.Kill(pid, 0), "the process is gone")
	data, err := os.ReadFile(k.state)
	require.NoError(t, err)
	assert.Contains(t, string(data), "other.yaml", "crictl's state lists what is recorded")
	assert.NotContains(t, string(data), "sleeper.yaml")
}

// A container the agent plays (the MCS) starts when its pod lands and
// stops when the manifest goes.
func TestKubeletPlaysServices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started, stopped := 0, 0
	k := &Kubelet{log: slog.New(slog.DiscardHandler), dir: dir, state: filepath.Join(t.TempDir(), "k.json"), logs: t.TempDir(), pods: map[string]*runningPod{},
		services: map[string]Service{
			"machine-config-server": func(corev1.Pod, corev1.Container, io.Writer) (func(), error) {
				started++
				return func() { stopped++ }, nil
			},
		}}
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: bootstrap-machine-config-operator, namespace: openshift-machine-config-operator}\nspec:\n  hostNetwork: true\n  containers:\n  - name: machine-config-server\n    command: [/usr/bin/machine-config-server]\n"
	p := filepath.Join(dir, "machineconfigoperator-bootstrap-pod.yaml")
	require.NoError(t, os.WriteFile(p, []byte(pod), 0o644))
	k.sync()
	k.sync()
	assert.Equal(t, 1, started, "started once")
	assert.True(t, k.pods[p].state.Running)
	require.NoError(t, os.Remove(p))
	k.sync()
	assert.Equal(t, 1, stopped)
	assert.Empty(t, k.pods)
}

func TestCrashBackoff(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 5*time.Second, crashBackoff(0))
	assert.Equal(t, 20*time.Second, crashBackoff(2))
	assert.Equal(t, 5*time.Minute, crashBackoff(30))
}

// A pod whose program is still to come (the Kubernetes volume not mounted
// yet) waits and says why, and starts once the program is on PATH; the
// agent's stand-in plays it only when the program will not come.
func TestKubeletWaitsForPendingPrograms(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	dir := t.TempDir()
	pending, played := "waiting for the Kubernetes volume", 0
	k := (&Kubelet{log: slog.New(slog.DiscardHandler), dir: dir, state: filepath.Join(t.TempDir(), "k.json"), logs: t.TempDir(), pods: map[string]*runningPod{},
		services: map[string]Service{
			"kube-apiserver": func(corev1.Pod, corev1.Container, io.Writer) (func(), error) { played++; return func() {}, nil },
		}}).WithPending(func(program string) string {
		if program == "fake-apiserver" {
			return pending
		}
		return ""
	})
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: bootstrap-kube-apiserver, namespace: openshift-kube-apiserver}\nspec:\n  hostNetwork: true\n  containers:\n  - name: kube-apiserver\n    command: [fake-apiserver]\n    args: [\"300\"]\n"
	p := filepath.Join(dir, "kube-apiserver-pod.yaml")
	require.NoError(t, os.WriteFile(p, []byte(pod), 0o644))
	k.sync()
	require.NotNil(t, k.pods[p])
	assert.False(t, k.pods[p].state.Running)
	assert.Equal(t, "not started yet: waiting for the Kubernetes volume", k.pods[p].state.Detail)
	assert.Zero(t, played, "the stand-in does not take a pod whose program is still to come")

	// The volume mounts: the program is on PATH, the next sync runs it.
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(sleep, filepath.Join(bin, "fake-apiserver")))
	k.sync()
	rp := k.pods[p]
	require.True(t, rp.state.Running, rp.state.Detail)
	pid := rp.state.PID
	assert.Zero(t, played)
	st, ok := k.Process("kube-apiserver")
	assert.True(t, ok, "the process runs kube-apiserver")
	assert.Equal(t, pid, st.PID)
	require.NoError(t, os.Remove(p))
	k.sync()
	assert.Error(t, syscall.Kill(pid, 0), "the process is gone")

	// No volume on this node: the program never comes, the stand-in plays it.
	require.NoError(t, os.Remove(filepath.Join(bin, "fake-apiserver")))
	pending = ""
	require.NoError(t, os.WriteFile(p, []byte(pod), 0o644))
	k.sync()
	assert.Equal(t, 1, played)
	assert.Equal(t, "played by the bootlab agent", k.pods[p].state.Detail)
	_, ok = k.Process("kube-apiserver")
	assert.False(t, ok, "a container the agent plays is no process of the node")
}

// $(NAME) in a container's args takes NAME's value, the downward API's
// host IP included, as the kubelet expands them.
func TestExpandArgsAndDownwardAPI(t *testing.T) {
	t.Parallel()
	k := (&Kubelet{}).WithHostIP("192.168.126.10")
	c := corev1.Container{Env: []corev1.EnvVar{
		{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "LEVEL", Value: "2"},
	}}
	env := k.containerEnv(c)
	assert.Equal(t, []string{"HOST_IP=192.168.126.10", "LEVEL=2"}, env)
	assert.Equal(t, []string{"kube-apiserver", "--advertise-address=192.168.126.10", "--v=2", "--x=$(UNSET)"},
		expandArgs([]string{"kube-apiserver", "--advertise-address=$(HOST_IP)", "--v=$(LEVEL)", "--x=$(UNSET)"}, env))
}

// A container that exits says why in its pod's state: the last line of
// its log, as a kubelet's FallbackToLogsOnError termination message.
func TestExitedContainerSaysWhy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := testKubelet(t, dir)
	pod := `apiVersion: v1
kind: Pod
metadata: {name: failer, namespace: test}
spec:
  containers:
  - name: fail
    image: example
    command: ["sh"]
    args: ["-c", "echo starting; echo 'failed to wait for apiserver being healthy' >&2; exit 1"]
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "failer.yaml"), []byte(pod), 0o644))
	k.sync()
	rp := k.pods[filepath.Join(dir, "failer.yaml")]
	require.NotNil(t, rp)
	select {
	case <-rp.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the container did not exit")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	assert.Equal(t, "exited: exit status 1: failed to wait for apiserver being healthy", rp.state.Detail)
}

// A container's output lands in its log where the kubelet has the runtime
// keep it, <ns>_<name>_<uid>/<container>/<attempt>.log, in the CRI log
// format; crio.service's journal says it was created and started, and
// ReadLog gives back what the container wrote, stream by stream.
func TestContainerLogIsCRIFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := testKubelet(t, dir)
	jdir := t.TempDir()
	k.WithCRIOJournal(journal.NewWriter(jdir, "crio.service", "crio", 1))
	pod := `apiVersion: v1
kind: Pod
metadata: {name: talker, namespace: test}
spec:
  containers:
  - name: talk
    image: example
    command: ["sh"]
    args: ["-c", "echo out one; echo err one >&2; printf 'no newline'"]
`
	p := filepath.Join(dir, "talker.yaml")
	require.NoError(t, os.WriteFile(p, []byte(pod), 0o644))
	k.sync()
	rp := k.pods[p]
	require.NotNil(t, rp)
	<-rp.done
	k.mu.Lock()
	st := rp.state
	k.mu.Unlock()
	assert.Len(t, st.ID, 64)
	assert.Len(t, st.PodID, 64)
	assert.Equal(t, filepath.Join(k.logs, "test_talker_"+st.UID, "talk", "0.log"), st.LogPath)
	assert.Equal(t, staticPodUID([]byte(pod), p), st.UID, "the UID is the manifest's and the file's")
	data, err := os.ReadFile(st.LogPath)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 3, string(data))
	for _, l := range lines {
		_, err := ParseLogLine([]byte(l))
		assert.NoError(t, err, l)
	}
	assert.Contains(t, string(data), " stdout F out one\n")
	assert.Contains(t, string(data), " stderr F err one\n")
	assert.Contains(t, string(data), " stdout F no newline\n", "a last line without newline is a full line when the stream ends")

	var out, errs strings.Builder
	require.NoError(t, ReadLog(t.Context(), st.LogPath, LogOptions{Tail: -1}, &out, &errs))
	assert.Equal(t, "out one\nno newline\n", out.String())
	assert.Equal(t, "err one\n", errs.String())

	es, err := journal.Read(jdir, journal.Query{Units: []string{"crio"}})
	require.NoError(t, err)
	require.Len(t, es, 2)
	assert.Contains(t, es[0].Message, "Created container "+st.ID+": test/talker/talk")
	assert.Contains(t, es[1].Message, `msg="Started container"`)
}

// An exited container restarts in its sandbox as the next attempt, its
// log the next file; the kubelet says it backs off in between.
func TestRestartIsTheNextAttempt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := testKubelet(t, dir)
	var logged strings.Builder
	k.log = slog.New(slog.NewTextHandler(&logged, nil))
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: quitter, namespace: test}\nspec:\n  containers:\n  - name: quit\n    command: [\"true\"]\n"
	p := filepath.Join(dir, "quitter.yaml")
	require.NoError(t, os.WriteFile(p, []byte(pod), 0o644))
	k.sync()
	first := k.pods[p]
	<-first.done
	k.sync() // within its back-off: it waits, and says so
	assert.Same(t, first, k.pods[p])
	assert.Contains(t, logged.String(), "CrashLoopBackOff")
	assert.Contains(t, logged.String(), "back-off 5s restarting failed container=quit pod=quitter_test(")
	k.mu.Lock()
	first.state.Started = first.state.Started.Add(-time.Minute) // its back-off over
	k.mu.Unlock()
	k.sync()
	second := k.pods[p]
	require.NotSame(t, first, second)
	<-second.done
	assert.Equal(t, 1, second.state.Attempt)
	assert.Equal(t, first.state.PodID, second.state.PodID, "the same sandbox")
	assert.NotEqual(t, first.state.ID, second.state.ID, "a new container")
	assert.Equal(t, filepath.Join(filepath.Dir(first.state.LogPath), "1.log"), second.state.LogPath)
	assert.Contains(t, logged.String(), "restarted static pod's container after its back-off")
	assert.Contains(t, logged.String(), "attempt=1")
}

// ParseLogLine reads the CRI log format and refuses anything else.
func TestParseLogLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line    string
		stream  string
		partial bool
		text    string
		bad     bool
	}{
		{line: "2016-10-06T00:17:09.669794202Z stdout F log content 1", stream: "stdout", text: "log content 1"},
		{line: "2016-10-06T00:17:09.669794203Z stderr P log content 2", stream: "stderr", partial: true, text: "log content 2"},
		{line: "2016-10-06T00:17:09.669794203Z stderr F", stream: "stderr", text: ""},
		{line: "2016-10-06T00:17:09.669794203Z stdout F:x tagged", stream: "stdout", text: "tagged"},
		{line: "plain text from an old log", bad: true},
		{line: "2016-10-06T00:17:09Z stdin F x", bad: true},
		{line: "2016-10-06T00:17:09Z stdout X x", bad: true},
		{line: "", bad: true},
	} {
		l, err := ParseLogLine([]byte(tc.line))
		if tc.bad {
			assert.Error(t, err, tc.line)
			continue
		}
		require.NoError(t, err, tc.line)
		assert.Equal(t, tc.stream, l.Stream, tc.line)
		assert.Equal(t, tc.partial, l.Partial, tc.line)
		assert.Equal(t, tc.text, string(l.Text), tc.line)
	}
}

// A line longer than the runtime's buffer is written in parts (P ... F)
// and read back whole; --tail counts whole lines; --timestamps puts each
// line's time first.
func TestCRILogLongLinesTailAndTimestamps(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(p)
	require.NoError(t, err)
	l := newCRILog(f)
	l.now = func() time.Time { return time.Date(2025, 5, 14, 10, 7, 1, 5, time.UTC) }
	out := l.stream("stdout")
	long := strings.Repeat("x", maxLogLine+10)
	_, _ = io.WriteString(out, "first\n"+long+"\nlast\n")
	require.NoError(t, l.Close())
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(string(data), "\n"), "the long line is two lines of the log")
	assert.Contains(t, string(data), "2025-05-14T10:07:01.000000005Z stdout P ")

	var all, tail, ts strings.Builder
	require.NoError(t, ReadLog(t.Context(), p, LogOptions{Tail: -1}, &all, io.Discard))
	assert.Equal(t, "first\n"+long+"\nlast\n", all.String())
	require.NoError(t, ReadLog(t.Context(), p, LogOptions{Tail: 2}, &tail, io.Discard))
	assert.Equal(t, long+"\nlast\n", tail.String())
	require.NoError(t, ReadLog(t.Context(), p, LogOptions{Tail: 1, Timestamps: true}, &ts, io.Discard))
	assert.Equal(t, "2025-05-14T10:07:01.000000005Z last\n", ts.String())
}

func TestLastLogText(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "c.log")
	assert.Empty(t, lastLogText(p, 10), "no log")
	require.NoError(t, os.WriteFile(p, []byte("2025-05-14T10:07:01Z stdout F one\n2025-05-14T10:07:02Z stderr F two three four five\n"), 0o644))
	assert.Equal(t, "two three four five", lastLogText(p, 100))
	assert.Equal(t, "...four five", lastLogText(p, 9))
}

// A node's shutdown stops every pod's process and starts none again, with
// the manifest still there, until the node boots.
func TestShutdownStopsPodsForGood(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := testKubelet(t, dir)
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: etcd-bootstrap-member, namespace: openshift-etcd}\nspec:\n  hostNetwork: true\n  containers:\n  - name: etcd\n    command: [sleep]\n    args: [\"300\"]\n"
	p := filepath.Join(dir, "etcd-member-pod.yaml")
	require.NoError(t, os.WriteFile(p, []byte(pod), 0o644))
	k.sync()
	require.True(t, k.pods[p].state.Running, k.pods[p].state.Detail)
	pid := k.pods[p].state.PID

	k.Shutdown(context.Background())
	assert.Error(t, syscall.Kill(pid, 0), "the process is gone")
	k.sync()
	assert.False(t, k.pods[p].state.Running, "not started again")
	pods, err := LoadState(k.state)
	require.NoError(t, err)
	require.Len(t, pods, 1)
	assert.False(t, pods[0].Running, "crictl sees it stopped")
}
