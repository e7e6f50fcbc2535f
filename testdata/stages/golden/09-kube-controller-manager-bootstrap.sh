#!/usr/bin/env bash
# bootlab stage 09 kube-controller-manager-bootstrap (script render-kube-controller-manager) for OpenShift 4.19.
# This is scripts/09-kube-controller-manager-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/09-kube-controller-manager-bootstrap.sh ----
# Stage 09 kube-controller-manager-bootstrap: render the bootstrap controller manager
#
# One pod, two containers: kube-controller-manager and the
# cluster-policy-controller (configured by --cpc-config-output-file).
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

load_images

if stage_needed kube-controller-manager-bootstrap; then
    record_service_stage_start "kube-controller-manager-bootstrap"
    echo "Rendering Kubernetes Controller Manager core manifests..."
    rm --recursive --force kube-controller-manager-bootstrap
    bootkube_podman_run \
        --name kube-controller-render \
        --volume "$PWD:/assets:z" \
        "${KUBE_CONTROLLER_MANAGER_OPERATOR_IMAGE}" \
        /usr/bin/cluster-kube-controller-manager-operator render \
        --cluster-policy-controller-image="${OPENSHIFT_CLUSTER_POLICY_IMAGE}" \
        --manifest-image="${OPENSHIFT_HYPERKUBE_IMAGE}" \
        --asset-input-dir=/assets/tls \
        --asset-output-dir=/assets/kube-controller-manager-bootstrap \
        --config-output-file=/assets/kube-controller-manager-bootstrap/config \
        --cpc-config-output-file=/assets/kube-controller-manager-bootstrap/cpc-config \
        --cluster-config-file=/assets/manifests/cluster-network-02-config.yml \
        --rendered-manifest-files=/assets/manifests \
        --payload-version="${VERSION}"
    cp kube-controller-manager-bootstrap/config /etc/kubernetes/bootstrap-configs/kube-controller-manager-config.yaml
    cp kube-controller-manager-bootstrap/cpc-config /etc/kubernetes/bootstrap-configs/cluster-policy-controller-config.yaml
    cp kube-controller-manager-bootstrap/bootstrap-manifests/* bootstrap-manifests/
    cp kube-controller-manager-bootstrap/manifests/* manifests/
    # The service account signing key pair, when the operator renders it.
    if [ -d kube-controller-manager-bootstrap/tls ]; then
        cp kube-controller-manager-bootstrap/tls/* tls/
    fi
    mark_done kube-controller-manager-bootstrap
    record_service_stage_success
fi
