package kubelet

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// A manifest that lands starts its program, one removed stops it; a pod
// whose program the node lacks is recorded as not run.
func TestKubeletStandIn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := &Kubelet{log: slog.New(slog.DiscardHandler), dir: dir, state: filepath.Join(t.TempDir(), "kubelet.json"), logs: t.TempDir(), pods: map[string]*runningPod{}}
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
