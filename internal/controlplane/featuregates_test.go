package controlplane

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stage05FeatureGate is what a rehearsal's stage 05 render writes into
// manifests/99_feature-gate.yaml: the installer's FeatureGate with its
// status resolved for the payload version.
const stage05FeatureGate = `apiVersion: config.openshift.io/v1
kind: FeatureGate
metadata: {name: cluster}
spec: {featureSet: ""}
status:
  featureGates:
  - version: 4.19.10
    enabled: [{name: GatewayAPI}, {name: OpenShiftPodSecurityAdmission}]
    disabled: [{name: DynamicResourceAllocation}]
`

func TestParseFeatureGate(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"4.19.10", "4.19"} {
		fg, err := ParseFeatureGate([]byte(stage05FeatureGate), v)
		require.NoError(t, err, v)
		assert.Equal(t, FeatureGates{Enabled: []string{"GatewayAPI", "OpenShiftPodSecurityAdmission"}, Disabled: []string{"DynamicResourceAllocation"}}, fg, v)
	}
	_, err := ParseFeatureGate([]byte(stage05FeatureGate), "4.18.3")
	assert.ErrorContains(t, err, `has no status.featureGates entry for version 4.18.3 (it lists ["4.19.10"])`)
	_, err = ParseFeatureGate([]byte("kind: Network\n"), "4.19")
	assert.ErrorContains(t, err, `is a "Network", want the config.openshift.io/v1 FeatureGate`)
}

// The lab passes the gates the release's Kubernetes knows: of the
// rehearsal's FeatureGate, DynamicResourceAllocation=false, which 1.35
// locks to true (so 4.22 passes none); OpenShift's own gates never.
func TestKubernetesFeatureGates(t *testing.T) {
	t.Parallel()
	fg := FeatureGates{Enabled: []string{"GatewayAPI", "OpenShiftPodSecurityAdmission"}, Disabled: []string{"DynamicResourceAllocation"}}
	for release, want := range map[string][]string{
		"4.16": {"DynamicResourceAllocation=false"}, "4.19.10": {"DynamicResourceAllocation=false"},
		"4.21": {"DynamicResourceAllocation=false"}, "4.22": nil, "": nil,
	} {
		assert.Equal(t, want, KubernetesFeatureGates(fg, release), release)
	}
	on := FeatureGates{Enabled: []string{"DynamicResourceAllocation", "VolumeAttributesClass", "MutatingAdmissionPolicy"}}
	assert.Equal(t, []string{"DynamicResourceAllocation=true", "VolumeAttributesClass=true"}, KubernetesFeatureGates(on, "4.16"),
		"1.29 has no MutatingAdmissionPolicy")
	assert.Equal(t, []string{"DynamicResourceAllocation=true", "MutatingAdmissionPolicy=true", "VolumeAttributesClass=true"}, KubernetesFeatureGates(on, "4.22"))
	// --runtime-config follows the gates that are on, by release (none
	// before 4.18), as the kube-apiserver operator's table.
	assert.Empty(t, RuntimeConfig(fg, "4.19"))
	assert.Empty(t, RuntimeConfig(on, "4.17"))
	assert.Equal(t, []string{"resource.k8s.io/v1alpha3=true", "resource.k8s.io/v1beta1=true", "storage.k8s.io/v1beta1=true"}, RuntimeConfig(on, "4.19"))
	assert.Equal(t, []string{"admissionregistration.k8s.io/v1alpha1=true", "admissionregistration.k8s.io/v1beta1=true"}, RuntimeConfig(on, "4.22"))
	args := flagValues(KubeAPIServerArgs(Input{OpenShift: "4.19", FeatureGates: on}))
	assert.Equal(t, []string{"DynamicResourceAllocation=true,MutatingAdmissionPolicy=true,VolumeAttributesClass=true"}, args["feature-gates"])
	assert.Equal(t, []string{"resource.k8s.io/v1alpha3=true,resource.k8s.io/v1beta1=true,storage.k8s.io/v1beta1=true"}, args["runtime-config"])
}

// The render's flags decide the Input: the Network of
// --cluster-config-file, the release of --payload-version, the
// FeatureGate among --rendered-manifest-files; a file it cannot read is
// named with its flag.
func TestRenderInput(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"/assets/manifests/cluster-network-02-config.yml": "kind: Network\nspec: {serviceNetwork: [172.31.0.0/16], clusterNetwork: [{cidr: 10.132.0.0/14}]}\n",
		"/assets/manifests/99_feature-gate.yaml":          stage05FeatureGate,
	}
	read := func(name string) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	in, err := RenderInput(read, map[string]string{"cluster-config-file": "/assets/manifests/cluster-network-02-config.yml",
		"rendered-manifest-files": "/assets/manifests", "payload-version": "4.19.10"})
	require.NoError(t, err)
	assert.Equal(t, Input{ServiceCIDR: "172.31.0.0/16", ClusterCIDR: "10.132.0.0/14", OpenShift: "4.19.10",
		FeatureGates: FeatureGates{Enabled: []string{"GatewayAPI", "OpenShiftPodSecurityAdmission"}, Disabled: []string{"DynamicResourceAllocation"}}}, in)
	assert.Contains(t, KubeAPIServerArgs(in), "--feature-gates=DynamicResourceAllocation=false")
	assert.Contains(t, KubeControllerManagerArgs(in), "--feature-gates=DynamicResourceAllocation=false")

	in, err = RenderInput(read, map[string]string{})
	require.NoError(t, err)
	assert.Equal(t, Input{}, in, "no flags: the defaults")
	_, err = RenderInput(read, map[string]string{"rendered-manifest-files": "/elsewhere", "payload-version": "4.19.10"})
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	assert.ErrorContains(t, err, "--rendered-manifest-files: the FeatureGate: open /elsewhere/99_feature-gate.yaml")
	_, err = RenderInput(read, map[string]string{"cluster-config-file": "/none.yml"})
	assert.ErrorContains(t, err, "--cluster-config-file: open /none.yml")
}

// OpenShift 4.<m> is built on Kubernetes 1.<m+13>.
func TestKubernetesMinor(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int{"4.16": 29, "4.19.10": 32, "4.22.0-ec.1": 35, "": 0, "5.0": 0, "x": 0} {
		assert.Equal(t, want, KubernetesMinor(v), v)
	}
}
