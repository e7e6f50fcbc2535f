package controlplane

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A master's kube-apiserver pod reads every file through its two mounts,
// each file one of MasterResources, named as the operator's installer
// names them; it serves on the masters' etcd members, never localhost's.
func TestMasterPodReadsOnlyItsResources(t *testing.T) {
	t.Parallel()
	in := MasterInput{AdvertiseAddress: "192.168.126.11", Revision: 3,
		EtcdServers: []string{"https://192.168.126.11:2379", "https://192.168.126.12:2379", "https://192.168.126.13:2379"}}
	p := MasterKubeAPIServerPod(in, "quay.io/openshift/hyperkube")
	assert.Equal(t, "kube-apiserver-pod.yaml", p.File)
	assert.Equal(t, MasterNamespace+"/kube-apiserver", p.Pod.Namespace+"/"+p.Pod.Name)
	assert.Equal(t, "3", p.Pod.Labels["revision"])
	ctr := p.Pod.Spec.Containers[0]
	assert.Equal(t, []string{"kube-apiserver"}, ctr.Command)
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		for _, v := range p.Pod.Spec.Volumes {
			if v.Name == m.Name {
				require.NotNil(t, v.HostPath, m.Name)
				mounts[m.MountPath] = v.HostPath.Path
			}
		}
	}
	assert.Equal(t, map[string]string{
		"/etc/kubernetes/static-pod-resources": "/etc/kubernetes/static-pod-resources/kube-apiserver-pod-3",
		"/etc/kubernetes/static-pod-certs":     "/etc/kubernetes/static-pod-resources/kube-apiserver-certs",
	}, mounts)
	known := map[string]bool{}
	for _, r := range MasterResources() {
		known[containerPath(r)] = true
		assert.NotEmpty(t, r.Bootstrap, "%s has the bootstrap's file to come from", r.Rel())
	}
	named := map[string]bool{}
	for _, a := range ctr.Args {
		_, v, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(v, "/") {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			assert.True(t, known[f], "%s names %s, not a resource the installer copies", a, f)
			named[f] = true
		}
	}
	assert.Len(t, named, len(known), "every copied resource is read")
	flags := flagValues(ctr.Args)
	assert.Equal(t, []string{strings.Join(in.EtcdServers, ",")}, flags["etcd-servers"])
	assert.Equal(t, []string{"192.168.126.11"}, flags["advertise-address"])
	assert.Equal(t, []string{"kubernetes.io"}, flags["etcd-prefix"], "the bootstrap's prefix: the masters serve its data")
}

// Secrets' keys are written 0600 by the installer; the revision and cert
// directories move with ResourcesDir and Revision (1 by default).
func TestMasterResourceLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in         MasterInput
		rev, certs string
	}{
		{MasterInput{}, "/etc/kubernetes/static-pod-resources/kube-apiserver-pod-1", "/etc/kubernetes/static-pod-resources/kube-apiserver-certs"},
		{MasterInput{ResourcesDir: "/tmp/x", Revision: 2}, "/tmp/x/kube-apiserver-pod-2", "/tmp/x/kube-apiserver-certs"},
	} {
		assert.Equal(t, tc.rev, tc.in.HostDir(RevisionDir))
		assert.Equal(t, tc.certs, tc.in.HostDir(CertDir))
	}
	for _, r := range MasterResources() {
		assert.Equal(t, r.Kind == "secrets", r.Secret(), r.Rel())
		assert.Equal(t, path.Join(r.Kind, r.Name, r.Key), r.Rel())
	}
}

// The masters' controller manager and scheduler pods read every file
// through their two mounts, each one of their operand's resources (the
// kubeconfig's too), from their own directories; each talks to its own
// master's kube-apiserver at localhost with its own user.
func TestMasterOperandPodsReadOnlyTheirResources(t *testing.T) {
	t.Parallel()
	in := MasterInput{AdvertiseAddress: "192.168.126.11", Revision: 2, EtcdServers: []string{"https://192.168.126.11:2379"}}
	for _, o := range []Operand{KubeControllerManagerOperand, KubeSchedulerOperand} {
		p := o.Pod(in, "quay.io/openshift/hyperkube")
		assert.Equal(t, o.File, p.File)
		assert.Equal(t, o.Namespace+"/"+o.PodName, p.Pod.Namespace+"/"+p.Pod.Name)
		require.Len(t, p.Pod.Spec.Containers, 1, "one container: the program the node has")
		ctr := p.Pod.Spec.Containers[0]
		assert.Equal(t, []string{string(o.Component)}, ctr.Command)
		mounts := map[string]string{}
		for _, m := range ctr.VolumeMounts {
			for _, v := range p.Pod.Spec.Volumes {
				if v.Name == m.Name {
					mounts[m.MountPath] = v.HostPath.Path
				}
			}
		}
		assert.Equal(t, map[string]string{
			"/etc/kubernetes/static-pod-resources": "/etc/kubernetes/static-pod-resources/" + string(o.Component) + "-pod-2",
			"/etc/kubernetes/static-pod-certs":     "/etc/kubernetes/static-pod-resources/" + string(o.Component) + "-certs",
		}, mounts)
		known := map[string]bool{}
		for _, r := range o.Resources() {
			known[containerPath(r)] = true
			_, generated := o.Generated(r)
			assert.True(t, r.NodeFile || generated || r.Bootstrap != "", "%s %s comes from somewhere", o.Component, r.Rel())
		}
		named := map[string]bool{}
		var paths []string
		for _, a := range ctr.Args {
			if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(v, "/") {
				paths = append(paths, v)
			}
		}
		kc := string(o.Kubeconfig())
		var kcDir string
		for _, r := range o.Resources() {
			if r.Key == "kubeconfig" {
				kcDir = path.Dir(containerPath(r))
			}
		}
		for _, line := range strings.Split(kc, "\n") {
			for _, k := range []string{"certificate-authority: ", "client-certificate: ", "client-key: "} {
				if _, v, ok := strings.Cut(line, k); ok {
					assert.False(t, path.IsAbs(v), "%s: relative to the kubeconfig, so the host's layout holds too: %s", o.Component, v)
					paths = append(paths, path.Join(kcDir, v))
				}
			}
		}
		for _, f := range paths {
			assert.True(t, known[f], "%s names %s, not a resource its installer copies", o.Component, f)
			named[f] = true
		}
		assert.Len(t, named, len(known), "%s: every copied resource is read", o.Component)
		assert.Contains(t, kc, "server: https://localhost:6443")
		assert.Equal(t, "system:"+string(o.Component), o.ClientUser())
	}
	flags := flagValues(KubeControllerManagerOperand.Args(in))
	assert.Equal(t, []string{"/etc/kubernetes/static-pod-certs/secrets/csr-signer/tls.crt"}, flags["cluster-signing-cert-file"],
		"the controller manager signs the kubelets' CSRs with the bootstrap's signer, which the API's client CA trusts")
	assert.Equal(t, []string{"true"}, flags["use-service-account-credentials"])
}
