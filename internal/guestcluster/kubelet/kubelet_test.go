package kubelet

import (
	"context"
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
			"machine-config-server": func(corev1.Pod, corev1.Container) (func(), error) { started++; return func() { stopped++ }, nil },
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
			"kube-apiserver": func(corev1.Pod, corev1.Container) (func(), error) { played++; return func() {}, nil },
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

func TestLogTail(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "c.log")
	assert.Empty(t, logTail(p, 10), "no log")
	require.NoError(t, os.WriteFile(p, []byte("one\ntwo three four five\n\n"), 0o644))
	assert.Equal(t, "two three four five", logTail(p, 100))
	assert.Equal(t, "...four five", logTail(p, 9))
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
