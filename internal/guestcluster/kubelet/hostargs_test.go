package kubelet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

// HostArgs maps every path of a flag's comma-separated list (the master
// kube-apiserver's --tls-sni-cert-key=cert,key) through the mounts, the
// longest mount first, and leaves other values alone.
func TestHostArgsMapsPathLists(t *testing.T) {
	t.Parallel()
	pod := corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "certs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/host/certs"}}},
		{Name: "res", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/host/pod-1"}}},
	}}}
	c := corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "certs", MountPath: "/etc/kubernetes/static-pod-certs"},
		{Name: "res", MountPath: "/etc/kubernetes/static-pod-resources"},
	}}
	for _, tc := range []struct{ in, want string }{
		{"--tls-sni-cert-key=/etc/kubernetes/static-pod-certs/a.crt,/etc/kubernetes/static-pod-certs/a.key", "--tls-sni-cert-key=/host/certs/a.crt,/host/certs/a.key"},
		{"--etcd-cafile=/etc/kubernetes/static-pod-resources/configmaps/x", "--etcd-cafile=/host/pod-1/configmaps/x"},
		{"--etcd-servers=https://10.0.0.2:2379,https://10.0.0.3:2379", "--etcd-servers=https://10.0.0.2:2379,https://10.0.0.3:2379"},
		{"/etc/kubernetes/static-pod-certs", "/host/certs"},
		{"/etc/other/file", "/etc/other/file"},
	} {
		assert.Equal(t, []string{"prog", tc.want}, HostArgs(pod, c, []string{"prog", tc.in}), tc.in)
	}
}
