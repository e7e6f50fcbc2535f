package wire

import (
	"encoding/json"
	"fmt"
	"os"
)

// AssetDir is where the installer's bootstrap.ign lays down bootkube's
// assets, and where a rehearsal bootstrap's config puts the lab's.
const AssetDir = "/opt/openshift"

// RehearsalRelease describes the release the rehearsal bootstrap plays:
// the version its stand-ins report and the pull spec release-image.sh
// names (nothing is ever pulled).
type RehearsalRelease struct {
	Version           string `json:"version"`           // 4.19.10
	KubernetesVersion string `json:"kubernetesVersion"` // 1.32.13
	// EtcdVersion is the etcd the rehearsal nodes run (lab/release's
	// built version); EtcdShipped is the one the real release ships.
	EtcdVersion string `json:"etcdVersion,omitempty"`
	EtcdShipped string `json:"etcdShipped,omitempty"`
	Image       string `json:"image"` // quay.io/openshift-release-dev/ocp-release@sha256:...
	// Components maps image-references names (etcd, cluster-etcd-operator,
	// ...) to their pull specs, as `oc adm release info` lists them.
	Components map[string]string `json:"components"`
}

// ReleaseMetadataPath is where the rehearsal bootstrap keeps its release
// metadata; the podman and oc stand-ins answer from it.
const ReleaseMetadataPath = "/etc/bootlab/release.json"

// ReadRehearsalRelease reads the rehearsal release metadata at path.
func ReadRehearsalRelease(path string) (*RehearsalRelease, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("release metadata: %w (is this a rehearsal bootstrap?)", err)
	}
	var r RehearsalRelease
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return &r, nil
}

// ReleaseComponents are the image-references names bootkube.sh asks the
// release payload for (image_for).
var ReleaseComponents = []string{
	"machine-config-operator", "etcd", "pod", "cluster-etcd-operator", "cluster-config-api", "cluster-config-operator",
	"cluster-kube-apiserver-operator", "cluster-kube-controller-manager-operator", "cluster-kube-scheduler-operator",
	"cluster-ingress-operator", "cluster-node-tuning-operator", "cloud-credential-operator", "hyperkube",
	"cluster-policy-controller", "cluster-bootstrap", "cluster-authentication-operator", "cluster-version-operator",
}

// NodeBootstrapKubeconfigPath is where a node's kubelet finds its
// bootstrap kubeconfig (the machine-config's /etc/kubernetes/kubeconfig).
const NodeBootstrapKubeconfigPath = "/etc/kubernetes/kubeconfig"

// OperandClientCertPath is where a rehearsal master's served config puts
// the client certificate of its controller manager or scheduler
// (component), as the user upstream's RBAC bootstrap roles bind
// (system:kube-controller-manager, system:kube-scheduler). Upstream the
// operators issue these pairs from the kube-control-plane-signer; no
// operator runs in a rehearsal lab, so the lab's PKI issues them and the
// master's installer stand-ins copy them into the pods' cert-dirs.
func OperandClientCertPath(component string) string {
	return "/etc/kubernetes/bootlab/" + component + "-client.crt"
}

// OperandClientKeyPath is the key of OperandClientCertPath's certificate.
func OperandClientKeyPath(component string) string {
	return "/etc/kubernetes/bootlab/" + component + "-client.key"
}

// KASOperatorKubeconfigPath is the credential of a rehearsal master's
// kube-apiserver installer stand-in. Upstream the kube-apiserver operator
// runs as a pod with its service account (cluster-admin) and reads the
// revision's secrets itself; no operator pod runs in a rehearsal lab, so
// the master's config carries a client certificate with that identity.
const KASOperatorKubeconfigPath = "/etc/kubernetes/bootlab/kube-apiserver-operator.kubeconfig"
