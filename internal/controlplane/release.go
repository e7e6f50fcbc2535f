package controlplane

import (
	"strconv"
	"strings"
)

// What differs by release in the pods: the kube-apiserver operator's
// defaultconfig.yaml changes between OpenShift minors, and each minor's
// upstream Kubernetes knows its own feature gates.

// OpenShiftMinor reads the minor of an OpenShift 4 version ("4.19.10",
// "4.19", "4.19.0-ec.3" give 19); 0 for an empty or other version.
func OpenShiftMinor(v string) int {
	parts := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".", 3)
	if len(parts) < 2 || parts[0] != "4" {
		return 0
	}
	m, err := strconv.Atoi(strings.SplitN(parts[1], "-", 2)[0])
	if err != nil {
		return 0
	}
	return m
}

// KubernetesMinor is the Kubernetes minor OpenShift 4.<m> is built on,
// 1.<m+13> (4.16 ships 1.29, 4.19 1.32, 4.22 1.35: lab/release pins the
// patch); 0 when openshift is no 4.x version.
func KubernetesMinor(openshift string) int {
	if m := OpenShiftMinor(openshift); m != 0 {
		return m + 13
	}
	return 0
}

// goawayChance is KASO defaultconfig.yaml's goaway-chance: "0" on
// release-4.16 and release-4.17, "0.001" from release-4.18 (a release
// bootlab does not know takes the newest).
func goawayChance(openshift string) string {
	if m := OpenShiftMinor(openshift); m != 0 && m < 18 {
		return "0"
	}
	return "0.001"
}

// admissionPlugins are the upstream admission plugins of KASO
// defaultconfig.yaml's enable-admission-plugins, in its order (release-4.16
// also enables PersistentVolumeLabel, which Kubernetes 1.31 removed); the
// openshift.io plugins of the list are OpenShift's own (OpenShiftOnly).
func admissionPlugins(openshift string) []string {
	out := []string{"CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction", "DefaultIngressClass",
		"DefaultStorageClass", "DefaultTolerationSeconds", "LimitRanger", "MutatingAdmissionWebhook", "NamespaceLifecycle",
		"NodeRestriction", "OwnerReferencesPermissionEnforcement", "PersistentVolumeClaimResize"}
	if OpenShiftMinor(openshift) == 16 {
		out = append(out, "PersistentVolumeLabel")
	}
	return append(out, "PodNodeSelector", "PodTolerationRestriction", "Priority", "ResourceQuota", "RuntimeClass",
		"ServiceAccount", "StorageObjectInUseProtection", "TaintNodesByCondition", "ValidatingAdmissionWebhook",
		"ValidatingAdmissionPolicy")
}
