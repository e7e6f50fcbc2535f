#!/usr/bin/env bash
# bootlab stage 08 kube-apiserver-bootstrap (script render-kube-apiserver) for OpenShift 4.19.
# This is scripts/08-kube-apiserver-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
# settings filled in; bootlab writes it to /run/bootlab/stages on the node and runs it as root.
ASSET_DIR=/opt/openshift
OPENSHIFT_VERSION=4.19
API_URL=api.ocp.lab.local
API_INT_URL=api-int.ocp.lab.local
RELEASE_IMAGE=""
CLUSTER_PROFILE=""
BOOTLAB_FORCE=0
SERVICE_NAME=bootkube
IMAGES_FILE=/opt/openshift/bootlab-images.env

# ---- scripts/lib/bootkube.sh ----
# (scripts/lib/bootkube.sh, inlined verbatim without its #! line: checked by TestDryRunGolden)

# ---- scripts/08-kube-apiserver-bootstrap.sh ----
# Stage 08 kube-apiserver-bootstrap: render the bootstrap kube-apiserver
#
# The kube-apiserver operator renders the bootstrap API server pod (into
# bootstrap-manifests/: cluster-bootstrap starts it in stage 13), its config,
# and the namespaces, CA bundles and signers the API must hold.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

load_images

if stage_needed kube-apiserver-bootstrap; then
    record_service_stage_start "kube-apiserver-bootstrap"
    echo "Rendering Kubernetes API server core manifests..."
    rm --recursive --force kube-apiserver-bootstrap
    KAS_FLAGS=()
    if version_at_least 4.18; then
        KAS_FLAGS+=(--operand-kubernetes-version="${KUBERNETES_VERSION}")
    fi
    bootkube_podman_run \
        --name kube-apiserver-render \
        --volume "$PWD:/assets:z" \
        "${KUBE_APISERVER_OPERATOR_IMAGE}" \
        /usr/bin/cluster-kube-apiserver-operator render \
        --manifest-etcd-serving-ca=etcd-ca-bundle.crt \
        --manifest-etcd-server-urls="${ETCD_ENDPOINTS}" \
        --manifest-image="${OPENSHIFT_HYPERKUBE_IMAGE}" \
        --manifest-operator-image="${KUBE_APISERVER_OPERATOR_IMAGE}" \
        --asset-input-dir=/assets/tls \
        --asset-output-dir=/assets/kube-apiserver-bootstrap \
        --config-output-file=/assets/kube-apiserver-bootstrap/config \
        --cluster-config-file=/assets/manifests/cluster-network-02-config.yml \
        --cluster-auth-file=/assets/manifests/cluster-authentication-02-config.yaml \
        --infra-config-file=/assets/manifests/cluster-infrastructure-02-config.yml \
        --rendered-manifest-files=/assets/manifests \
        --payload-version="${VERSION}" \
        "${KAS_FLAGS[@]}"
    cp kube-apiserver-bootstrap/config /etc/kubernetes/bootstrap-configs/kube-apiserver-config.yaml
    cp kube-apiserver-bootstrap/bootstrap-manifests/* bootstrap-manifests/
    cp kube-apiserver-bootstrap/manifests/* manifests/
    mark_done kube-apiserver-bootstrap
    record_service_stage_success
fi
