package controlplane

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func podYAML(t *testing.T, p Pod) []byte {
	t.Helper()
	b, err := yaml.Marshal(p.Pod)
	require.NoError(t, err)
	return b
}

// Each rendered pod passes its own check, runs its program by name (the
// node's link to hyperkube) and names only files of the secrets directory.
func TestBootstrapPodsPassTheirCheck(t *testing.T) {
	t.Parallel()
	in := Input{AdvertiseAddress: "192.168.126.10"}
	for _, c := range Components() {
		p := BootstrapPod(c, in, "quay.io/openshift/hyperkube")
		require.NoError(t, CheckPod(c, in, podYAML(t, p)), c)
		assert.Equal(t, string(c), p.Pod.Spec.Containers[0].Command[0], c)
		assert.True(t, p.Pod.Spec.HostNetwork, c)
		for _, a := range p.Pod.Spec.Containers[0].Args {
			if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(v, "/") {
				assert.True(t, strings.HasPrefix(v, SecretsDir+"/"), "%s: %s reads outside %s", c, a, SecretsDir)
			}
		}
	}
	api := flagValues(KubeAPIServerArgs(in))
	assert.Equal(t, []string{"6443"}, api["secure-port"])
	assert.Equal(t, []string{"https://localhost:2379"}, api["etcd-servers"])
	assert.Equal(t, []string{SecretsDir + "/" + EtcdClientCert}, api["etcd-certfile"])
	assert.Len(t, api["tls-sni-cert-key"], 3)
	assert.Equal(t, []string{"192.168.126.10"}, api["advertise-address"])
}

// Without an address the pod advertises $(HOST_IP), which the kubelet
// fills from status.hostIP, as OpenShift's pod does.
func TestKubeAPIServerAdvertisesTheHostIP(t *testing.T) {
	t.Parallel()
	p := BootstrapPod(KubeAPIServer, Input{}, "")
	ctr := p.Pod.Spec.Containers[0]
	assert.Contains(t, ctr.Args, "--advertise-address=$(HOST_IP)")
	require.Len(t, ctr.Env, 1)
	assert.Equal(t, HostIPEnv, ctr.Env[0].Name)
	require.NotNil(t, ctr.Env[0].ValueFrom)
	assert.Equal(t, "status.hostIP", ctr.Env[0].ValueFrom.FieldRef.FieldPath)
	require.NoError(t, CheckPod(KubeAPIServer, Input{}, podYAML(t, p)))
	bad := BootstrapPod(KubeAPIServer, Input{AdvertiseAddress: "10.0.0.9"}, "")
	assert.ErrorContains(t, CheckPod(KubeAPIServer, Input{}, podYAML(t, bad)), `--advertise-address is "10.0.0.9", want "$(HOST_IP)"`)
}

// A pod that differs where the lab's layout decides is refused, naming
// the file and the flag.
func TestCheckPodNamesWhatIsWrong(t *testing.T) {
	t.Parallel()
	in := Input{AdvertiseAddress: "192.168.126.10"}
	api := BootstrapPod(KubeAPIServer, in, "")
	for name, tc := range map[string]struct {
		mutate func(p *Pod)
		want   string
	}{
		"etcd elsewhere": {func(p *Pod) {
			args := p.Pod.Spec.Containers[0].Args
			for i, a := range args {
				if strings.HasPrefix(a, "--etcd-servers=") {
					args[i] = "--etcd-servers=http://127.0.0.1:2379"
				}
			}
		}, `kube-apiserver-pod.yaml: --etcd-servers is "http://127.0.0.1:2379", want "https://localhost:2379"`},
		"no secure port": {func(p *Pod) {
			var keep []string
			for _, a := range p.Pod.Spec.Containers[0].Args {
				if !strings.HasPrefix(a, "--secure-port=") {
					keep = append(keep, a)
				}
			}
			p.Pod.Spec.Containers[0].Args = keep
		}, `--secure-port is "", want "6443"`},
		"openshift's command": {func(p *Pod) {
			p.Pod.Spec.Containers[0].Command = []string{"hyperkube", "kube-apiserver"}
		}, `runs "hyperkube kube-apiserver`},
		"another pod": {func(p *Pod) { p.Pod.Name = "kube-apiserver" }, "want openshift-kube-apiserver/bootstrap-kube-apiserver"},
	} {
		t.Run(name, func(t *testing.T) {
			p := api
			p.Pod = *api.Pod.DeepCopy()
			tc.mutate(&p)
			err := CheckPod(KubeAPIServer, in, podYAML(t, p))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	err := CheckPod(KubeScheduler, in, []byte("{not yaml"))
	assert.ErrorContains(t, err, "kube-scheduler-pod.yaml does not parse as a Pod")
}

// The verbosity is the learner's: --v=4 still passes.
func TestCheckPodLeavesVerbosityAlone(t *testing.T) {
	t.Parallel()
	in := Input{AdvertiseAddress: "10.0.0.2"}
	p := BootstrapPod(KubeScheduler, in, "")
	p.Pod.Spec.Containers[0].Args = append(p.Pod.Spec.Containers[0].Args[:len(p.Pod.Spec.Containers[0].Args)-1], "--v=4")
	assert.NoError(t, CheckPod(KubeScheduler, in, podYAML(t, p)))
}
