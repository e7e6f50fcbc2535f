package controlplane

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// FeatureGateManifest is where the installer writes the cluster's
// FeatureGate among bootkube's manifests; stage 05's render resolves its
// status for the payload version, and the renders of stages 08 and 09 read
// it (--rendered-manifest-files), as the operators' renders do.
const FeatureGateManifest = "manifests/99_feature-gate.yaml"

// FeatureGates are the gates a FeatureGate's status lists for one
// release: what OpenShift's operators hand their operands as
// --feature-gates, every gate Name=true or Name=false (KASO
// pkg/cmd/render/render.go setFeatureGatesFromAccessor, release-4.19).
type FeatureGates struct {
	Enabled, Disabled []string
}

// ParseFeatureGate reads a config.openshift.io/v1 FeatureGate (YAML or
// JSON) and returns the gates of its status entry for version: the entry
// whose version is version, else, when version is a major.minor ("4.19"),
// the one of that minor.
func ParseFeatureGate(doc []byte, version string) (FeatureGates, error) {
	var obj struct {
		Kind   string `json:"kind"`
		Status struct {
			FeatureGates []struct {
				Version  string                  `json:"version"`
				Enabled  []struct{ Name string } `json:"enabled"`
				Disabled []struct{ Name string } `json:"disabled"`
			} `json:"featureGates"`
		} `json:"status"`
	}
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return FeatureGates{}, fmt.Errorf("the FeatureGate does not parse: %v", err)
	}
	if obj.Kind != "FeatureGate" {
		return FeatureGates{}, fmt.Errorf("is a %q, want the config.openshift.io/v1 FeatureGate", obj.Kind)
	}
	var seen []string
	for _, exact := range []bool{true, false} {
		for _, e := range obj.Status.FeatureGates {
			if exact && e.Version != version || !exact && minorOf(e.Version) != version {
				seen = append(seen, e.Version)
				continue
			}
			var fg FeatureGates
			for _, g := range e.Enabled {
				fg.Enabled = append(fg.Enabled, g.Name)
			}
			for _, g := range e.Disabled {
				fg.Disabled = append(fg.Disabled, g.Name)
			}
			return fg, nil
		}
	}
	return FeatureGates{}, fmt.Errorf("has no status.featureGates entry for version %s (it lists %q): stage 05's render resolves them", version, slices.Compact(seen))
}

// minorOf is the major.minor of a version: "4.19" for "4.19.10".
func minorOf(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// kubeGate is a feature gate of upstream Kubernetes that a rehearsal's
// FeatureGate names: the minors that know it and, from lockedFrom on, the
// value it is locked to (the binary refuses another). Read from
// k8s.io/kubernetes pkg/features/kube_features.go and k8s.io/apiserver
// pkg/features/kube_features.go at v1.29.6, v1.32.13, v1.34.4 and v1.35.4.
type kubeGate struct {
	name       string
	since      int
	lockedFrom int
	lockedTo   bool
}

// kubeGates are the Kubernetes gates among those a rehearsal's FeatureGate
// can name: stage 05's render lists DynamicResourceAllocation; the others
// are the gates OpenShift's runtime-config table enables APIs for. A gate
// not here is taken as OpenShift's own (GatewayAPI,
// OpenShiftPodSecurityAdmission, ...), which the upstream kube-apiserver
// would refuse as unknown.
var kubeGates = []kubeGate{
	{name: "DynamicResourceAllocation", since: 26, lockedFrom: 35, lockedTo: true},
	{name: "MutatingAdmissionPolicy", since: 32},
	{name: "VolumeAttributesClass", since: 29},
}

// KubernetesFeatureGates are the --feature-gates of the release's upstream
// Kubernetes for fg: OpenShift passes every gate of the FeatureGate, its
// own binaries knowing them all; the lab passes those the release's
// Kubernetes (KubernetesMinor) knows and lets be set to that value,
// sorted, as Name=true|false. An unknown release gets none.
func KubernetesFeatureGates(fg FeatureGates, openshift string) []string {
	minor := KubernetesMinor(openshift)
	if minor == 0 {
		return nil
	}
	var out []string
	for _, g := range kubeGates {
		if minor < g.since {
			continue
		}
		on, listed := slices.Contains(fg.Enabled, g.name), slices.Contains(fg.Enabled, g.name) || slices.Contains(fg.Disabled, g.name)
		if !listed || g.lockedFrom != 0 && minor >= g.lockedFrom && on != g.lockedTo {
			continue
		}
		out = append(out, g.name+"="+strconv.FormatBool(on))
	}
	slices.Sort(out)
	return out
}

// runtimeConfig are the API group-versions the kube-apiserver operator
// enables for a gate that is on, by OpenShift minor, resolved for that
// release's Kubernetes: KASO
// pkg/operator/configobservation/apienablement/observe_runtime_config.go
// (defaultGroupVersionsByFeatureGate; release-4.16 and release-4.17 have
// none).
var runtimeConfig = map[int]map[string][]string{
	18: {
		"ValidatingAdmissionPolicy": {"admissionregistration.k8s.io/v1beta1"},
		"DynamicResourceAllocation": {"resource.k8s.io/v1alpha3"},
		"VolumeAttributesClass":     {"storage.k8s.io/v1beta1"},
	},
	19: {
		"ValidatingAdmissionPolicy": {"admissionregistration.k8s.io/v1beta1"},
		"DynamicResourceAllocation": {"resource.k8s.io/v1alpha3", "resource.k8s.io/v1beta1"},
		"VolumeAttributesClass":     {"storage.k8s.io/v1beta1"},
	},
	20: {
		"MutatingAdmissionPolicy":   {"admissionregistration.k8s.io/v1alpha1"},
		"DynamicResourceAllocation": {"resource.k8s.io/v1alpha3", "resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2"},
		"VolumeAttributesClass":     {"storage.k8s.io/v1beta1"},
	},
	21: {"MutatingAdmissionPolicy": {"admissionregistration.k8s.io/v1alpha1", "admissionregistration.k8s.io/v1beta1"}},
	22: {"MutatingAdmissionPolicy": {"admissionregistration.k8s.io/v1alpha1", "admissionregistration.k8s.io/v1beta1"}},
}

// RuntimeConfig is the --runtime-config the kube-apiserver operator
// derives from fg for the release (group/version=true for each API of a
// gate that is on, sorted); the lab passes it when the gate is one
// Kubernetes knows, which every gate of the table is.
func RuntimeConfig(fg FeatureGates, openshift string) []string {
	var out []string
	for gate, gvs := range runtimeConfig[OpenShiftMinor(openshift)] {
		if !slices.Contains(fg.Enabled, gate) {
			continue
		}
		for _, gv := range gvs {
			out = append(out, gv+"=true")
		}
	}
	slices.Sort(out)
	return out
}
