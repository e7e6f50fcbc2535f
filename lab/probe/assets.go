package probe

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/release"
	"github.com/bootlab/bootlab/lab/spec"
)

// BinDir is where the installer's bootstrap.ign puts bootkube.sh and the
// helpers it sources.
const BinDir = "/usr/local/bin"

// AssetInput is what the rehearsal assets need beyond Input.
type AssetInput struct {
	ClusterName, BaseDomain string
	MachineCIDR             string
	Masters, Workers        int
	Release                 wire.RehearsalRelease
	// ClusterNetwork and ServiceNetwork are the spec's
	// openshift.clusterNetwork and openshift.serviceNetwork: the
	// install-config's and the Network config's, which the control
	// plane's renders read. Unset (a probe lab's spec is not defaulted),
	// they are the installer's defaults.
	ClusterNetwork []spec.ClusterNetwork
	ServiceNetwork []string
	// EtcdSigner signs the etcd certificates (Generate makes it, so the
	// masters' certificates chain to the same signer); one is made when
	// it is empty.
	EtcdSigner pki.Pair
}

// clusterNetwork is a's pod network blocks, the installer's default
// where the spec leaves them unset.
func (a AssetInput) clusterNetwork() []spec.ClusterNetwork {
	if len(a.ClusterNetwork) == 0 {
		return []spec.ClusterNetwork{{CIDR: spec.DefaultClusterNetworkCIDR, HostPrefix: spec.DefaultClusterHostPrefix}}
	}
	return a.ClusterNetwork
}

// serviceNetwork is a's service network, the installer's default where
// the spec leaves it unset.
func (a AssetInput) serviceNetwork() []string {
	if len(a.ServiceNetwork) == 0 {
		return []string{spec.DefaultServiceNetworkCIDR}
	}
	return a.ServiceNetwork
}

// RehearsalAssets returns the files the installer's bootstrap.ign puts on a
// bootstrap node for bootkube.sh, made for the lab: /opt/openshift with
// manifests/, openshift/, tls/ (the lab CA and certificates it signed) and
// auth/ (kubeconfigs, 0600), and /usr/local/bin/bootkube.sh with the
// helpers it sources. Secrets are 0600.
func RehearsalAssets(in Input, a AssetInput) ([]ignition.File, error) {
	domain := in.ClusterDomain
	files, err := installerManifests(in, a)
	if err != nil {
		return nil, err
	}
	add := func(p string, mode int, data []byte) {
		files = append(files, ignition.File{Path: p, Mode: mode, Data: data})
	}
	apiURL, apiIntURL := "https://api."+domain+":6443", "https://api-int."+domain+":6443"

	// tls/: the lab CA and what it signed, named as the installer names them.
	add(wire.AssetDir+"/tls/root-ca.crt", 0o644, in.PKI.CA.CertPEM)
	add(wire.AssetDir+"/tls/machine-config-server.crt", 0o644, in.PKI.MCS.CertPEM)
	add(wire.AssetDir+"/tls/machine-config-server.key", 0o600, in.PKI.MCS.KeyPEM)
	// The etcd signer, an intermediate of the lab CA: the etcd render
	// signs the member's serving, peer and client certificates with it.
	etcdSigner := a.EtcdSigner
	if len(etcdSigner.CertPEM) == 0 {
		if etcdSigner, err = in.Issuer.Intermediate(in.PKI.CA, "etcd-signer"); err != nil {
			return nil, err
		}
	}
	add(wire.AssetDir+"/tls/etcd-signer.crt", 0o644, etcdSigner.CertPEM)
	add(wire.AssetDir+"/tls/etcd-signer.key", 0o600, etcdSigner.KeyPEM)
	// The bootstrap control plane's serving pairs and service-account keys
	// (stages 08-10's pods name them; cluster-bootstrap copies tls/ into
	// /etc/kubernetes/bootstrap-secrets).
	cpTLS, err := controlPlaneFiles(in, a)
	if err != nil {
		return nil, err
	}
	files = append(files, cpTLS...)
	// The CVO overrides the installer set aside for bootstrap (none were
	// given: the installer's CVOIgnore asset then writes null), which
	// stage 14 patches back into the ClusterVersion.
	add(wire.AssetDir+"/original_cvo_overrides.patch", 0o600, []byte(`{"spec":{"overrides":null}}`+"\n"))
	rel, err := json.MarshalIndent(a.Release, "", "  ")
	if err != nil {
		return nil, err
	}
	add(wire.ReleaseMetadataPath, 0o644, rel)

	// auth/: kubeconfigs with client certificates signed by the lab CA.
	admin, err := in.Issuer.Client(in.PKI.CA, "system:admin", []string{"system:masters"})
	if err != nil {
		return nil, err
	}
	kubelet, err := nodeBootstrapper(in)
	if err != nil {
		return nil, err
	}
	for _, k := range []struct {
		name, server, user string
		client             pki.Pair
	}{
		{"kubeconfig", apiURL, "admin", admin},
		{"kubeconfig-loopback", "https://localhost:6443", "loopback", admin},
		{"kubeconfig-kubelet", apiIntURL, "kubelet", kubelet},
	} {
		data, err := kubeconfig(a.ClusterName, k.server, k.user, in.PKI.CA.CertPEM, k.client)
		if err != nil {
			return nil, err
		}
		add(wire.AssetDir+"/auth/"+k.name, 0o600, data)
	}

	// /usr/local/bin: bootkube.sh and the helpers it sources.
	add(BinDir+"/release-image.sh", 0o555, []byte(releaseImageScript(a.Release)))
	add(BinDir+"/bootstrap-service-record.sh", 0o555, []byte(serviceRecordScript))
	add(BinDir+"/bootstrap-verify-api-server-urls.sh", 0o555, []byte(verifyAPIURLsScript))
	add(BinDir+"/bootkube.sh", 0o555, []byte(bootkubeScript))
	return files, nil
}

// installerManifests are the manifests/ and openshift/ files the installer
// renders for bootkube.sh, made for the lab.
func installerManifests(in Input, a AssetInput) ([]ignition.File, error) {
	domain := in.ClusterDomain
	var files []ignition.File
	add := func(p string, mode int, data []byte) {
		files = append(files, ignition.File{Path: p, Mode: mode, Data: data})
	}
	manifest := func(dir, name string, mode int, obj any) error {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		add(wire.AssetDir+"/"+dir+"/"+name, mode, data)
		return nil
	}
	meta := func(name, ns string) map[string]any {
		m := map[string]any{"name": name}
		if ns != "" {
			m["namespace"] = ns
		}
		return m
	}

	ic, err := installConfigYAML(in, a)
	if err != nil {
		return nil, err
	}
	apiURL, apiIntURL := "https://api."+domain+":6443", "https://api-int."+domain+":6443"
	for _, m := range []struct {
		dir, name string
		mode      int
		obj       any
	}{
		// The installer's own namespace manifest: the MCS TLS secret below
		// lives in it, and a real API refuses the secret without it.
		{"manifests", "04-openshift-machine-config-operator.yaml", 0o644, map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": "openshift-machine-config-operator",
				"annotations": map[string]string{"openshift.io/node-selector": ""}, "labels": map[string]string{"openshift.io/run-level": "1"}}}},
		{"manifests", "cluster-config.yaml", 0o644, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": meta("cluster-config-v1", "kube-system"), "data": map[string]string{"install-config": string(ic)}}},
		{"manifests", "cluster-infrastructure-02-config.yml", 0o644, map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
			"metadata": meta("cluster", ""),
			"spec":     map[string]any{"cloudConfig": map[string]any{"name": ""}, "platformSpec": map[string]any{"type": "None"}},
			"status": map[string]any{"apiServerURL": apiURL, "apiServerInternalURI": apiIntURL, "controlPlaneTopology": a.controlPlaneTopology(),
				"cpuPartitioning": "None", "etcdDiscoveryDomain": "", "infrastructureName": a.ClusterName + "-rehearsal",
				"infrastructureTopology": "HighlyAvailable", "platform": "None", "platformStatus": map[string]any{"type": "None"}}}},
		{"manifests", "cluster-network-02-config.yml", 0o644, map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "Network",
			"metadata": meta("cluster", ""),
			"spec":     map[string]any{"clusterNetwork": a.clusterNetwork(), "networkType": "OVNKubernetes", "serviceNetwork": a.serviceNetwork()}}},
		{"manifests", "cluster-dns-02-config.yml", 0o644, map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "DNS",
			"metadata": meta("cluster", ""), "spec": map[string]any{"baseDomain": domain}}},
		{"manifests", "cluster-ingress-02-config.yml", 0o644, map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "Ingress",
			"metadata": meta("cluster", ""), "spec": map[string]any{"domain": "apps." + domain}}},
		{"manifests", "cluster-proxy-01-config.yaml", 0o644, map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "Proxy",
			"metadata": meta("cluster", ""), "spec": map[string]any{}}},
		{"manifests", "cluster-scheduler-02-config.yml", 0o644, map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "Scheduler",
			"metadata": meta("cluster", ""), "spec": map[string]any{"mastersSchedulable": a.Workers == 0}}},
		// A rehearsal lab has no pull secret: nothing is pulled.
		{"manifests", "openshift-config-secret-pull-secret.yaml", 0o600, map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
			"metadata": meta("pull-secret", "openshift-config"),
			"data":     map[string]string{".dockerconfigjson": base64.StdEncoding.EncodeToString([]byte(`{"auths":{}}`))}}},
		{"manifests", "machine-config-server-tls-secret.yaml", 0o600, map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
			"metadata": meta("machine-config-server-tls", "openshift-machine-config-operator"),
			"data": map[string]string{"tls.crt": base64.StdEncoding.EncodeToString(in.PKI.MCS.CertPEM),
				"tls.key": base64.StdEncoding.EncodeToString(in.PKI.MCS.KeyPEM)}}},
		{"openshift", "99_feature-gate.yaml", 0o644, map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "FeatureGate",
			"metadata": meta("cluster", ""), "spec": map[string]any{}}},
		{"openshift", "99_openshift-machineconfig_99-master-ssh.yaml", 0o644, sshMachineConfig("master", in.SSHAuthorizedKey)},
		{"openshift", "99_openshift-machineconfig_99-worker-ssh.yaml", 0o644, sshMachineConfig("worker", in.SSHAuthorizedKey)},
	} {
		if err := manifest(m.dir, m.name, m.mode, m.obj); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// installConfigYAML is the install-config.yaml the installer keeps in
// kube-system/cluster-config-v1.
func installConfigYAML(in Input, a AssetInput) ([]byte, error) {
	installConfig := map[string]any{
		"apiVersion": "v1", "baseDomain": a.BaseDomain, "metadata": map[string]any{"name": a.ClusterName},
		"controlPlane": map[string]any{"name": "master", "replicas": a.Masters, "architecture": "amd64", "hyperthreading": "Enabled"},
		"compute":      []any{map[string]any{"name": "worker", "replicas": a.Workers, "architecture": "amd64", "hyperthreading": "Enabled"}},
		"networking": map[string]any{
			"networkType":    "OVNKubernetes",
			"clusterNetwork": a.clusterNetwork(),
			"machineNetwork": []any{map[string]any{"cidr": a.MachineCIDR}},
			"serviceNetwork": a.serviceNetwork(),
		},
		"platform": map[string]any{"none": map[string]any{}},
		"sshKey":   strings.TrimSpace(in.SSHAuthorizedKey),
	}
	return yaml.Marshal(installConfig)
}

func sshMachineConfig(role, key string) map[string]any {
	return map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": "99-" + role + "-ssh", "labels": map[string]string{"machineconfiguration.openshift.io/role": role}},
		"spec": map[string]any{"config": map[string]any{
			"ignition": map[string]any{"version": "3.2.0"},
			"passwd":   map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []string{strings.TrimSpace(key)}}}},
		}},
	}
}

// kubeconfig renders a one-context kubeconfig with embedded credentials.
// controlPlaneFiles are tls/'s files for the bootstrap control plane:
// ControlPlaneTLS's for a's service network, and the client CA bundle, the lab CA with the
// kubelet-signer, so the API trusts the kubelets' certificates the
// controller manager signs.
func controlPlaneFiles(in Input, a AssetInput) ([]ignition.File, error) {
	cpTLS, err := controlPlaneTLS(in.Issuer, in.PKI.CA, in.ClusterDomain, a.serviceNetwork()[0])
	if err != nil {
		return nil, err
	}
	var out []ignition.File
	bundle := append([]byte(nil), in.PKI.CA.CertPEM...)
	for _, f := range cpTLS {
		out = append(out, ignition.File{Path: wire.AssetDir + "/tls/" + f.Name, Mode: f.Mode, Data: f.Data})
		if f.Name == controlplane.KubeletSignerCert {
			bundle = append(bundle, f.Data...)
		}
	}
	return append(out, ignition.File{Path: wire.AssetDir + "/tls/" + controlplane.ClientCABundle, Mode: 0o644, Data: bundle}), nil
}

// nodeBootstrapper is the installer's kubelet bootstrap identity: the
// machine-config-operator's node-bootstrapper service account.
func nodeBootstrapper(in Input) (pki.Pair, error) {
	return in.Issuer.Client(in.PKI.CA, "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper",
		[]string{"system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator"})
}

// rehearsalMasterFiles are what a rehearsal master's served config adds
// for its kubelet stand-in's join: the bootstrap kubeconfig (api-int, the
// node-bootstrapper), as the MCO's rendered master config has it, the
// release metadata, for the kubelet version the Node reports, and the
// kube-apiserver installer stand-in's kubeconfig.
func rehearsalMasterFiles(in Input, a AssetInput) ([]ignition.File, error) {
	boot, err := nodeBootstrapper(in)
	if err != nil {
		return nil, err
	}
	kc, err := kubeconfig(a.ClusterName, "https://api-int."+in.ClusterDomain+":6443", "kubelet", in.PKI.CA.CertPEM, boot)
	if err != nil {
		return nil, err
	}
	rel, err := json.MarshalIndent(a.Release, "", "  ")
	if err != nil {
		return nil, err
	}
	op, err := kasOperatorKubeconfig(in, a)
	if err != nil {
		return nil, err
	}
	files := []ignition.File{{Path: wire.NodeBootstrapKubeconfigPath, Mode: 0o600, Data: kc}, {Path: wire.ReleaseMetadataPath, Mode: 0o644, Data: rel},
		{Path: wire.KASOperatorKubeconfigPath, Mode: 0o600, Data: op}}
	for _, o := range controlplane.MasterOperands() {
		if o.ClientUser() == "" {
			continue
		}
		pair, err := in.Issuer.Client(in.PKI.CA, o.ClientUser(), nil)
		if err != nil {
			return nil, err
		}
		files = append(files, ignition.File{Path: wire.OperandClientCertPath(string(o.Component)), Mode: 0o644, Data: pair.CertPEM},
			ignition.File{Path: wire.OperandClientKeyPath(string(o.Component)), Mode: 0o600, Data: pair.KeyPEM})
	}
	return files, nil
}

func kasOperatorKubeconfig(in Input, a AssetInput) ([]byte, error) {
	op, err := in.Issuer.Client(in.PKI.CA, "system:serviceaccount:openshift-kube-apiserver-operator:kube-apiserver-operator", []string{"system:masters"})
	if err != nil {
		return nil, err
	}
	return kubeconfig(a.ClusterName, "https://api-int."+in.ClusterDomain+":6443", "kube-apiserver-operator", in.PKI.CA.CertPEM, op)
}

func kubeconfig(cluster, server, user string, caPEM []byte, client pki.Pair) ([]byte, error) {
	b64 := base64.StdEncoding.EncodeToString
	return yaml.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Config", "preferences": map[string]any{},
		"clusters": []any{map[string]any{"name": cluster, "cluster": map[string]any{
			"server": server, "certificate-authority-data": b64(caPEM)}}},
		"users": []any{map[string]any{"name": user, "user": map[string]any{
			"client-certificate-data": b64(client.CertPEM), "client-key-data": b64(client.KeyPEM)}}},
		"contexts":        []any{map[string]any{"name": user, "context": map[string]any{"cluster": cluster, "user": user}}},
		"current-context": user,
	})
}

// releaseImageScript is /usr/local/bin/release-image.sh: the installer
// stamps the release pull spec into it; bootkube.sh sources it for
// RELEASE_IMAGE_DIGEST and image_for.
func releaseImageScript(r wire.RehearsalRelease) string {
	return `#!/usr/bin/env bash
# Stamped by bootlab for the rehearsal bootstrap, as the installer stamps
# it on a real one. Nothing is pulled here: podman on this node is a
# stand-in that answers from /etc/bootlab/release.json.
# shellcheck disable=SC2034
RELEASE_IMAGE_DIGEST=` + r.Image + `

image_for() {
    podman run --quiet --rm --net=none "${RELEASE_IMAGE_DIGEST}" image "${1}"
}
`
}

// serviceRecordScript is bootstrap-service-record.sh: the JSON progress
// records under /var/log/openshift that `openshift-install gather` reads.
const serviceRecordScript = `#!/usr/bin/env bash
# bootstrap-service-record.sh (bootlab's rendering for the rehearsal
# bootstrap): record_service_* write /var/log/openshift/<service>.json,
# one entry per service and stage start and end.
: "${SERVICE_RECORDS_DIR:=/var/log/openshift/}"
: "${SERVICE_NAME:=bootkube}"

add_service_record_entry() {
    local file="${SERVICE_RECORDS_DIR%/}/${SERVICE_NAME}.json"
    mkdir --parents "$(dirname "${file}")"
    { [ -f "${file}" ] && cat "${file}" || echo '[]'; } |
        jq --arg timestamp "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg stage "${STAGE_NAME-}" \
            --arg phase "${PHASE}" --arg result "${RESULT-}" \
            '. += [{$timestamp,$stage,$phase,$result} | with_entries(select(.value != ""))]' >"${file}.tmp"
    mv "${file}.tmp" "${file}"
}
record_service_start() { local PHASE="service start"; add_service_record_entry; }
record_service_stage_start() { local PHASE="stage start"; STAGE_NAME=${1}; add_service_record_entry; }
record_service_stage_end() { local PHASE="stage end" RESULT=${1}; add_service_record_entry; STAGE_NAME=""; }
record_service_stage_success() { record_service_stage_end success; }
record_service_stage_failure() { record_service_stage_end failure; }
record_service_exit() {
    local RESULT=success
    [ "${1}" -eq 0 ] || RESULT=failure
    [ -z "${STAGE_NAME-}" ] || record_service_stage_end "${RESULT}"
    local PHASE="service end"
    add_service_record_entry
}
record_service_start
trap 'record_service_exit $?' EXIT
`

// verifyAPIURLsScript is bootstrap-verify-api-server-urls.sh.
const verifyAPIURLsScript = `#!/usr/bin/env bash
# bootstrap-verify-api-server-urls.sh (bootlab's rendering for the
# rehearsal bootstrap): resolve_url and check_url, never fatal.
resolve_url() {
    if [ -n "$(dig "${2}" +short)" ]; then
        echo "Successfully resolved ${1} ${2}"
    else
        echo "Unable to resolve ${1} ${2}"
    fi
}
check_url() {
    local url="https://${2}:6443/readyz"
    if [ "$(curl -k --get --silent --output /dev/null --write-out '%{http_code}' "${url}")" = 200 ]; then
        echo "Success while trying to reach ${1}'s https endpoint at ${url}"
    else
        echo "Unable to reach ${1}'s https endpoint at ${url}"
    fi
}
`

// bootkubeScript is /usr/local/bin/bootkube.sh, shaped like the one the
// installer renders: it sources the helpers, then runs each step unless
// its /opt/openshift/<step>.done marker exists. On the rehearsal bootstrap
// bootkube.service does not exist: the learner runs the same steps with
// ` + "`bootlab stage run`" + `, whose scripts write the same markers.
const bootkubeScript = `#!/usr/bin/env bash
set -euoE pipefail ## -E option will cause functions to inherit trap

# shellcheck source=release-image.sh
. /usr/local/bin/release-image.sh
# shellcheck source=bootstrap-service-record.sh
. /usr/local/bin/bootstrap-service-record.sh
# shellcheck source=bootstrap-verify-api-server-urls.sh
. /usr/local/bin/bootstrap-verify-api-server-urls.sh

mkdir --parents /etc/kubernetes/{manifests,bootstrap-configs,bootstrap-manifests}

bootkube_podman_run() {
    podman run --quiet --net=host --rm "$@"
}

cd /opt/openshift

if [ ! -f openshift-manifests.done ]; then
    record_service_stage_start "openshift-manifests"
    echo "Moving OpenShift manifests in with the rest of them"
    cp openshift/* manifests/
    touch openshift-manifests.done
    record_service_stage_success
fi

# The rest of bootkube.sh, one block per step, each behind its marker:
#   api-bootstrap auth-api-bootstrap config-bootstrap cvo-bootstrap
#   etcd-bootstrap kube-apiserver-bootstrap kube-controller-manager-bootstrap
#   kube-scheduler-bootstrap ingress-operator-bootstrap node-tuning-bootstrap
#   mco-bootstrap cco-bootstrap cb-bootstrap cvo-overrides .bootkube.done
# On this rehearsal bootstrap they are run as bootlab's stages, which hold
# the same commands with their explanation:
#   bootlab stage list; bootlab stage explain NN; bootlab stage run NN
for step in api-bootstrap etcd-bootstrap mco-bootstrap cb-bootstrap; do
    if [ ! -f "${step}.done" ]; then
        echo "${step} has not run: drive it with bootlab stage run (bootlab stage status names the next stage)"
        exit 1
    fi
done
touch .bootkube.done
`

// ReleaseFor returns the rehearsal release of OpenShift version (x.y.z):
// its Kubernetes and etcd versions (lab/release) and a pull spec whose
// digest is derived from the version, so it is stable.
func ReleaseFor(version string) wire.RehearsalRelease {
	r := wire.RehearsalRelease{Version: version, KubernetesVersion: "unknown"}
	if pins, err := release.For(version); err == nil {
		r.KubernetesVersion = pins.Kubernetes
		r.EtcdVersion, r.EtcdShipped = pins.Etcd.Module, pins.Etcd.Shipped
	}
	sum := sha256.Sum256([]byte("bootlab rehearsal release " + version))
	r.Image = "quay.io/openshift-release-dev/ocp-release@sha256:" + hex.EncodeToString(sum[:])
	r.Components = map[string]string{}
	for _, c := range wire.ReleaseComponents {
		sum := sha256.Sum256([]byte("bootlab rehearsal release " + version + " " + c))
		r.Components[c] = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + hex.EncodeToString(sum[:])
	}
	return r
}

// controlPlaneTopology is the Infrastructure's, as the installer's
// determineTopologies sets it from controlPlane.replicas
// (pkg/asset/manifests/topologies.go): SingleReplica for one master,
// DualReplica for two, HighlyAvailable for three or more. progress.service's
// report-progress.sh waits for two kube-apiserver revisions only on a
// HighlyAvailable control plane.
func (a AssetInput) controlPlaneTopology() string {
	switch {
	case a.Masters == 1:
		return "SingleReplica"
	case a.Masters == 2:
		return "DualReplica"
	}
	return "HighlyAvailable"
}
